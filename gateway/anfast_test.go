package gateway

import (
	"testing"

	"github.com/detourhq/detour/internal/jsonscan/scantest"
)

// FuzzANRequestMatchesJSON checks the fast Messages parser against
// decodeJSON: whenever parseANRequestFast accepts a body, decodeJSON must
// accept it too and fill the same anRequest.
func FuzzANRequestMatchesJSON(f *testing.F) {
	for _, s := range []string{
		`{"model":"default","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":64,"stream":true,"system":"be terse","temperature":0.5,"top_p":1,"stop_sequences":["x",null],
		  "messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},
		  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"42","is_error":false}]}],
		  "tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},
		  "metadata":{"user_id":"u"},"thinking":{"type":"disabled"}}`,
		`{"models":["a/b"],"model":null,"messages":null,"tools":null,"stream":null,"tool_choice":null,"max_tokens":null,"system":null}`,
		`{"MODEL":"x"}`, `{"model":"a","model":"b"}`, `{"max_tokens":1.5}`, `{"temperature":1e999}`, `{"stream":"yes"}`,
		`{"messages":[null,{"role":"user","Content":"x"}]}`, `{"messages":[{"role":"user","content":null}]}`,
		`{"messages":[{"role":"user","content":""}]}`, "{\"model\":\"\xff\"}", `{"messages":[{"content":"a\u00e9\n\ud800"}]}`,
		` {"model":"m"} `, `{"model":"m"}{}`, `[]`, `{"system":[{"type":"text","text":"s"}]}`, `{"tool_choice":{"type":"auto","x":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		scantest.Check(t, body, parseANRequestFast)
		var in anRequest
		if parseANRequestFast(body, &in) && decodeJSON([]byte(body), &in) != nil {
			t.Fatalf("fast path accepted %q, which decodeJSON refuses", body)
		}
	})
}

// TestParseANRequestFast_TakesCommonBodies checks that the fast path takes
// the usual requests (so the fuzz test compares something).
func TestParseANRequestFast_TakesCommonBodies(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":64,"stream":true,"system":"s","metadata":{"user_id":"u"},"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"model":"m","max_tokens":64,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"any"},"messages":[]}`,
	} {
		var in anRequest
		if !parseANRequestFast(body, &in) {
			t.Errorf("parseANRequestFast(%s) = false, want the fast path", body)
		}
	}
	for _, body := range []string{`{"Model":"m"}`, `{"max_tokens":1,"max_tokens":2}`, `[1]`} {
		var in anRequest
		if parseANRequestFast(body, &in) {
			t.Errorf("parseANRequestFast(%s) = true, want encoding/json", body)
		}
	}
}
