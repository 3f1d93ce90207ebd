package anthropic

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/detourhq/detour/internal/jsonscan/scantest"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// FuzzEventDecodeMatchesJSON checks the fast event parser against
// encoding/json: whenever parseEventFast accepts an event's data,
// json.Unmarshal must accept it too and give the same streamEvent.
func FuzzEventDecodeMatchesJSON(f *testing.F) {
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
		`{}`, `{"type":null,"index":null,"delta":null,"usage":null}`, `{"Type":"x"}`, `{"type":"a","type":"b"}`,
		`{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a\nb\u00e9\ud800","extra":[1,{"x":null}]}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null},"usage":{"output_tokens":12,"server_tool_use":{"web_search_requests":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":{"type":"refusal"}}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, `{"type":"ping"} x`, `{"index":1.5}`,
		`{"usage":{"input_tokens":1,"Input_Tokens":2}}`, `{"delta":{"partial_json":"{\"a\":"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var sc eventScratch
		scantest.Check(t, data, func(s string, e *streamEvent) bool { return parseEventFast(s, e, &sc) })
	})
}

// TestParseEventFast_TakesCommonEvents checks that the fast path takes the
// usual events (so the fuzz test compares something) and leaves the rarer
// ones to encoding/json.
func TestParseEventFast_TakesCommonEvents(t *testing.T) {
	tests := []struct {
		name, data string
		fast       bool
	}{
		{"text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`, true},
		{"json delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"loc"}}`, true},
		{"ping", `{"type": "ping"}`, true},
		{"block stop", `{"type":"content_block_stop","index":0}`, true},
		{"message delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`, true},
		{"message stop", `{"type":"message_stop"}`, true},
		{"message start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`, true},
		{"block start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, true},
		{"tool block start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`, true},
		{"error", `{"type":"error","error":{"type":"overloaded_error"}}`, false},
		{"stop details", `{"type":"message_delta","delta":{"stop_details":{"type":"refusal"}}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e streamEvent
			var sc eventScratch
			if got := parseEventFast(tc.data, &e, &sc); got != tc.fast {
				t.Fatalf("parseEventFast = %v, want %v", got, tc.fast)
			}
		})
	}
}

// FuzzMessageDecodeMatchesJSON checks the fast response parser against
// encoding/json: whenever parseMessageFast accepts a body, json.Unmarshal
// must accept it too and give the same message.
func FuzzMessageDecodeMatchesJSON(f *testing.F) {
	for _, s := range []string{haikuTextJSON, haikuToolJSON, mixedJSON, refusalJSON, `{}`, `{"content":null,"usage":null}`,
		`{"type":"error","error":{"type":"overloaded_error"}}`, `{"ID":"x"}`, `{"content":[null,{"type":"text","Text":"a"}]}`,
		`{"content":[{"type":"tool_use","input":null}],"stop_details":null}`, `{"id":"a"} x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		scantest.Check(t, body, parseMessageFast)
	})
}
