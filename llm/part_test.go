package llm_test

import (
	"testing"

	"github.com/detourhq/detour/llm"
)

// Each part is named by the need of its form; the detail of an image and
// the title of a document are droppable, the content is not.
func TestPart_Need(t *testing.T) {
	for _, tt := range []struct {
		p    llm.Part
		want string
	}{
		{llm.Part{Kind: llm.PartText, Text: "hi"}, ""},
		{llm.Part{Kind: llm.PartImage, URL: "https://x.test/a.png"}, llm.NeedImageURL},
		{llm.Part{Kind: llm.PartImage, URL: "gs://b/a.png", MediaType: "image/png"}, llm.NeedImageURL},
		{llm.Part{Kind: llm.PartImage, Data: "iVBO", MediaType: "image/png"}, llm.NeedImage},
		{llm.Part{Kind: llm.PartImage, Data: "/9j/", MediaType: "image/jpeg"}, llm.NeedImage},
		{llm.Part{Kind: llm.PartImage, Data: "UklG", MediaType: "image/webp"}, llm.NeedImage},
		{llm.Part{Kind: llm.PartImage, Data: "R0lG", MediaType: "image/gif"}, "image input (image/gif)"},
		{llm.Part{Kind: llm.PartDocument, Data: "JVBE", MediaType: "application/pdf", Title: "a.pdf"}, llm.NeedDocument},
		{llm.Part{Kind: llm.PartDocument, URL: "https://x.test/a.pdf", MediaType: "application/pdf"}, llm.NeedDocumentURL},
		{llm.Part{Kind: llm.PartDocument, Text: "hi", MediaType: "text/plain"}, "document input (text/plain)"},
		{llm.Part{Kind: llm.PartAudio, Data: "UklG", MediaType: "audio/wav"}, llm.NeedAudio},
		{llm.Part{Kind: llm.PartAudio, Data: "SUQz", MediaType: "audio/mp3"}, llm.NeedAudio},
		{llm.Part{Kind: llm.PartAudio, Data: "ZkxhQw", MediaType: "audio/flac"}, "audio input (audio/flac)"},
	} {
		if got := tt.p.Need(); got != tt.want {
			t.Errorf("%+v.Need() = %q, want %q", tt.p, got, tt.want)
		}
	}
	for need, want := range map[string]bool{llm.NeedImageDetail: true, llm.NeedDocumentTitle: true,
		llm.NeedImage: false, llm.NeedImageURL: false, llm.NeedDocument: false, llm.NeedDocumentURL: false} {
		if got := llm.Droppable(need); got != want {
			t.Errorf("Droppable(%q) = %v, want %v", need, got, want)
		}
	}
}
