package simulate

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

const toolRequest = `{"model":"gpt-4.1-nano","stream":%s,"messages":[{"role":"user","content":[{"type":"text","text":"Use the square_root tool to calculate the square root of 132413 and reply with only the result. Do not give an explanation."}]}],%s"tools":[{"type":"function","function":{"description":"Calculates and return the square root of a number","name":"square_root","parameters":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"number":{"type":"number"}},"additionalProperties":false,"type":"object","required":["number"]}}}],"tool_choice":"required","parallel_tool_calls":true}`

// The golden answers are compared by eye with the recordings named in
// answer.go; these tests pin them byte for byte, on both ways.
func TestAnswer_GoldenBytes(t *testing.T) {
	tool := func(stream bool) string {
		if stream {
			return strings.Replace(strings.Replace(toolRequest, "%s", "true", 1), "%s", `"stream_options":{"include_usage":true},`, 1)
		}
		return strings.Replace(strings.Replace(toolRequest, "%s", "false", 1), "%s", "", 1)
	}
	cases := []struct {
		name, provider, body, golden string
	}{
		{"text", "openai", chatBody("gpt-4.1-nano", false), "text.json"},
		{"text stream", "openai", chatBody("gpt-4.1-nano", true), "text_stream.sse"},
		{"text stream without usage", "openai", `{"model":"gpt-4.1-nano","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "text_stream_no_usage.sse"},
		{"tool", "openai", tool(false), "tool.json"},
		{"tool stream", "openai", tool(true), "tool_stream.sse"},
		{"groq stream has no obfuscation", "groq", chatBody("llama-3.3-70b-versatile", true), "groq_stream.sse"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := newRig(t, way, Provider{Name: "openai"}, Provider{Name: "groq", Style: StyleGroq})
				resp, body := r.mustPost(t, c.provider, c.body)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				golden(t, c.golden, body)
			})
		}
	})
}

// chunkShape is the part of a chat.completion.chunk the SDK helpers check.
type chunkShape struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index *int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string  `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// TestAnswer_StreamFollowsSDKRules checks CLIENTS.md section 4: role first,
// integer indexes, a finish_reason, the usage chunk with "choices": [] only
// when asked, [DONE] last, and never an "error" key.
func TestAnswer_StreamFollowsSDKRules(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "groq", Models: []string{"llama-3.3-70b-versatile"}})
		for _, usage := range []bool{true, false} {
			body := chatBody("llama-3.3-70b-versatile", true)
			if !usage {
				body = strings.Replace(body, `"stream_options":{"include_usage":true},`, "", 1)
			}
			resp, raw := r.mustPost(t, "groq", body)
			if got := resp.Header.Get("Content-Type"); got != "text/event-stream; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			events := sseEvents(t, raw)
			if events[len(events)-1] != "[DONE]" {
				t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
			}
			var text strings.Builder
			finish, usageChunks := "", 0
			for i, ev := range events[:len(events)-1] {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(ev), &m); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if _, ok := m["error"]; ok {
					t.Errorf("event %d has an error key: %s", i, ev)
				}
				if _, ok := m["usage"]; ok != usage {
					t.Errorf("event %d: usage key present = %v, want %v", i, ok, usage)
				}
				var c chunkShape
				json.Unmarshal([]byte(ev), &c)
				if c.Object != "chat.completion.chunk" || c.Model != "llama-3.3-70b-versatile" {
					t.Errorf("event %d: object %q model %q", i, c.Object, c.Model)
				}
				if c.Choices == nil {
					t.Errorf("event %d: no choices array", i)
				}
				if len(c.Choices) == 0 {
					usageChunks++
					if c.Usage == nil || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens || c.Usage.TotalTokens == 0 {
						t.Errorf("usage chunk %s", ev)
					}
					continue
				}
				ch := c.Choices[0]
				if ch.Index == nil || *ch.Index != 0 {
					t.Errorf("event %d: choice index missing", i)
				}
				if i == 0 && ch.Delta.Role != "assistant" {
					t.Errorf("first delta role %q", ch.Delta.Role)
				}
				if ch.Delta.Content != nil {
					text.WriteString(*ch.Delta.Content)
				}
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
			if got, want := text.String(), "Hello from groq/llama-3.3-70b-versatile."; got != want {
				t.Errorf("text %q, want %q", got, want)
			}
			if finish != "stop" {
				t.Errorf("finish_reason %q", finish)
			}
			if want := map[bool]int{true: 1, false: 0}[usage]; usageChunks != want {
				t.Errorf("usage chunks %d, want %d", usageChunks, want)
			}
		}
	})
}

func TestAnswer_ToolStreamReassembles(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p"})
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"a","parameters":{}}},{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":["boolean","null"]}},"required":["city","days","metric"]}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`
		_, raw := r.mustPost(t, "p", body)
		events := sseEvents(t, raw)
		var args strings.Builder
		var id, name, finish string
		for _, ev := range events[:len(events)-1] {
			var c chunkShape
			if err := json.Unmarshal([]byte(ev), &c); err != nil {
				t.Fatal(err)
			}
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					if tc.Index == nil {
						t.Errorf("tool call delta without index: %s", ev)
					}
					if tc.ID != "" {
						id, name = tc.ID, tc.Function.Name
					}
					if tc.Function.Arguments == nil {
						t.Errorf("tool call delta without string arguments: %s", ev)
					} else {
						args.WriteString(*tc.Function.Arguments)
					}
				}
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
		}
		if !strings.HasPrefix(id, "call_") || name != "get_weather" || finish != "tool_calls" {
			t.Errorf("id %q name %q finish %q", id, name, finish)
		}
		if got, want := args.String(), `{"city":"simulated","days":1,"metric":true}`; got != want {
			t.Errorf("arguments %s, want %s", got, want)
		}
	})
}

func TestAnswer_ModelsList(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Models: []string{"a", "b/c"}, Key: "k"})
		req, _ := http.NewRequest(http.MethodGet, r.srv.BaseURL("p")+"/models", nil)
		req.Header.Set("Authorization", "Bearer k")
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Object string
			Data   []struct{ ID, Object string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		want := struct {
			Object string
			Data   []struct{ ID, Object string }
		}{"list", []struct{ ID, Object string }{{"a", "model"}, {"b/c", "model"}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("models (-want +got):\n%s", diff)
		}
		if n := r.srv.Stats().Total(); n != 0 {
			t.Errorf("models request counted as a chat request: %d", n)
		}
	})
}
