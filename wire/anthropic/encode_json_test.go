package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendJSONMatchesEncoder holds messagesRequest.appendJSON to
// encoding/json (HTML escaping off) byte for byte, errors included.
func FuzzAppendJSONMatchesEncoder(f *testing.F) {
	f.Add("claude", "hi <b>&\u2028\x00\xff", "t1", []byte(`{"type":"object"}`), []byte(`"auto"`), 64, 0.5, byte(0xff), true, byte(0))
	f.Add("", "", "", []byte(nil), []byte(nil), 0, 1e-7, byte(0), false, byte(0xff))
	f.Add("m", "a\tb", "id", []byte(`{bad`), []byte(` [ 1 ] `), -1, 1e21, byte(0x55), true, byte(0x0f))
	f.Fuzz(func(t *testing.T, model, text, id string, raw, choice []byte, maxTokens int, temp float64, shape byte, stream bool, media byte) {
		r := messagesRequest{Model: model, MaxTokens: maxTokens, Stream: stream}
		if shape&1 != 0 {
			r.System = raw
		}
		r.Messages = []turn{{Role: "user", Content: text}}
		if shape&2 != 0 {
			r.Messages = append(r.Messages, turn{Role: "assistant", Content: []block{
				{Type: "text", Text: text}, {Type: "tool_use", ID: id, Name: model, Input: raw},
			}})
		}
		if shape&4 != 0 {
			r.Messages = append(r.Messages, turn{Role: "user", Content: []block{{Type: "tool_result", ToolUseID: id, Content: text}}})
		}
		if shape&8 != 0 {
			r.Tools = []tool{{Name: model, Description: text, InputSchema: raw}, {Name: "g"}}
		}
		if shape&16 != 0 {
			r.ToolChoice = choice
		}
		if shape&32 != 0 {
			r.StopSequences = []string{text, id}
		}
		if shape&64 != 0 {
			r.Temperature = &temp
		}
		if shape&128 != 0 {
			r.TopP = &temp
		}
		if stream && shape&1 != 0 {
			r.Thinking = &thinking{Type: id, BudgetTokens: maxTokens}
		}
		if media != 0 {
			// Image and document blocks: each source field set or not
			// by a bit of media.
			src := func(bit byte) *source {
				s := &source{Type: text}
				if media&bit != 0 {
					s.MediaType, s.Data = model, text
				} else {
					s.URL = id
				}
				return s
			}
			r.Messages = append(r.Messages, turn{Role: "user", Content: []block{
				{Type: "image", Source: src(1)}, {Type: "text", Text: id},
				{Type: "document", Source: src(2), Title: string(raw)},
			}})
			if media&4 != 0 {
				r.Messages[len(r.Messages)-1].Content = []block{{Type: "document", Source: &source{}, Title: text}}
			}
		}
		if shape == 0 {
			r.Messages = nil
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(&r)
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		got, gerr := r.appendJSON(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("error %v, encoding/json %v", gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}
