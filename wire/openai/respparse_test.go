package openai

import (
	"testing"

	"github.com/detourhq/detour/internal/jsonscan/scantest"
)

// FuzzResponseDecodeMatchesJSON checks the fast response parser against
// encoding/json: whenever parseResponseFast accepts a body, json.Unmarshal
// must accept it too and give the same chatResponse.
func FuzzResponseDecodeMatchesJSON(f *testing.F) {
	for _, s := range []string{
		completionJSON, toolCallJSON, contentFilterJSON, `{}`, `{"choices":[]}`, `{"choices":null,"usage":null}`,
		`{"id":"a","id":"b"}`, `{"ID":"x"}`, `{"error":{"message":"x"}}`, `{"choices":[{"error":{"code":1}}]}`,
		`{"choices":[null,{"index":1,"message":null}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"a"}]}}]}`,
		`{"choices":[{"message":{"role":"assistant","content":"a\u00e9\ud800\n","refusal":"no","annotations":[{"type":"url_citation"}],"tool_calls":[]}}]}`,
		`{"choices":[{"message":{"tool_calls":[null,{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
		`{"choices":[{"message":{"function_call":{"name":"f","arguments":"{}"},"tool_calls":null}}]}`,
		`{"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11,"completion_tokens_details":{"reasoning_tokens":0}}}`,
		"{\"model\":\"\xff\"}", `{"model":"m"} x`, `{"created":1e999}`, `{"choices":[{"logprobs":{"content":[{"token":"a","logprob":-0.1}]}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		scantest.Check(t, body, parseResponseFast)
	})
}

// TestParseResponseFast_TakesCommonBodies checks that the fast path takes
// the usual bodies (so the fuzz test compares something) and leaves the
// rarer ones to encoding/json.
func TestParseResponseFast_TakesCommonBodies(t *testing.T) {
	tests := []struct {
		name, body string
		fast       bool
	}{
		{"completion", completionJSON, true},
		{"tool call", toolCallJSON, true},
		{"content filter", contentFilterJSON, true},
		{"error object", `{"error":{"message":"x"}}`, false},
		{"choice error", `{"choices":[{"index":0,"error":{"message":"x"},"finish_reason":"error"}]}`, false},
		{"content parts", `{"choices":[{"message":{"content":[{"type":"text","text":"a"}]}}]}`, false},
		{"object arguments", `{"choices":[{"message":{"tool_calls":[{"function":{"arguments":{}}}]}}]}`, false},
		{"key in other case", `{"Choices":[]}`, false},
		{"trailing data", `{} {}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cr chatResponse
			if got := parseResponseFast(tc.body, &cr); got != tc.fast {
				t.Fatalf("parseResponseFast = %v, want %v", got, tc.fast)
			}
		})
	}
}
