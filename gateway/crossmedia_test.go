package gateway_test

import (
	"encoding/base64"
	"strings"
	"testing"
)

// medium is an image, a document or audio of a request, as the test reads it on
// decoded JSON (apart from the gateway's own reading): by URL, inline
// (data and media type), or a plain-text document (text).
type medium struct {
	kind, url, data, mediaType, text, title string
	detail                                  bool // OpenAI detail other than auto
}

// mediaOf returns the images, documents and audio of req on surface, tool
// results' included, in order.
func mediaOf(surfaceName string, req map[string]any) []medium {
	var out []medium
	var walk func(parts []any)
	walk = func(parts []any) {
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if inner, ok := pm["content"].([]any); ok {
				walk(inner)
			}
			if m, ok := mediumOf(surfaceName, pm); ok {
				out = append(out, m)
			}
		}
	}
	msgs, _ := req["messages"].([]any)
	for _, msg := range msgs {
		mm, _ := msg.(map[string]any)
		parts, _ := mm["content"].([]any)
		walk(parts)
	}
	return out
}

// mediumOf reads one part or block.
func mediumOf(surfaceName string, pm map[string]any) (medium, bool) {
	str := func(m any, k string) string { s, _ := m.(map[string]any)[k].(string); return s }
	typ := str(pm, "type")
	if surfaceName == "openai" {
		switch typ {
		case "image_url":
			img, _ := pm["image_url"].(map[string]any)
			m := medium{kind: "image", detail: str(img, "detail") != "" && str(img, "detail") != "auto"}
			m.url = str(img, "url")
			if head, data, ok := strings.Cut(m.url, ";base64,"); ok && strings.HasPrefix(m.url, "data:") {
				m.url, m.data, m.mediaType = "", data, strings.TrimPrefix(head, "data:")
			}
			return m, true
		case "file":
			f, _ := pm["file"].(map[string]any)
			m := medium{kind: "document", title: str(f, "filename")}
			if head, data, ok := strings.Cut(str(f, "file_data"), ";base64,"); ok {
				m.data, m.mediaType = data, strings.TrimPrefix(head, "data:")
			}
			return m, true // a file id too: no form of it may pass for carried
		case "input_audio":
			a, _ := pm["input_audio"].(map[string]any)
			return medium{kind: "audio", data: str(a, "data"), mediaType: "audio/" + str(a, "format")}, true
		}
		return medium{}, false
	}
	if typ != "image" && typ != "document" {
		return medium{}, false
	}
	src, _ := pm["source"].(map[string]any)
	m := medium{kind: typ, title: str(pm, "title")}
	switch str(src, "type") {
	case "base64":
		m.data, m.mediaType = str(src, "data"), str(src, "media_type")
	case "url":
		m.url = str(src, "url")
	case "text":
		m.text = str(src, "data")
	}
	return m, true
}

// carriedIn reports whether the upstream body sent (decoded) holds m in
// the form of target's dialect ("up" OpenAI, "upa" Anthropic, "gem"
// Gemini, "rs" the Responses API), and whether its title went with it.
func carriedIn(target string, sent any, m medium) (found, titled bool) {
	str := func(m any, k string) string { s, _ := m.(map[string]any)[k].(string); return s }
	dataURL := "data:" + m.mediaType + ";base64," + m.data
	visit(sent, func(o map[string]any) {
		hit := false
		title := ""
		switch target {
		case "up":
			switch {
			case m.kind == "image" && str(o, "type") == "image_url":
				u := str(o["image_url"], "url")
				hit = u != "" && (u == m.url || u == dataURL)
			case m.kind == "audio" && str(o, "type") == "input_audio":
				a := o["input_audio"]
				hit = m.data != "" && str(a, "data") == m.data && "audio/"+str(a, "format") == m.mediaType
			case m.kind == "document" && str(o, "type") == "file":
				hit, title = m.data != "" && str(o["file"], "file_data") == dataURL, str(o["file"], "filename")
			}
		case "upa":
			if m.kind == "audio" {
				return // the Messages API takes no audio
			}
			src, _ := o["source"].(map[string]any)
			if str(o, "type") != m.kind || src == nil {
				return
			}
			switch title = str(o, "title"); str(src, "type") {
			case "url":
				hit = m.url != "" && str(src, "url") == m.url
			case "base64":
				hit = m.data != "" && str(src, "data") == m.data && str(src, "media_type") == m.mediaType
			case "text":
				hit = m.text != "" && str(src, "data") == m.text && str(src, "media_type") == "text/plain"
			}
		case "gem":
			in, _ := o["inlineData"].(map[string]any)
			want, mt := m.data, m.mediaType
			if m.text != "" {
				want, mt = base64.StdEncoding.EncodeToString([]byte(m.text)), "text/plain"
			}
			hit = in != nil && want != "" && str(in, "data") == want && str(in, "mimeType") == mt
			title = "\x00" // Gemini has no place for a title
		case "rs":
			switch {
			case m.kind == "image" && str(o, "type") == "input_image":
				u := str(o, "image_url")
				hit = u != "" && (u == m.url || u == dataURL)
			case m.kind == "document" && str(o, "type") == "input_file":
				if m.url != "" {
					hit = str(o, "file_url") == m.url
				} else {
					hit = m.data != "" && str(o, "file_data") == dataURL
				}
				title = str(o, "filename")
			}
		}
		if hit {
			found = true
			titled = titled || title == m.title
		}
	})
	return found, titled
}

