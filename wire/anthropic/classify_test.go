package anthropic_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/anthropic"
)

// now is the instant the sample's Anthropic rate-limit headers were
// captured (sample anthropic-429-with-ratelimit-headers): their resets lie
// ahead of it.
var now = time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)

// hdr builds a header from name, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// envelope is Anthropic's error body for type and message.
func envelope(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
	return string(b)
}

// classifyCase is one failure as the wire sends it and what classify must
// make of it.
type classifyCase struct {
	name   string
	status int
	header http.Header
	body   string
	kind   classify.Kind
	// wait is the RetryAfter wanted; until, when set, the Until wanted.
	wait  time.Duration
	until time.Time
	// reason, when set, must appear in the Reason.
	reason string
}

// The statements each case relies on are sourced in its comment;
// "P:" is /work/shared/errors/PROVIDERS.md, section Anthropic.
var responseCases = []classifyCase{
	// Transient.
	{
		// Sample anthropic-429-with-ratelimit-headers: retry-after 20 and
		// the exhausted token buckets resetting 20 s later.
		name: "429 rate_limit_error with retry-after and resets", status: 429,
		header: hdr("Retry-After", "20", "X-Should-Retry", "true",
			"Anthropic-Ratelimit-Requests-Remaining", "998", "Anthropic-Ratelimit-Requests-Reset", "2025-08-21T12:40:59Z",
			"Anthropic-Ratelimit-Input-Tokens-Remaining", "0", "Anthropic-Ratelimit-Input-Tokens-Reset", "2025-08-21T12:41:19Z",
			"Anthropic-Ratelimit-Tokens-Remaining", "0", "Anthropic-Ratelimit-Tokens-Reset", "2025-08-21T12:41:19Z"),
		body: envelope("rate_limit_error", "This request would exceed the rate limit for your organization (00000000-0000-0000-0000-000000000000) of 80,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."),
		kind: classify.Transient, wait: 20 * time.Second, until: now.Add(20 * time.Second),
	},
	{
		// Same, without retry-after: the RFC 3339 reset of the exhausted
		// bucket is the wait (P: rate-limit headers, RFC 3339 resets).
		name: "429 rate_limit_error with only an anthropic-ratelimit reset", status: 429,
		header: hdr("Anthropic-Ratelimit-Output-Tokens-Remaining", "0", "Anthropic-Ratelimit-Output-Tokens-Reset", "2025-08-21T12:41:04Z"),
		body:   envelope("rate_limit_error", "This request would exceed your organization's rate limit of 16,000 output tokens per minute."),
		kind:   classify.Transient, wait: 5 * time.Second,
	},
	{
		// Sample anthropic-429-itpm-rate-limit (OpenHands/OpenHands#9259):
		// no retry hint at all.
		name: "429 rate_limit_error without hints", status: 429,
		body: envelope("rate_limit_error", "This request would exceed the rate limit for your organization of 20,000 input tokens per minute."),
		kind: classify.Transient,
	},
	{
		// anthropics/claude-code#5184 (P: Overloaded).
		name: "529 overloaded_error", status: 529, body: envelope("overloaded_error", "Overloaded"),
		kind: classify.Transient,
	},
	{
		// Anthropic errors docs: 500 api_error.
		name: "500 api_error", status: 500, body: envelope("api_error", "Internal server error"),
		kind: classify.Transient,
	},
	{
		// Anthropic errors docs: 504 timeout_error.
		name: "504 timeout_error", status: 504, body: envelope("timeout_error", "Request timed out"),
		kind: classify.Transient,
	},

	// Wall: waits too long to be a hiccup.
	{
		// A rate-limit bucket at 0 whose RFC 3339 reset is hours away
		// (P: WALL "remaining=0 until a far reset"), even though
		// retry-after names a short wait.
		name: "429 remaining 0 with a far reset", status: 429,
		header: hdr("Retry-After", "20",
			"Anthropic-Ratelimit-Tokens-Remaining", "0", "Anthropic-Ratelimit-Tokens-Reset", "2025-08-21T15:40:59Z"),
		body: envelope("rate_limit_error", "This request would exceed the rate limit for your organization of 80,000 input tokens per minute."),
		kind: classify.Wall, wait: 20 * time.Second, until: now.Add(3 * time.Hour), reason: "resets in 3h",
	},
	{
		// retry-after beyond a minute (P: WALL "Retry-After ... beyond ~60 s").
		name: "429 with a long retry-after", status: 429, header: hdr("Retry-After", "3600"),
		body: envelope("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
		kind: classify.Wall, wait: time.Hour,
	},

	// Wall: billing, spend and credit.
	{
		// Tier spend cap: 429 with details.error_code and no retry-after
		// (P: (a); platform.claude.com/docs/en/api/rate-limits).
		name: "429 enforced_spend_limit_reached", status: 429,
		body: `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}`,
		kind: classify.Wall, until: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), reason: "spend limit reached",
	},
	{
		// Sample anthropic-400-user-spend-limit (anthropics/claude-code#38035).
		name: "400 specified API usage limits", status: 400,
		body: `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."},"request_id":"req_011CZLrUfBVkVHn5T6EqQaf7"}`,
		kind: classify.Wall, until: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC),
	},
	{
		// Sample anthropic-400-credit-balance-too-low (anthropics/claude-code#66314).
		name: "400 credit balance is too low", status: 400,
		body: `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CbrFTcXhtiMzr3s6EocF7"}`,
		kind: classify.Wall, reason: "credit balance too low",
	},
	{
		// Sample anthropic-402-billing-error (Anthropic errors docs).
		name: "402 billing_error", status: 402, body: `{"type":"error","error":{"type":"billing_error","message":"Billing error"},"request_id":"req_x"}`,
		kind: classify.Wall,
	},
	{
		// Long-context entitlement (P: (d); anthropics/claude-code#33514).
		name: "429 extra usage required", status: 429, header: hdr("Retry-After", "5"),
		body: envelope("rate_limit_error", "Extra usage is required for long context requests."),
		kind: classify.Wall,
	},

	// Wall: the key and the model.
	{
		// maruel/genai recording errors/bad_apiKey/GenStream.yaml.
		name: "401 authentication_error", status: 401, header: hdr("X-Should-Retry", "false"),
		body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CXtrhKydjvSnjbWWZm6BB"}`,
		kind: classify.Wall,
	},
	{
		// Anthropic errors docs: 403 permission_error.
		name: "403 permission_error", status: 403,
		body: envelope("permission_error", "Your API key does not have permission to use the specified resource."),
		kind: classify.Wall,
	},
	{
		// maruel/genai recording errors/bad_model/GenSync.yaml.
		name: "404 not_found_error", status: 404, header: hdr("X-Should-Retry", "false"),
		body: `{"type":"error","error":{"type":"not_found_error","message":"model: bad model"},"request_id":"req_011CXtrhLZ7agybPxEHj1Z4Q"}`,
		kind: classify.Wall,
	},

	// Invalid.
	{
		// Anthropic errors docs: 400 invalid_request_error; message as the
		// API words a missing field.
		name: "400 invalid_request_error", status: 400, header: hdr("X-Should-Retry", "false"),
		body: envelope("invalid_request_error", "max_tokens: Field required"),
		kind: classify.Invalid,
	},
	{
		// The Messages API's tool-result ordering rule (tool use docs).
		name: "400 tool_result ordering", status: 400,
		body: envelope("invalid_request_error", "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next message."),
		kind: classify.Invalid,
	},

	// Context overflow.
	{
		// Sample anthropic-400-prompt-too-long (anthropics/claude-code#12186).
		name: "400 prompt is too long", status: 400,
		body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CVQe1dLrGNMJyE1ghG1av"}`,
		kind: classify.ContextOverflow,
	},
	{
		// P: Overflow, the 413 from Cloudflare (32 MB Messages limit).
		// Decision (P: §3.8): context_overflow, since only a smaller
		// request (fewer or smaller attachments) can pass; invalid would
		// fail closed where an adaptation could still succeed.
		name: "413 request_too_large", status: 413,
		body: `{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`,
		kind: classify.ContextOverflow,
	},
	{
		// The same limit when Cloudflare answers with its own page
		// (RECONSTRUCTED body).
		name: "413 Cloudflare HTML", status: 413, header: hdr("Content-Type", "text/html", "Server", "cloudflare"),
		body: "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n",
		kind: classify.ContextOverflow,
	},
}

