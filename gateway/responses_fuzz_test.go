package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
)

// rsSeeds are Responses request bodies the fuzzer starts from: each shape
// the parser reads, and some it refuses.
var rsSeeds = []string{
	`{"model":"default","input":"hi"}`,
	`{"model":"default","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"What is this?"},` +
		`{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}]}],"store":false}`,
	`{"model":"default","input":[{"role":"user","content":"weather?"},{"type":"function_call","call_id":"c1","name":"w","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"18C"}]}],` +
		`"tools":[{"type":"function","name":"w","parameters":{"type":"object"},"strict":false},{"type":"web_search"}],` +
		`"tool_choice":{"type":"function","name":"w"},"parallel_tool_calls":false}`,
	`{"model":"default","input":"json","text":{"format":{"type":"json_schema","name":"f","schema":{"type":"object"},"strict":true},"verbosity":"low"},` +
		`"reasoning":{"effort":"low","summary":"auto"},"max_output_tokens":100,"temperature":0.2,"top_p":0.9,"metadata":{"a":"b"},"user":"u","stream":true}`,
	`{"model":"default","input":"x","previous_response_id":"resp_1"}`,
	`{"model":"default","input":[{"type":"item_reference","id":"msg_1"},{"type":"reasoning","id":"rs_1","summary":[]}]}`,
	`{"model":"default","input":[{"role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}],"id":"msg_1","status":"completed"}],"include":["x"]}`,
	`{"input":3}`, `[]`, `{"model":"default","input":[{"role":"wizard","content":"x"}]}`, `{"max_output_tokens":0,"input":"x"}`,
}

// FuzzResponsesRequest: any body is either refused with a 400 in OpenAI's
// shape, or read into a canonical request with at least one message whose
// answer, whole and streamed, is valid JSON.
func FuzzResponsesRequest(f *testing.F) {
	for _, s := range rsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var cr chatRequest
		ae := parseResponses(body, &cr)
		if ae != nil {
			if ae.Status != 400 || ae.Type != "invalid_request_error" || ae.Message == "" {
				t.Fatalf("parseResponses(%q) = %+v", body, ae)
			}
			if b := appendOpenAIError(nil, ae); !json.Valid(b) {
				t.Fatalf("error body %q is not JSON", b)
			}
			return
		}
		req := cr.req
		if !json.Valid(body) || req == nil || len(req.Messages) == 0 || cr.rs == nil {
			t.Fatalf("parseResponses(%q) accepted %+v", body, cr)
		}
		for _, m := range req.Messages {
			switch m.Role {
			case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
			case llm.RoleTool:
				if m.ToolCallID == "" {
					t.Fatalf("a tool message without its call id from %q", body)
				}
			default:
				t.Fatalf("role %q from %q", m.Role, body)
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					t.Fatalf("tool call %+v from %q", tc, body)
				}
			}
		}
		for _, raw := range [][]byte{req.ToolChoice, req.ResponseFormat} {
			if raw != nil && !json.Valid(raw) {
				t.Fatalf("%q is not JSON (from %q)", raw, body)
			}
		}
		c := &call{id: "fuzz", cr: cr, start: time.Unix(1, 0)}
		resp := &llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: "ok",
			ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: `{"a":1}`}}}, FinishReason: llm.FinishLength}
		if b := appendResponsesObject(nil, c, resp); !json.Valid(b) {
			t.Fatalf("response object %s is not JSON (from %q)", b, body)
		}
		enc := &rsStream{c: c}
		b := enc.chunk(nil, llm.Chunk{Content: "o"})
		b = enc.chunk(b, llm.Chunk{ToolCalls: []llm.ToolCallDelta{{ID: "c", Name: "f", Arguments: "{"}}})
		b = enc.end(b)
		b = enc.fail(b, badRequest("", "x"))
		for _, ev := range bytes.Split(bytes.TrimSpace(b), []byte("\n\n")) {
			_, data, ok := bytes.Cut(ev, []byte("\ndata: "))
			if !ok || bytes.Contains(data, []byte("\n")) || !json.Valid(data) || !strings.HasPrefix(string(ev), "event: ") {
				t.Fatalf("event %q (from %q)", ev, body)
			}
		}
	})
}