// visit calls f for every object in v.
func visit(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, e := range x {
			visit(e, f)
		}
	case []any:
		for _, e := range x {
			visit(e, f)
		}
	}
}

// checkMedia checks a translated request: each of its images and
// documents reached the upstream in the target dialect's form, and what
// did not go with it (OpenAI's detail; a title where the dialect has no
// place for one) is named in dropped.
func checkMedia(t *testing.T, target string, sent any, media []medium, dropped []string) {
	t.Helper()
	for _, m := range media {
		found, titled := carriedIn(target, sent, m)
		if !found {
			t.Errorf("the %s %+.80v did not reach the %s upstream in its dialect's form", m.kind, m, target)
		}
		if m.detail && !coveredBy("image detail", dropped) {
			t.Errorf("an image's detail was not named dropped: %v", dropped)
		}
		if m.title != "" && !titled && !coveredBy("document title", dropped) {
			t.Errorf("the title %q neither reached the %s upstream nor was named dropped: %v", m.title, target, dropped)
		}
	}
}

// mediaRows are the matrix's outcomes for the corpus's images and
// documents: what detour translates must stay translated.
var mediaRows = map[string]string{
	"openai-to-upa/03-image-url-https.json":                 "translated", // image by URL
	"openai-to-gem/03-image-url-https.json":                 "refused",    // Gemini takes no image URL
	"openai-to-upa/04-image-base64-detail.json":             "translated", // detail dropped, named
	"openai-to-gem/04-image-base64-detail.json":             "refused",
	"openai-to-upa/06-file-pdf-base64.json":                 "translated", // file name as title
	"openai-to-gem/06-file-pdf-base64.json":                 "translated", // file name dropped, named
	"openai-to-upa/07-file-id.json":                         "refused",
	"openai-to-gem/05-input-audio.json":                     "refused", // modalities, audio output
	"anthropic-to-up/06-image-base64.json":                  "translated",
	"anthropic-to-gem/06-image-base64.json":                 "translated",
	"anthropic-to-up/07-image-url.json":                     "translated",
	"anthropic-to-gem/07-image-url.json":                    "refused",
	"anthropic-to-up/08-document-pdf-base64.json":           "translated",
	"anthropic-to-gem/08-document-pdf-base64.json":          "translated",
	"anthropic-to-up/09-document-pdf-url-cached.json":       "refused",    // chat completions takes no PDF URL
	"anthropic-to-up/10-document-text-citations.json":       "refused",    // citations, context
	"anthropic-to-gem/15-tool-result-string-and-image.json": "refused",    // an image in a tool result
	"openai-to-rs/03-image-url-https.json":                  "translated", // input_image by URL
	"openai-to-rs/04-image-base64-detail.json":              "translated", // detail dropped, named
	"openai-to-rs/05-input-audio.json":                      "refused",    // the Responses API takes no audio
	"openai-to-rs/06-file-pdf-base64.json":                  "translated", // input_file, file name kept
	"openai-to-rs/07-file-id.json":                          "refused",
	"anthropic-to-rs/07-image-url.json":                     "translated",
	"anthropic-to-rs/08-document-pdf-base64.json":           "translated",
	"anthropic-to-rs/09-document-pdf-url-cached.json":       "translated", // input_file by file_url
	"anthropic-to-rs/10-document-text-citations.json":       "refused",    // a text document has no Responses form
}

// isMediaNeed reports whether need, in beyondCanonical's words, is an
// image or a document part, which checkMedia checks instead.
func isMediaNeed(need string) bool {
	return need == "image_url" || need == "file" || need == "image" || need == "document" || need == "input_audio"
}

// Audio on the OpenAI surface reaches a Gemini target as inlineData; an
// Anthropic target, which takes no audio, is skipped before any send.
func TestCrossDialect_AudioReachesGeminiOnly(t *testing.T) {
	up := &dialectUpstream{}
	ts, book := corpusGateway(t, up)
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","messages":[{"role":"user","content":[{"type":"text","text":"What is in this recording?"},` +
			`{"type":"input_audio","input_audio":{"data":"UklGRiwAAABXQVZF","format":"wav"}}]}]}`)
	}
	resp, out := postResp(t, ts, "/v1/chat/completions", body("gem/m"))
	up.mu.Lock()
	sent := up.last
	up.mu.Unlock()
	if resp.StatusCode != 200 || !strings.Contains(string(sent), `{"inlineData":{"mimeType":"audio/wav","data":"UklGRiwAAABXQVZF"}}`) {
		t.Errorf("to Gemini: %d %s; the upstream got %s", resp.StatusCode, out, sent)
	}
	before := len(book.Records())
	resp, out = postResp(t, ts, "/v1/chat/completions", body("upa/m"))
	recs := book.Records()[before:]
	if resp.StatusCode != 400 || len(recs) != 1 || !strings.Contains(recs[0].Reason, "audio input") {
		t.Errorf("to Anthropic: %d %s, ledger %+v: want a skip naming the audio", resp.StatusCode, out, recs)
	}
}
