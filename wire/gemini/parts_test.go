package gemini

import (
	"encoding/base64"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// Test payloads: a 1x1 PNG and a minimal PDF, base64.
const (
	png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	pdfB64 = "JVBERi0xLjEKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqCnRyYWlsZXI8PC9Sb290IDEgMCBSPj4KJSVFT0YK"
)

// Inline parts become inlineData and URLs with a media type fileData, in
// order after the message's Content; empty text is left out.
func TestEncodeRequest_Parts(t *testing.T) {
	text := func(s string) llm.Part { return llm.Part{Kind: llm.PartText, Text: s} }
	tests := []struct {
		name string
		msg  llm.Message
		want string // the content's JSON
	}{
		{"text and image base64", llm.Message{Role: llm.RoleUser, Content: "Look:", Parts: []llm.Part{
			{Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}, text(""), text("and say.")}},
			`{"role":"user","parts":[{"text":"Look:"},{"inlineData":{"mimeType":"image/png","data":"` + png1x1 + `"}},{"text":"and say."}]}`},
		{"PDF before text", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf", Title: "report.pdf"}, text("Summarize.")}},
			`{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"` + pdfB64 + `"}},{"text":"Summarize."}]}`},
		{"text and image by URL with its media type", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			text("What is in this image?"), {Kind: llm.PartImage, URL: "gs://bucket/cat.jpg", MediaType: "image/jpeg"}}},
			`{"role":"user","parts":[{"text":"What is in this image?"},{"fileData":{"mimeType":"image/jpeg","fileUri":"gs://bucket/cat.jpg"}}]}`},
		{"WAV audio", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			text("What is in this recording?"), {Kind: llm.PartAudio, Data: "UklGRiwA", MediaType: "audio/wav"}}},
			`{"role":"user","parts":[{"text":"What is in this recording?"},{"inlineData":{"mimeType":"audio/wav","data":"UklGRiwA"}}]}`},
		{"plain-text document", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartDocument, Text: "The grass is green.", MediaType: "text/plain"}}},
			`{"role":"user","parts":[{"inlineData":{"mimeType":"text/plain","data":"` +
				base64.StdEncoding.EncodeToString([]byte("The grass is green.")) + `"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wiretest.OnlyMessage(t, encode, "contents", "gemini-2.5-flash", tt.msg); got != tt.want {
				t.Errorf("content\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A URL without a media type, parts where Gemini takes no media, or an
// unknown kind, are an error, never left out.
func TestEncodeRequest_PartErrors(t *testing.T) {
	img := []llm.Part{{Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}}
	for _, tt := range []struct {
		name, want string
		msg        llm.Message
	}{
		{"image by URL without media type", "without a media type", llm.Message{Role: llm.RoleUser,
			Parts: []llm.Part{{Kind: llm.PartImage, URL: "https://example.com/cat.jpg"}}}},
		{"system with parts", "system message with parts", llm.Message{Role: llm.RoleSystem, Parts: img}},
		{"tool with parts", "tool message with parts", llm.Message{Role: llm.RoleTool, ToolCallID: "c", Name: "f", Parts: img}},
		{"unknown kind", "unknown part kind", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: "video", URL: "x"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) { wiretest.WantEncodeError(t, encode, tt.msg, tt.want) })
	}
}

// Carries says yes to inline media (audio too) and no to URLs, GIF and
// titles.
func TestClient_CarriesParts(t *testing.T) {
	wiretest.WantCarries(t, &Client{}, map[string]bool{
		llm.NeedImage: true, llm.NeedImage + " (image/heic)": true, llm.NeedDocument: true,
		llm.NeedDocument + " (text/plain)": true, "response_format": true,
		llm.NeedImageURL: false, llm.NeedDocumentURL: false, llm.NeedImage + " (image/gif)": false,
		llm.NeedDocumentTitle: false, llm.NeedImageDetail: false, llm.NeedAudio: true, "file input": false,
	})
}

// encode is EncodeRequest for one whole answer.
var encode wiretest.Encoder = EncodeRequest
