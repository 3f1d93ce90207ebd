package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// explain --provider openai-responses (the dialect, or the preset of that
// name) reads a Responses API body or stream with its own decoder: the
// failure shapes of a 200 stream get the kinds the router gives them, and a
// response cut at max_output_tokens is an answer, not a failure. Streams
// from wire/responses/testdata (sources in its README).
func TestExplain_ResponsesDialect(t *testing.T) {
	stream := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "wire", "responses", "testdata", "streams", name))
		if err != nil {
			t.Fatal(err)
		}
		return "HTTP/2 200\r\ncontent-type: text/event-stream; charset=utf-8\r\nx-request-id: req_73e278096bb5145fa765436986ef8c1f\r\n\r\n" + string(b)
	}
	for _, tc := range []struct {
		name, raw, kind, status string
	}{
		{"response.failed rate_limit_exceeded", stream("failed_rate_limit.sse"), "transient", "stream_error"},
		{"response.failed bio_policy", stream("failed_bio_policy.sse"), "policy", "stream_error"},
		{"response.failed vector_store_timeout", stream("failed_vector_store_timeout.sse"), "transient", "stream_error"},
		{"error event", stream("error_event.sse"), "transient", "stream_error"},
		{"incomplete by the content filter", stream("incomplete_content_filter.sse"), "policy", "stream_error"},
		{"incomplete at max_output_tokens", stream("gpt5mini_max_tokens.sse"), "", "ok"},
		{"a whole answer", stream("gpt41_text.sse"), "", "ok"},
		{"429 in OpenAI's envelope", "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\r\n" +
			`{"error":{"message":"Rate limit reached for gpt-5-pro on requests per min (RPM): Limit 5. Please try again in 20s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			"transient", "http_429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, provider := range []string{"openai-responses"} {
				code, out, errOut := run(t, nil, tc.raw, "explain", "--provider", provider, "--json")
				if code != ExitOK {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				var got struct {
					Kind   string `json:"kind"`
					Status string `json:"status"`
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if got.Kind != tc.kind || got.Status != tc.status {
					t.Errorf("--provider %s: kind %q status %q, want %q %q\n%s", provider, got.Kind, got.Status, tc.kind, tc.status, out)
				}
			}
		})
	}
}