func TestClassify_ResponseErrors(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			h.Set("Content-Type", h.Get("Content-Type")+"application/json")
			resp := &http.Response{StatusCode: tc.status, Header: h, Body: io.NopCloser(strings.NewReader(tc.body))}
			_, err := anthropic.DecodeResponse(resp)
			check(t, tc, err)
		})
	}
}

func TestClassify_StreamAndRefusals(t *testing.T) {
	overloaded := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n"
	apiError := strings.Replace(overloaded, `{"type": "overloaded_error", "message": "Overloaded"}`, `{"type":"api_error","message":"Internal server error"}`, 1)
	tests := []struct {
		classifyCase
		stream bool
	}{
		// Anthropic streaming docs, error events (P: Overloaded: "also
		// arrives mid-stream on a 200 as event: error").
		{classifyCase{name: "stream overloaded_error", body: overloaded, kind: classify.Transient, reason: "stream error: model overloaded"}, true},
		{classifyCase{name: "stream api_error", body: apiError, kind: classify.Transient}, true},
		{classifyCase{name: "stream cut before message_stop", body: overloaded[:strings.Index(overloaded, "event: error")], kind: classify.Transient}, true},
		// anthropic-sdk-go message.go: stop_reason refusal, stop_details
		// (P: Policy); body RECONSTRUCTED around it.
		{classifyCase{name: "200 refusal", body: `{"id":"msg_01Ref","type":"message","role":"assistant","model":"claude-opus-4-7","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"This request was refused due to policy."},"usage":{"input_tokens":20,"output_tokens":1}}`, kind: classify.Policy, reason: "the model refused"}, false},
		// anthropic-sdk-python tests/lib/streaming/fixtures/refusal_response.txt,
		// read as a captured stream.
		{classifyCase{name: "captured stream refusal", body: string(readFixture(t, "refusal.sse")), kind: classify.Policy}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct := "application/json"
			if strings.HasPrefix(tc.body, "event:") {
				ct = "text/event-stream"
			}
			resp := &http.Response{StatusCode: 200, Header: hdr("Content-Type", ct), Body: io.NopCloser(strings.NewReader(tc.body))}
			var err error
			if tc.stream {
				var st llm.Stream
				if st, err = anthropic.DecodeStream(resp); err == nil {
					for err == nil {
						_, err = st.Next()
					}
					st.Close()
				}
			} else {
				_, err = anthropic.DecodeResponse(resp)
			}
			check(t, tc.classifyCase, err)
		})
	}
}

