package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

func TestParseLine_Native(t *testing.T) {
	temp := 0.2
	tests := []struct {
		name string
		line string
		want Item
	}{
		{"prompt with system", `{"id":"a","prompt":"hi","system":"be brief","max_tokens":5,"temperature":0.2}`,
			Item{Line: 7, ID: "a", Request: &llm.Request{MaxTokens: 5, Temperature: &temp, Messages: []llm.Message{
				{Role: llm.RoleSystem, Content: "be brief"}, {Role: llm.RoleUser, Content: "hi"}}}}},
		{"numeric id, target, text parts", `{"id":42,"target":"groq/llama","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			Item{Line: 7, ID: "42", Route: "groq/llama", Request: &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "a\nb"}}}}},
		{"tools in both shapes", `{"id":"t","route":"cheap","prompt":"x","tools":[{"type":"function","function":{"name":"f"}},{"name":"g","parameters":{"type":"object"}}],"tool_choice":"auto","response_format":{"type":"json_object"}}`,
			Item{Line: 7, ID: "t", Route: "cheap", NonIdempotent: true, Request: &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
				Tools:      []llm.Tool{{Name: "f"}, {Name: "g", Parameters: []byte(`{"type":"object"}`)}},
				ToolChoice: []byte(`"auto"`), ResponseFormat: []byte(`{"type":"json_object"}`)}}},
		{"side effects said", `{"id":"s","prompt":"book it","non_idempotent":true}`,
			Item{Line: 7, ID: "s", NonIdempotent: true, Request: &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "book it"}}}}},
		{"tools said to be safe to send again", `{"id":"u","prompt":"x","tools":[{"name":"f"}],"non_idempotent":false}`,
			Item{Line: 7, ID: "u", Request: &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{{Name: "f"}}}}},
		{"a tool conversation", `{"id":"c","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"42"}]}`,
			Item{Line: 7, ID: "c", Request: &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "f", Arguments: "{}"}}},
				{Role: llm.RoleTool, ToolCallID: "1", Content: "42"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, f, err := ParseLine([]byte(tt.line), 7, "")
			if err != nil || f != Native {
				t.Fatalf("ParseLine = %v, %v", f, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("item (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseLine_OpenAIBatchLine(t *testing.T) {
	line := `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"developer","content":"terse"},{"role":"user","content":"hi"}],"max_completion_tokens":9,"seed":3,"logprobs":true,"user":null,"n":2}}`
	it, f, err := ParseLine([]byte(line), 1, OpenAI)
	if err != nil || f != OpenAI {
		t.Fatalf("ParseLine = %v, %v", f, err)
	}
	if it.ID != "r1" || it.Route != "gpt-4o-mini" || it.Request.MaxTokens != 9 || len(it.Request.Messages) != 2 ||
		it.Request.Messages[0].Role != llm.RoleSystem {
		t.Fatalf("item = %+v, request %+v", it, it.Request)
	}
	// What another dialect would have to carry: by name, null fields aside.
	if d := cmp.Diff([]string{"logprobs", "n", "seed"}, it.Request.Needs); d != "" {
		t.Errorf("needs (-want +got):\n%s", d)
	}
	if it.Request.Raw == nil || it.Request.Raw.Dialect != "openai" || !strings.Contains(string(it.Request.Raw.Body), `"seed":3`) {
		t.Errorf("raw = %+v, want the body as written for OpenAI-dialect targets", it.Request.Raw)
	}
}

func TestParseLine_InputErrorsSayWhatIsWrong(t *testing.T) {
	tests := []struct {
		name, line string
		format     Format
		id, want   string
	}{
		{"not JSON", `{"id":`, "", "", "not a JSON object"},
		{"an array", `[1]`, "", "", "not a JSON object"},
		{"no id", `{"prompt":"x"}`, "", "", "id: missing"},
		{"empty id", `{"id":"","prompt":"x"}`, "", "", "id: empty"},
		{"no request", `{"id":"a"}`, "", "a", "give messages"},
		{"both route and target", `{"id":"a","route":"r","target":"p/m","prompt":"x"}`, "", "a", "not both"},
		{"unknown field", `{"id":"a","prompt":"x","max_token":5}`, "", "a", `unknown field "max_token"`},
		{"bad role", `{"id":"a","messages":[{"role":"robot","content":"x"}]}`, "", "a", `messages[0].role "robot"`},
		{"an image", `{"id":"a","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "", "a", "text only"},
		{"max_tokens 0", `{"id":"a","prompt":"x","max_tokens":0}`, "", "a", "at least 1"},
		{"non_idempotent not a bool", `{"id":"a","prompt":"x","non_idempotent":"yes"}`, "", "a", "non_idempotent: expected bool"},
		{"an OpenAI line's unknown field", `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{},"nonidempotent":true}`, "", "c", `unknown field "nonidempotent"`},
		{"OpenAI line in a native file", `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{}}`, Native, "c", "an OpenAI batch line in a native file"},
		{"native line in an OpenAI file", `{"id":"n","prompt":"x"}`, OpenAI, "n", "a native line in an OpenAI batch file"},
		{"GET", `{"custom_id":"c","method":"GET","url":"/v1/chat/completions","body":{"messages":[]}}`, OpenAI, "c", `method "GET"`},
		{"embeddings", `{"custom_id":"c","method":"POST","url":"/v1/embeddings","body":{"input":"x"}}`, OpenAI, "c", "only /v1/chat/completions"},
		{"stream", `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"stream":true,"messages":[{"role":"user","content":"x"}]}}`, OpenAI, "c", "cannot stream"},
		{"no messages", `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}`, OpenAI, "c", "body.messages is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseLine([]byte(tt.line), 3, tt.format)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an *InputError", err)
			}
			if ie.Line != 3 || ie.ID != tt.id || !strings.Contains(ie.Error(), tt.want) || !strings.HasPrefix(ie.Error(), "line 3: ") {
				t.Fatalf("error = %q (id %q), want line 3, id %q and %q", ie.Error(), ie.ID, tt.id, tt.want)
			}
		})
	}
}

func TestOpenInput_FirstValidLineDecidesTheFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	body := "not json\n\n" + `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"x"}]}}` +
		"\r\n" + `{"id":"n","prompt":"x"}` // no final newline
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := OpenInput(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Format != OpenAI || in.Items != 3 || len(in.Digest) != 64 {
		t.Fatalf("input = %+v, want OpenAI, 3 items (the blank line aside)", in)
	}
	var lines []int
	if err := in.each(func(n int, line []byte, _ bool) bool { lines = append(lines, n); return true }); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int{1, 3, 4}, lines); d != "" {
		t.Fatalf("line numbers (-want +got):\n%s", d)
	}
}
