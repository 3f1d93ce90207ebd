package anthropic

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// Error bodies, each with its source.
const (
	// maruel/genai recording providers/anthropic/testdata/TestClient/errors/
	// bad_apiKey/GenStream.yaml (commit 600fce781688f0c38e58e60ad7968ef8e668886b),
	// with x-should-retry: false.
	body401 = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CXtrhKydjvSnjbWWZm6BB"}`
	// Same recordings, errors/bad_model/GenSync.yaml.
	body404 = `{"type":"error","error":{"type":"not_found_error","message":"model: bad model"},"request_id":"req_011CXtrhLZ7agybPxEHj1Z4Q"}`
	// Sample anthropic-429-with-ratelimit-headers (testdata/errors/sample.jsonl).
	body429 = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization (00000000-0000-0000-0000-000000000000) of 80,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://claude.com/contact-sales to discuss your options for a rate limit increase."},"request_id":"req_x"}`
	// Tier spend cap: platform.claude.com/docs/en/api/rate-limits example,
	// as quoted with its request_id in public test code (PROVIDERS.md,
	// Anthropic (a)); no retry-after.
	bodySpendCap = `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}`
	// anthropics/claude-code#5184 (PROVIDERS.md, Anthropic).
	body529 = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	// PROVIDERS.md, Anthropic: the 413 from Cloudflare, no outer type, no request_id.
	body413 = `{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`
	// A Cloudflare 413 page (nginx-style, as Cloudflare serves it); RECONSTRUCTED.
	body413HTML = "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
	// Anthropic errors docs: 500 api_error; SDK default message.
	body500 = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CUhQ4VfMHq4uwsBY6u5Dh"}`
)

func TestParseError(t *testing.T) {
	hdr := http.Header{"X-Should-Retry": {"false"}, "Request-Id": {"req_011CXtrhKydjvSnjbWWZm6BB"}}
	tests := []struct {
		name   string
		status int
		body   string
		want   fields
	}{
		{"401 authentication_error", 401, body401, fields{"authentication_error", "", "invalid x-api-key"}},
		{"404 not_found_error", 404, body404, fields{"not_found_error", "", "model: bad model"}},
		{"429 rate_limit_error", 429, body429, fields{"rate_limit_error", "", "This request would exceed the rate limit for your organization (00000000-0000-0000-0000-000000000000) of 80,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://claude.com/contact-sales to discuss your options for a rate limit increase."}},
		{"429 spend cap details.error_code", 429, bodySpendCap, fields{"rate_limit_error", "enforced_spend_limit_reached", "You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC."}},
		{"529 overloaded_error", 529, body529, fields{"overloaded_error", "", "Overloaded"}},
		{"413 without the outer type", 413, body413, fields{"request_too_large", "", "Request exceeds the maximum size"}},
		{"413 Cloudflare HTML", 413, body413HTML, fields{"", "", "413 Request Entity Too Large"}},
		{"413 plain text", 413, "Request Entity Too Large\n", fields{"", "", "Request Entity Too Large"}},
		{"500 api_error", 500, body500, fields{"api_error", "", "Internal server error"}},
		{"502 empty body", 502, "", fields{}},
		{"pretty-printed", 400, "{\n  \"type\": \"error\",\n  \"error\": {\n    \"type\": \"invalid_request_error\",\n    \"message\": \"max_tokens: Field required\"\n  }\n}\n", fields{"invalid_request_error", "", "max_tokens: Field required"}},
		{"error as a string", 503, `{"error":"upstream connect error"}`, fields{"", "", "upstream connect error"}},
		{"no wrapper", 529, `{"type":"overloaded_error","message":"Overloaded"}`, fields{"overloaded_error", "", "Overloaded"}},
		{"OpenAI-compatible shape", 429, `{"error":{"code":"rate_limit_error","message":"slow down","type":"invalid_request_error","param":null}}`, fields{"invalid_request_error", "rate_limit_error", "slow down"}},
		{"numeric code", 429, `{"error":{"code":1302,"message":"rate limited"}}`, fields{"", "1302", "rate limited"}},
		{"wrapped twice", 500, `{"error":{"error":{"type":"api_error","message":"boom"}}}`, fields{"api_error", "", "boom"}},
		{"array", 529, `[` + body529 + `]`, fields{"overloaded_error", "", "Overloaded"}},
		{"SSE framed", 529, "event: error\ndata: " + body529 + "\n\n", fields{"overloaded_error", "", "Overloaded"}},
		{"JSON without error fields", 418, `{"teapot":true}`, fields{}},
		{"200 refusal", 200, refusalJSON, fields{"refusal", "refusal", "the model refused to answer (bio): Refused under the usage policy."}},
		{"200 refusal without details", 200, `{"type":"message","stop_reason":"refusal","content":[]}`, fields{"refusal", "refusal", "the model refused to answer"}},
		{"200 answer", 200, haikuTextJSON, fields{}},
		{"200 error body", 200, body529, fields{"overloaded_error", "", "Overloaded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ParseError(tt.status, hdr, []byte(tt.body))
			if e.Dialect != "anthropic" || e.Status != tt.status || e.Phase != llm.PhaseResponse || e.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("ProviderError = %+v", e)
			}
			if string(e.Body) != tt.body {
				t.Errorf("Body = %q, want the body", e.Body)
			}
			if diff := cmp.Diff(tt.want, fields{e.Type, e.Code, e.Message}); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// fields are the discriminating fields of a ProviderError.
type fields struct{ Type, Code, Message string }

func TestParseError_CutsBodyAndMessage(t *testing.T) {
	long := strings.Repeat("x", MaxErrorBody*2)
	e := ParseError(500, nil, []byte(long))
	if len(e.Body) != MaxErrorBody {
		t.Errorf("len(Body) = %d, want %d", len(e.Body), MaxErrorBody)
	}
	if n := len([]rune(e.Message)); n != exchange.MaxErrorText || !strings.HasSuffix(e.Message, "…") {
		t.Errorf("Message has %d runes: %q…", n, e.Message[:20])
	}
	body := []byte(body529)
	e = ParseError(529, nil, body)
	body[0] = 'X'
	if e.Body[0] != '{' {
		t.Error("Body aliases the caller's slice")
	}
}

func TestParseStreamError(t *testing.T) {
	tests := []struct {
		name string
		data string
		ok   bool
		want fields
	}{
		{"docs overloaded", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`, true, fields{"overloaded_error", "", "Overloaded"}},
		{"api_error with request id", `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_1"}`, true, fields{"api_error", "", "Internal server error"}},
		{"error string", ` {"error":"boom"} `, true, fields{"", "", "boom"}},
		{"ping", `{"type": "ping"}`, false, fields{}},
		{"error null", `{"type":"error","error":null}`, false, fields{}},
		{"error empty", `{"type":"error","error":{}}`, false, fields{}},
		{"array", `[{"error":{"type":"x"}}]`, false, fields{}},
		{"not JSON", `Overloaded`, false, fields{}},
		{"empty", ``, false, fields{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := ParseStreamError([]byte(tt.data))
			if ok != tt.ok || (e != nil) != ok {
				t.Fatalf("ParseStreamError = %v, %v; want ok %v", e, ok, tt.ok)
			}
			if !ok {
				return
			}
			if e.Status != 200 || e.Phase != llm.PhaseStream || e.Dialect != "anthropic" || !bytes.Equal(e.Body, bytes.TrimSpace([]byte(tt.data))) {
				t.Errorf("ProviderError = %+v", e)
			}
			if diff := cmp.Diff(tt.want, fields{e.Type, e.Code, e.Message}); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}
