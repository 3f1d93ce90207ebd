package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
)

// Test payloads: a 1x1 PNG and a minimal PDF, base64.
const (
	png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	pdfB64 = "JVBERi0xLjEKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqCnRyYWlsZXI8PC9Sb290IDEgMCBSPj4KJSVFT0YK"
)

func text(s string) llm.Part { return llm.Part{Kind: llm.PartText, Text: s} }

// parse reads body on surface d as the gateway does: the request, and
// its needs.
func parse(t testing.TB, d dialect, body string) (*llm.Request, []string) {
	t.Helper()
	var cr chatRequest
	var ae *apiError
	if d == anthropicDialect {
		ae = parseAnthropic([]byte(body), &cr)
	} else {
		ae = parseOpenAI([]byte(body), &cr)
	}
	if ae != nil {
		t.Fatalf("parse %s: %v", body, ae.Message)
	}
	return cr.req, needsOf(d, []byte(body))
}

// The OpenAI surface reads images (URL, data URL) and inline PDFs into
// parts, text kept in order around them, and names each by its need.
func TestParseOpenAI_Parts(t *testing.T) {
	for _, tt := range []struct {
		name, content string
		want          []llm.Part
		needs         []string
	}{
		{"text and image by URL", `[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"https://x.test/a.jpg"}}]`,
			[]llm.Part{text("What is this?"), {Kind: llm.PartImage, URL: "https://x.test/a.jpg"}}, []string{llm.NeedImageURL}},
		{"base64 image between texts, detail", `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/PNG;base64,` + png1x1 + `","detail":"high"}},{"type":"text","text":"b"}]`,
			[]llm.Part{text("a"), {Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}, text("b")}, []string{llm.NeedImage, llm.NeedImageDetail}},
		{"gif and jpg", `[{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lG"}},{"type":"image_url","image_url":{"url":"data:image/jpg;base64,/9j/"}}]`,
			[]llm.Part{{Kind: llm.PartImage, Data: "R0lG", MediaType: "image/gif"}, {Kind: llm.PartImage, Data: "/9j/", MediaType: "image/jpeg"}},
			[]string{llm.NeedImage + " (image/gif)", llm.NeedImage}},
		{"PDF data URL with a file name", `[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,` + pdfB64 + `"}},{"type":"text","text":"Sum up."}]`,
			[]llm.Part{{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf", Title: "a.pdf"}, text("Sum up.")},
			[]string{llm.NeedDocument, llm.NeedDocumentTitle}},
		{"PDF as bare base64", `[{"type":"file","file":{"filename":"b.PDF","file_data":"` + pdfB64 + `"}}]`,
			[]llm.Part{{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf", Title: "b.PDF"}},
			[]string{llm.NeedDocument, llm.NeedDocumentTitle}},
		{"a file id is not a part, WAV audio is", `[{"type":"text","text":"x"},{"type":"file","file":{"file_id":"file-1"}},{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}}]`,
			[]llm.Part{text("x"), {Kind: llm.PartAudio, Data: "UklG", MediaType: "audio/wav"}}, []string{"file input", llm.NeedAudio}},
		{"audio of another format is not a part", `[{"type":"input_audio","input_audio":{"data":"ZkxhQw","format":"flac"}}]`,
			nil, []string{llm.NeedAudio + " (unreadable)"}},
		{"a non-base64 data URL is not a part", `[{"type":"image_url","image_url":{"url":"data:image/svg+xml,<svg/>"}},{"type":"text","text":"x"}]`,
			nil, []string{needImageUnread}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, needs := parse(t, openAIDialect, `{"model":"m","messages":[{"role":"user","content":`+tt.content+`}]}`)
			if diff := cmp.Diff(tt.want, req.Messages[0].Parts); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if tt.want != nil && req.Messages[0].Content != "" {
				t.Errorf("content %q beside parts", req.Messages[0].Content)
			}
			if !slices.Equal(needs, tt.needs) {
				t.Errorf("needs %q, want %q", needs, tt.needs)
			}
		})
	}
}

// The Anthropic surface reads image and document blocks into parts, in
// order with the text, and names each by its need; members detour does
// not translate stay needs by name.
func TestParseAnthropic_Parts(t *testing.T) {
	for _, tt := range []struct {
		name, content string
		want          []llm.Part
		needs         []string
	}{
		{"base64 image after text", `[{"type":"text","text":"Hello!"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png1x1 + `"}}]`,
			[]llm.Part{text("Hello!"), {Kind: llm.PartImage, Data: png1x1, MediaType: "image/png"}}, []string{llm.NeedImage}},
		{"image by URL, cache_control", `[{"type":"image","source":{"type":"url","url":"https://x.test/ant.jpg"},"cache_control":{"type":"ephemeral"}},{"type":"text","text":"Describe."}]`,
			[]llm.Part{{Kind: llm.PartImage, URL: "https://x.test/ant.jpg"}, text("Describe.")}, []string{"cache_control", llm.NeedImageURL}},
		{"PDF with a title, PDF by URL", `[{"type":"document","title":"T","source":{"type":"base64","media_type":"application/pdf","data":"` + pdfB64 + `"}},` +
			`{"type":"document","source":{"type":"url","url":"https://x.test/a.pdf"}}]`,
			[]llm.Part{{Kind: llm.PartDocument, Data: pdfB64, MediaType: "application/pdf", Title: "T"},
				{Kind: llm.PartDocument, URL: "https://x.test/a.pdf", MediaType: "application/pdf"}},
			[]string{llm.NeedDocument, llm.NeedDocumentTitle, llm.NeedDocumentURL}},
		{"plain-text document with context and citations", `[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"Green."},"context":"c","citations":{"enabled":true}}]`,
			[]llm.Part{{Kind: llm.PartDocument, Text: "Green.", MediaType: "text/plain"}},
			[]string{"context", "citations", llm.NeedDocument + " (text/plain)"}},
		{"custom content and file sources are not parts", `[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"}]}},{"type":"image","source":{"type":"file","file_id":"f"}},{"type":"text","text":"t"}]`,
			nil, []string{"document input (unreadable content source)", "image input (unreadable file source)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, needs := parse(t, anthropicDialect, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":`+tt.content+`}]}`)
			if diff := cmp.Diff(tt.want, req.Messages[0].Parts); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if !slices.Equal(needs, tt.needs) {
				t.Errorf("needs %q, want %q", needs, tt.needs)
			}
		})
	}
	// An image in a tool result stays a need no target carries: the
	// canonical tool message is text.
	_, needs := parse(t, anthropicDialect, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t",`+
		`"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+png1x1+`"}}]}]}]}`)
	if !slices.Equal(needs, []string{"image in tool result"}) {
		t.Errorf("needs %q, want the image in a tool result", needs)
	}
}

// carriers are a client of each dialect, as the router asks them.
var carriers = map[string]llm.Carrier{"openai": &openai.Client{}, "anthropic": &anthropic.Client{}, "gemini": &gemini.Client{}}

// sentTo reports whether a target of dialect c would be sent a request
// with needs (from another dialect): it carries or may drop each.
func sentTo(c llm.Carrier, needs []string) bool {
	for _, n := range needs {
		if !c.Carries(n) && !llm.Droppable(n) {
			return false
		}
	}
	return true
}

// checkPartsAgree holds the parser and the needs walker to one reading:
// every part the parser made is named by its need (else a target that
// cannot carry it would be sent it), and every image or document need
// some target carries has a part to carry (else a target would carry it
// by name and be sent nothing: lost quietly).
func checkPartsAgree(t *testing.T, d dialect, body string) {
	t.Helper()
	var cr chatRequest
	var ae *apiError
	if d == anthropicDialect {
		ae = parseAnthropic([]byte(body), &cr)
	} else {
		ae = parseOpenAI([]byte(body), &cr)
	}
	if ae != nil {
		return
	}
	needs := needsOf(d, []byte(body))
	// A body the walker could not read names "unrecognised fields", which
	// no target carries: it need not name each part then.
	named := !slices.Contains(needs, "unrecognised fields")
	made := map[string]bool{}
	for _, m := range cr.req.Messages {
		for _, p := range m.Parts {
			if n := p.Need(); n != "" {
				made[n] = true
				if named && !slices.Contains(needs, n) {
					t.Errorf("a part needs %q, not among the needs %q", n, needs)
				}
			}
			if named && p.Title != "" && !slices.Contains(needs, llm.NeedDocumentTitle) {
				t.Errorf("a part has the title %q, not among the needs %q", p.Title, needs)
			}
		}
	}
	for name, c := range carriers {
		if name == d.String() || !sentTo(c, needs) {
			continue
		}
		for _, n := range needs {
			if (strings.HasPrefix(n, "image input") || strings.HasPrefix(n, "image url") || strings.HasPrefix(n, "document input") ||
				strings.HasPrefix(n, "document url") || strings.HasPrefix(n, "audio")) && c.Carries(n) && !made[n] {
				t.Errorf("a %s target carries %q, but no part holds it (needs %q)", name, n, needs)
			}
		}
	}
}

// FuzzPartsAgreeWithNeeds checks checkPartsAgree on any body, seeded with
// the corpus and shapes where the two readings could part.
func FuzzPartsAgreeWithNeeds(f *testing.F) {
	for _, d := range []string{"openai", "anthropic"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "fidelity", d, "requests", "*.json"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err == nil {
				f.Add(d == "anthropic", string(b))
			}
		}
	}
	for _, s := range []string{
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://a","URL":"x"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","Image_Url":{"url":"https://a"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","Type":"image_url","image_url":{"url":"https://a"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE","File_Id":"f"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://a"}},{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0"}}]}]}`,
		`{"messages":[{"role":"function","name":"f","content":[{"type":"image_url","image_url":{"url":"https://a"}}]}]}`,
	} {
		f.Add(false, s)
	}
	for _, s := range []string{
		`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":""}}]}]}`,
		`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"x","Media_Type":"image/png"}}]}]}`,
		`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":"https://a"},{"type":"document","Source":{"type":"url","url":"https://a"}}]}]}`,
		`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","data":"x"},"title":"","Title":"t"}]}]}`,
		`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"},"title":"t"}]}]}`,
	} {
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, an bool, body string) {
		d := openAIDialect
		if an {
			d = anthropicDialect
		}
		checkPartsAgree(t, d, body)
	})
}
