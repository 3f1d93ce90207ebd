package gateway

import (
	"testing"

	"github.com/detourhq/detour/internal/jsonscan/scantest"
)

// FuzzOARequestMatchesJSON checks the fast request parser against
// decodeJSON: whenever parseOARequestFast accepts a body, decodeJSON must
// accept it too and fill the same oaRequest.
func FuzzOARequestMatchesJSON(f *testing.F) {
	for _, s := range []string{
		`{"model":"default","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":64,"temperature":0,"top_p":0.5e-1,"n":1,
		  "messages":[{"role":"system","content":"be terse"},{"role":"user","content":[{"type":"text","text":"a"}],"name":"u"}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
		  {"role":"tool","tool_call_id":"c1","content":"42"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],
		  "tool_choice":"auto","stop":["x","y"],"response_format":{"type":"json_object"},"user":"u1","seed":7,"metadata":{"a":[1,{"b":null}]}}`,
		`{"models":["a/b",null],"model":null,"messages":null,"tools":null,"stream":null,"stream_options":null,"max_tokens":null,"n":-1}`,
		`{"MODEL":"x"}`, `{"model":"a","model":"b"}`, `{"max_tokens":1.5}`, `{"temperature":1e999}`, `{"stream":"yes"}`,
		`{"messages":[null,{"role":"user","Content":"x"}]}`, `{"tools":[null,{"function":null}]}`, "{\"model\":\"\xff\"}",
		`{"messages":[{"role":"user","content":"a\u00e9\n\ud800"}]}`, ` {"model":"m"} `, `{"model":"m"}{}`, `[]`, `{"stop":"\q"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		scantest.Check(t, body, parseOARequestFast)
		var in oaRequest
		if parseOARequestFast(body, &in) && decodeJSON([]byte(body), &in) != nil {
			t.Fatalf("fast path accepted %q, which decodeJSON refuses", body)
		}
	})
}

// TestParseOARequestFast_TakesCommonBodies checks that the fast path takes
// the usual requests (so the fuzz test compares something) and leaves the
// rarer ones to encoding/json.
func TestParseOARequestFast_TakesCommonBodies(t *testing.T) {
	tests := []struct {
		name, body string
		fast       bool
	}{
		{"chat", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":64,"temperature":0}`, true},
		{"stream with extras", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"user":"u","logprobs":false,"messages":[{"role":"user","content":"hi"}]}`, true},
		{"tools", `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"messages":[]}`, true},
		{"key in other case", `{"Model":"m"}`, false},
		{"repeated key", `{"model":"a","model":"b"}`, false},
		{"fractional max_tokens", `{"max_tokens":1.5}`, false},
		{"not an object", `[1]`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in oaRequest
			if got := parseOARequestFast(tc.body, &in); got != tc.fast {
				t.Fatalf("parseOARequestFast = %v, want %v", got, tc.fast)
			}
		})
	}
}