// check classifies err and compares it with the case.
func check(t *testing.T, tc classifyCase, err error) {
	t.Helper()
	if err == nil || err == io.EOF {
		t.Fatalf("err = %v, want a failure", err)
	}
	f := classify.Classify(err, now)
	t.Logf("%s %s code=%q wait=%v until=%v: %s", f.Kind, f.Status, f.Code, f.RetryAfter, f.Until, f.Reason)
	if f.Kind != tc.kind {
		t.Errorf("Kind = %s, want %s (reason %q)", f.Kind, tc.kind, f.Reason)
	}
	if tc.wait != 0 && f.RetryAfter != tc.wait {
		t.Errorf("RetryAfter = %v, want %v", f.RetryAfter, tc.wait)
	}
	if !tc.until.IsZero() && !f.Until.Equal(tc.until) {
		t.Errorf("Until = %v, want %v", f.Until, tc.until)
	}
	if tc.reason != "" && !strings.Contains(f.Reason, tc.reason) {
		t.Errorf("Reason = %q, want it to contain %q", f.Reason, tc.reason)
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClassify_Sample reads every Anthropic case of the shared corpus
// (testdata/errors/sample.jsonl) through ParseError or ParseStreamError and
// checks the kind and wait classify gives.
func TestClassify_Sample(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "errors", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]classify.Kind{"TRANSIENT": classify.Transient, "WALL": classify.Wall, "INVALID": classify.Invalid,
		"CONTEXT_OVERFLOW": classify.ContextOverflow, "POLICY": classify.Policy, "UNKNOWN": classify.Unknown}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			ID          string            `json:"id"`
			Provider    string            `json:"provider"`
			Status      *int              `json:"status"`
			Headers     map[string]string `json:"headers"`
			Body        string            `json:"body"`
			Phase       string            `json:"phase"`
			Expect      string            `json:"expect"`
			RetryAfterS *float64          `json:"retry_after_s"`
			Source      string            `json:"source"`
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Provider != "anthropic" || c.Status == nil {
			continue
		}
		n++
		t.Run(c.ID, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.Headers {
				h.Set(k, v)
			}
			var e error = anthropic.ParseError(*c.Status, h, []byte(c.Body))
			if c.Phase == "stream" {
				pe, ok := anthropic.ParseStreamError([]byte(c.Body))
				if !ok {
					t.Fatalf("ParseStreamError(%q) found no error", c.Body)
				}
				e = pe
			}
			got := classify.Classify(fmt.Errorf("attempt 1: %w", e), now)
			if got.Kind != kinds[c.Expect] {
				t.Errorf("Kind = %s, want %s (reason %q; source %s)", got.Kind, c.Expect, got.Reason, c.Source)
			}
			if c.RetryAfterS != nil {
				if want := time.Duration(math.Round(*c.RetryAfterS * 1e9)); got.RetryAfter != want {
					t.Errorf("RetryAfter = %v, want %v", got.RetryAfter, want)
				}
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Anthropic case in the sample")
	}
}
