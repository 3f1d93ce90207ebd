package openai

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/detourhq/detour/internal/jsonscan/scantest"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// FuzzChunkDecodeMatchesJSON checks the fast chunk parser against
// encoding/json: whenever parseChunkFast accepts an input, json.Unmarshal
// must accept it too and give the same chatChunk.
func FuzzChunkDecodeMatchesJSON(f *testing.F) {
	for _, body := range wiretest.StreamSeeds(f) {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				f.Add(string(bytes.TrimSpace(d)))
			}
		}
	}
	for _, s := range []string{
		`{}`, `{"id":null,"model":null,"choices":[]}`, `{"ID":"x"}`, `{"id":"a","id":"b"}`,
		`{"choices":[{"index":1,"delta":{"content":"x"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a\nb\u00e9\ud800","refusal":"no"},"finish_reason":"stop"}]}`,
		`{"choices":[{"delta":{"content":null,"role":"assistant","tool_calls":null,"function_call":null}}]}`,
		`{"created":-1.5e+3,"service_tier":"\"x\"","obfuscation":true,"provider":false}`,
		"{\"model\":\"\xff\xfe\"}", "{\"model\":\"a\tb\"}", `{"object":"error"}`, ` { "id" : "x" } `,
		`{"choices":[{"index":00}]}`, `{"choices":[{"delta":{"tool_calls":[]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":null,"id":null,"type":null,"function":null},{"index":2,"function":{"name":"n","arguments":"{\"a\":1}"}}]}}]}`, `{"choices":[{"index":1234567890}]}`, `{"id":"x"} {}`,
		`{"usage":{"prompt_tokens":-1,"completion_tokens":null,"x":[{"y":"\u00e9"}]},"choices":null}`,
		`{"choices":[{"delta":null,"index":null}],"usage":null,"extra":{"a":[1,2,{"b":false}]}}`,
		`{"choices":[{"delta":{"function_call":{"name":null,"arguments":null},"tool_calls":[{"index":-3}]}}]}`,
		`{"Usage":{"prompt_tokens":1}}`, `{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`, `{"x":"\q"}`,
		`{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0}}}`,
		`{"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}`, `{"usage":{"prompt_tokens_details":null}}`,
		`{"usage":{"prompt_tokens_details":{"Cached_Tokens":3}}}`, `{"usage":{"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":{}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var sc chunkScratch
		scantest.Check(t, data, func(s string, cc *chatChunk) bool { return parseChunkFast(s, cc, &sc) })
	})
}

// TestParseChunkFast_TakesCommonChunks checks that the fast path handles
// the usual content chunks of the recorded streams (so the fuzz test
// compares something), and leaves the rarer ones to encoding/json.
func TestParseChunkFast_TakesCommonChunks(t *testing.T) {
	tests := []struct {
		name, data string
		fast       bool
	}{
		{"role chunk", `{"id":"c","object":"chat.completion.chunk","created":1753357673,"model":"m","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
		{"content chunk", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello\n"},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
		{"finish chunk", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`, true},
		{"usage chunk", `{"id":"c","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":6,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":0}}}`, true},
		{"usage in other case", `{"usage":{"Prompt_Tokens":1}}`, false},
		{"reasoning delta", `{"choices":[{"index":0,"delta":{"reasoning_content":"hm","content":null},"logprobs":{"content":[]}}]}`, true},
		{"function_call object", `{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`, true},
		{"content parts", `{"choices":[{"delta":{"content":[{"type":"text","text":"x"}]}}]}`, false},
		{"tool call chunk", `{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, true},
		{"first tool call chunk", `{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
		{"object arguments", `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"a":1}}}]}}]}`, false},
		{"five tool calls", `{"choices":[{"delta":{"tool_calls":[{},{},{},{},{}]}}]}`, false},
		{"error frame", `{"error":{"message":"x"}}`, false},
		{"two choices", `{"choices":[{"index":0,"delta":{}},{"index":1,"delta":{}}]}`, false},
		{"key in other case", `{"Model":"m"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cc chatChunk
			var sc chunkScratch
			if got := parseChunkFast(tc.data, &cc, &sc); got != tc.fast {
				t.Fatalf("parseChunkFast = %v, want %v", got, tc.fast)
			}
		})
	}
}
