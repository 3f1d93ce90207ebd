package openai

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

// Each part kind is written in chat completions' form, in order after
// the message's Content.
func TestEncodeRequest_Parts(t *testing.T) {
	text := func(s string) llm.Part { return llm.Part{Kind: llm.PartText, Text: s} }
	tests := []struct {
		name string
		msg  llm.Message
		want string // the message's JSON
	}{
		{"text and image by URL", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			text("What is in this image?"), {Kind: llm.PartImage, URL: "https://example.com/cat.jpg"}}},
			`{"role":"user","content":[{"type":"text","text":"What is in this image?"},` +
				`{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]}`},
		{"image base64 before text, Content first", llm.Message{Role: llm.RoleUser, Content: "Look:", Parts: []llm.Part{
			{Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}, text("and say.")}},
			`{"role":"user","content":[{"type":"text","text":"Look:"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png1x1 + `"}},{"type":"text","text":"and say."}]}`},
		{"PDF with a title", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf", Title: "report.pdf"}, text("Summarize.")}},
			`{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,` + pdfB64 +
				`","filename":"report.pdf"}},{"type":"text","text":"Summarize."}]}`},
		{"WAV audio", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			text("What is in this recording?"), {Kind: llm.PartAudio, Data: "UklGRiwA", MediaType: "audio/wav"}}},
			`{"role":"user","content":[{"type":"text","text":"What is in this recording?"},` +
				`{"type":"input_audio","input_audio":{"data":"UklGRiwA","format":"wav"}}]}`},
		{"PDF without a title", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf"}}},
			`{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,` + pdfB64 +
				`","filename":"document.pdf"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wiretest.OnlyMessage(t, encode, "messages", "gpt-4o", tt.msg); got != tt.want {
				t.Errorf("message\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A part chat completions has no form for, or parts where OpenAI takes
// only text, are an error, never left out.
func TestEncodeRequest_PartErrors(t *testing.T) {
	img := []llm.Part{{Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}}
	for _, tt := range []struct {
		name, want string
		msg        llm.Message
	}{
		{"document by URL", "document by URL", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartDocument, URL: "https://example.com/a.pdf"}}}},
		{"plain-text document", "inline data", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartDocument, Text: "hi", MediaType: "text/plain"}}}},
		{"inline image without media type", "media type", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartImage, Data: png1x1}}}},
		{"FLAC audio", "inline WAV or MP3", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartAudio, Data: "ZkxhQw", MediaType: "audio/flac"}}}},
		{"unknown kind", "unknown part kind", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: "video", URL: "x"}}}},
		{"system with parts", "system message with parts", llm.Message{Role: llm.RoleSystem, Parts: img}},
		{"tool with parts", "tool message with parts", llm.Message{Role: llm.RoleTool, ToolCallID: "c", Parts: img}},
	} {
		t.Run(tt.name, func(t *testing.T) { wiretest.WantEncodeError(t, encode, tt.msg, tt.want) })
	}
}

// Carries says yes to what EncodeRequest writes and no to the rest.
func TestClient_CarriesParts(t *testing.T) {
	wiretest.WantCarries(t, &Client{}, map[string]bool{
		llm.NeedImage: true, llm.NeedImageURL: true, llm.NeedImage + " (image/gif)": true, llm.NeedDocument: true,
		llm.NeedDocumentTitle: true, "response_format": true,
		llm.NeedDocumentURL: false, llm.NeedDocument + " (text/plain)": false, llm.NeedImageDetail: false,
		llm.NeedImage + " (image/heic)": false, llm.NeedAudio: true, llm.NeedAudio + " (audio/flac)": false, "file input": false,
	})
}

// encode is EncodeRequest for one whole answer.
var encode wiretest.Encoder = func(r *llm.Request) ([]byte, error) { return EncodeRequest(r, false) }
