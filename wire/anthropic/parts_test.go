package anthropic

import (
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// Test payloads: a 1x1 PNG and a minimal PDF, base64.
const (
	png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	pdfB64 = "JVBERi0xLjEKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqCnRyYWlsZXI8PC9Sb290IDEgMCBSPj4KJSVFT0YK"
)

// Each part kind becomes its block, in order after the message's Content.
func TestEncodeRequest_Parts(t *testing.T) {
	text := func(s string) llm.Part { return llm.Part{Kind: llm.PartText, Text: s} }
	tests := []struct {
		name string
		msg  llm.Message
		want string // the turn's JSON
	}{
		{"text and image by URL", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			text("What is in this image?"), {Kind: llm.PartImage, URL: "https://example.com/cat.jpg"}}},
			`{"role":"user","content":[{"type":"text","text":"What is in this image?"},` +
				`{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}]}`},
		{"image base64 before text, Content first", llm.Message{Role: llm.RoleUser, Content: "Look:", Parts: []llm.Part{
			{Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}, text("and say.")}},
			`{"role":"user","content":[{"type":"text","text":"Look:"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png1x1 + `"}},{"type":"text","text":"and say."}]}`},
		{"PDF with a title", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf", Title: "report.pdf"}, text("Summarize.")}},
			`{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + pdfB64 +
				`"},"title":"report.pdf"},{"type":"text","text":"Summarize."}]}`},
		{"PDF by URL", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, URL: "https://example.com/a.pdf", MediaType: "application/pdf"}}},
			`{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}`},
		{"plain-text document", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, Text: "The grass is green.", MediaType: "text/plain", Title: "Notes"}}},
			`{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green."},"title":"Notes"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wiretest.OnlyMessage(t, encode, "messages", "claude-sonnet-4-5", tt.msg); got != tt.want {
				t.Errorf("turn\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// Parts where the Messages API takes only text, an inline part without a
// media type, or an unknown kind, are an error, never left out.
func TestEncodeRequest_PartErrors(t *testing.T) {
	img := []llm.Part{{Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}}
	for _, tt := range []struct {
		name, want string
		msg        llm.Message
	}{
		{"system with parts", "system message with parts", llm.Message{Role: llm.RoleSystem, Parts: img}},
		{"tool with parts", "tool message with parts", llm.Message{Role: llm.RoleTool, ToolCallID: "c", Parts: img}},
		{"inline image without media type", "media type", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartImage, Data: png1x1}}}},
		{"audio", "audio has no Messages API form", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartAudio, Data: "UklGRiwA", MediaType: "audio/wav"}}}},
		{"unknown kind", "unknown part kind", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: "video", URL: "x"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) { wiretest.WantEncodeError(t, encode, tt.msg, tt.want) })
	}
}

// Carries says yes to what EncodeRequest writes and no to the rest.
func TestClient_CarriesParts(t *testing.T) {
	wiretest.WantCarries(t, &Client{}, map[string]bool{
		llm.NeedImage: true, llm.NeedImageURL: true, llm.NeedImage + " (image/gif)": true, llm.NeedDocument: true,
		llm.NeedDocumentURL: true, llm.NeedDocument + " (text/plain)": true, llm.NeedDocumentTitle: true, "response_format": true,
		llm.NeedImageDetail: false, llm.NeedImage + " (image/heic)": false, llm.NeedAudio: false, "file input": false,
		"citations": false, "context": false,
	})
}

// encode is EncodeRequest for one whole answer.
var encode wiretest.Encoder = func(r *llm.Request) ([]byte, error) { return EncodeRequest(r, false) }
