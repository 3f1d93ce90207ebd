package responses_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
	"github.com/detourhq/detour/wire/responses"
)

// readBody reads testdata/bodies/name (sources in testdata/streams/README.md).
func readBody(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "bodies", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonResponse is a response of status with a JSON body.
func jsonResponse(status int, body string, kv ...string) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader([]byte(body)))}
}

// The recorded whole answers: the message's text (the reasoning summary
// left out), a function call, usage with reasoning tokens, and the
// provider's request id.
func TestDecodeResponse_RecordedAnswers(t *testing.T) {
	for _, tc := range []struct {
		file string
		want *llm.Response
	}{
		{"gpt5mini_text.json", &llm.Response{ID: "resp_68b4f15ca9d08196800f192065e211b00152521ae9a59cfd", Model: "gpt-5-mini-2025-08-07",
			Message: llm.Message{Role: llm.RoleAssistant, Content: "Hello"}, FinishReason: llm.FinishStop,
			Usage: llm.Usage{InputTokens: 14, OutputTokens: 71, ReasoningTokens: 64}, ProviderRequestID: "req_1"}},
		{"gpt5mini_tool.json", &llm.Response{ID: "resp_68b4f164502481948d09fc09d53fba4d08e124d897980fca", Model: "gpt-5-mini-2025-08-07",
			Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_NinSU6jQUF1sOfoGNVCQGfr3", Name: "square_root", Arguments: `{"number":132413}`}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 73, OutputTokens: 149, ReasoningTokens: 128},
			ProviderRequestID: "req_1"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := responses.DecodeResponse(jsonResponse(200, string(readBody(t, tc.file)), "X-Request-Id", "req_1",
				"X-Ratelimit-Remaining-Requests", "499"))
			if err != nil {
				t.Fatal(err)
			}
			if got.RateLimit == nil || got.RateLimit.RemainingRequests != 499 {
				t.Errorf("RateLimit %+v, want the header's", got.RateLimit)
			}
			got.RateLimit = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// A 200 body that stands for a failure is one: a failed response carries
// its error code to classify, a response incomplete by the content filter
// is a policy refusal, and one incomplete at max_output_tokens is an
// answer cut at its cap.
func TestDecodeResponse_ABodyThatIsAFailure(t *testing.T) {
	now := time.Now()
	failed := func(code, msg string) string {
		return `{"id":"resp_1","object":"response","status":"failed","model":"gpt-5","output":[],"error":{"code":"` + code + `","message":"` + msg + `"},"incomplete_details":null,"usage":null}`
	}
	for _, tc := range []struct {
		name, body string
		kind       classify.Kind
		code       string
	}{
		{"failed server_error", failed("server_error", "The server had an error."), classify.Transient, "server_error"},
		{"failed rate_limit_exceeded", failed("rate_limit_exceeded", "Rate limit reached for gpt-5 on requests per min (RPM): Limit 500. Please try again in 1s."), classify.Transient, "rate_limit_exceeded"},
		{"failed invalid_prompt", failed("invalid_prompt", "Invalid prompt: your prompt was flagged as potentially violating our usage policy."), classify.Policy, "invalid_prompt"},
		{"failed bio_policy", failed("bio_policy", "blocked"), classify.Policy, "bio_policy"},
		{"failed image_content_policy_violation", failed("image_content_policy_violation", "flagged"), classify.Policy, "image_content_policy_violation"},
		{"failed invalid_image_url", failed("invalid_image_url", "Timeout while downloading https://x.test/a.png."), classify.Invalid, "invalid_image_url"},
		{"incomplete content_filter", `{"id":"resp_1","object":"response","status":"incomplete","model":"gpt-5","output":[],"error":null,"incomplete_details":{"reason":"content_filter"}}`,
			classify.Policy, "content_filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := responses.DecodeResponse(jsonResponse(200, tc.body))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Status != 200 || pe.Dialect != responses.Dialect {
				t.Fatalf("err = %#v, want a ProviderError of code %s", err, tc.code)
			}
			if f := classify.Classify(err, now); f.Kind != tc.kind {
				t.Errorf("classify = %s (%s), want %s", f.Kind, f.Reason, tc.kind)
			}
		})
	}
	r, err := responses.DecodeResponse(jsonResponse(200, `{"id":"resp_2","object":"response","status":"incomplete","model":"gpt-5","error":null,"incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The theory"}]}],"usage":{"input_tokens":9,"output_tokens":16}}`))
	if err != nil || r.FinishReason != llm.FinishLength || r.Message.Content != "The theory" || r.Usage.OutputTokens != 16 {
		t.Errorf("incomplete at max_output_tokens = %+v, %v; want an answer cut at its cap", r, err)
	}
	r, err = responses.DecodeResponse(jsonResponse(200, `{"id":"resp_3","object":"response","status":"completed","model":"gpt-5","output":[{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}]}`))
	if err != nil || r.Message.Content != "I can't help with that." || r.FinishReason != llm.FinishStop {
		t.Errorf("a refusal part = %+v, %v; want its words as content (as chat completions carries them)", r, err)
	}
	if _, err := responses.DecodeResponse(jsonResponse(200, `{"id":`)); !errors.Is(err, responses.ErrMalformed) {
		t.Errorf("a cut body = %v, want ErrMalformed", err)
	}
}

// Error statuses are read from OpenAI's envelope, in which the Responses
// API answers, and classified by the tables every dialect shares.
func TestDecodeResponse_ErrorStatuses(t *testing.T) {
	now := time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		kv     []string
		kind   classify.Kind
		code   string
	}{
		{
			// testdata/errors corpus openai-responses-400-model-does-not-exist
			// (recorded on /v1/responses by maruel/genai).
			name: "400 model_not_found", status: 400, kind: classify.Wall, code: "model_not_found",
			body: "{\n  \"error\": {\n    \"message\": \"The requested model 'bad model' does not exist.\",\n    \"type\": \"invalid_request_error\",\n    \"param\": \"model\",\n    \"code\": \"model_not_found\"\n  }\n}",
		},
		{
			// OpenAI's rate-limit envelope (testdata/errors sample
			// openai-429-*), with its retry headers.
			name: "429 rate_limit_exceeded", status: 429, kind: classify.Transient, code: "rate_limit_exceeded",
			body: `{"error":{"message":"Rate limit reached for gpt-5 in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			kv:   []string{"Retry-After", "1"},
		},
		{
			// sample openai-429-insufficient-quota.
			name: "429 insufficient_quota", status: 429, kind: classify.Wall, code: "insufficient_quota",
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		},
		{
			name: "400 context_length_exceeded", status: 400, kind: classify.ContextOverflow, code: "context_length_exceeded",
			body: `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
		},
		{
			name: "400 invalid_prompt", status: 400, kind: classify.Policy, code: "invalid_prompt",
			body: `{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy.","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}`,
		},
		{
			name: "400 unsupported_parameter", status: 400, kind: classify.Invalid, code: "unsupported_parameter",
			body: `{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}`,
		},
		{
			name: "500 server_error", status: 500, kind: classify.Transient, code: "server_error",
			body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":"server_error"}}`,
		},
		{
			name: "502 HTML page", status: 502, kind: classify.Transient,
			body: `<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := responses.DecodeResponse(jsonResponse(tc.status, tc.body, tc.kv...))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != tc.status || pe.Code != tc.code || pe.Phase != llm.PhaseResponse || pe.Message == "" {
				t.Fatalf("err = %#v", err)
			}
			if f := classify.Classify(err, now); f.Kind != tc.kind {
				t.Errorf("classify = %s (%s), want %s", f.Kind, f.Reason, tc.kind)
			}
		})
	}
}

// The answer's id and model are strings of their own, not views of the
// body.
func TestDecodeResponse_IDAndModelOutliveTheBody(t *testing.T) {
	body := readBody(t, "gpt5mini_text.json")
	wiretest.IDAndModelOutliveTheBody(t, func(b []byte) (*llm.Response, error) {
		return responses.DecodeResponse(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(b))})
	}, body, "resp_68b4f15ca9d08196800f192065e211b00152521ae9a59cfd", "gpt-5-mini-2025-08-07")
}
