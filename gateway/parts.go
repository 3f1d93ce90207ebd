package gateway

import (
	"encoding/json"
	"strings"

	"github.com/detourhq/detour/llm"
)

// The images, documents and audio of a message. The parsers (openai.go,
// anthropic.go) put them in llm.Message.Parts and the needs walker
// (needs.go) names what a target of another dialect must carry for each,
// both through the functions below: a part is named by the need of the
// form it was given (llm.Part.Need), and one they cannot translate by a
// need no target carries.

// oaImageURL is an image_url part's image: a URL or a data URL.
type oaImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail"`
}

// oaFile is a file part's file: inline data (a data URL or bare base64)
// or the id of an uploaded file.
type oaFile struct {
	FileData string `json:"file_data"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
}

// oaAudio is an input_audio part's audio: base64 data and its format.
type oaAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// anSource is an image or document block's source.
type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// UnmarshalJSON reads a source object. Any other value (a search result's
// source is its URL), or an object of other shape, leaves s zero: it is
// for the API to judge, and for detour a source it does not translate.
func (s *anSource) UnmarshalJSON(b []byte) error {
	type plain anSource
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, (*plain)(s)) == nil {
		return nil
	}
	*s = anSource{}
	return nil
}

// The needs of parts no dialect is given in translation.
const (
	needImageUnread = llm.NeedImage + " (unreadable url)"
	needFile        = "file input"
)

// mediaType returns t in lower case, image/jpg read as image/jpeg.
func mediaType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	if t == "image/jpg" {
		return "image/jpeg"
	}
	return t
}

// splitDataURL reads "data:<media type>[;parameters];base64,<data>".
func splitDataURL(u string) (mt, data string, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", "", false
	}
	head, data, ok := strings.Cut(u[5:], ",")
	if !ok || len(head) < 7 || !strings.EqualFold(head[len(head)-7:], ";base64") {
		return "", "", false
	}
	mt, _, _ = strings.Cut(head, ";")
	return mediaType(mt), data, mt != ""
}

// oaImagePart reads an image_url part's URL: an http(s) URL, or a base64
// data URL.
func oaImagePart(img *oaImageURL) (llm.Part, bool) {
	if img == nil {
		return llm.Part{}, false
	}
	if mt, data, ok := splitDataURL(img.URL); ok && data != "" {
		return llm.Part{Kind: llm.PartImage, Data: data, MediaType: mt}, true
	}
	u := strings.ToLower(img.URL)
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return llm.Part{Kind: llm.PartImage, URL: img.URL}, true
	}
	return llm.Part{}, false
}

// oaFilePart reads a file part holding an inline PDF: a data URL, or bare
// base64 with a .pdf file name. A file id or another type is not read.
func oaFilePart(f *oaFile) (llm.Part, bool) {
	if f == nil || f.FileID != "" || f.FileData == "" {
		return llm.Part{}, false
	}
	mt, data, ok := splitDataURL(f.FileData)
	if !ok && !strings.HasPrefix(f.FileData, "data:") && strings.HasSuffix(strings.ToLower(f.Filename), ".pdf") {
		mt, data = "application/pdf", f.FileData
	}
	if mt != "application/pdf" || data == "" {
		return llm.Part{}, false
	}
	return llm.Part{Kind: llm.PartDocument, Data: data, MediaType: mt, Title: f.Filename}, true
}

// oaAudioPart reads an input_audio part: WAV or MP3, the formats chat
// completions takes.
func oaAudioPart(a *oaAudio) (llm.Part, bool) {
	if a == nil || a.Data == "" || a.Format != "wav" && a.Format != "mp3" {
		return llm.Part{}, false
	}
	return llm.Part{Kind: llm.PartAudio, Data: a.Data, MediaType: "audio/" + a.Format}, true
}

// oaPartNeeds names the needs of an image_url, file or input_audio part.
func oaPartNeeds(n *needs, p *oaPart) {
	switch p.Type {
	case "input_audio":
		if part, ok := oaAudioPart(p.InputAudio); ok {
			n.add(part.Need())
		} else {
			n.add(llm.NeedAudio + " (unreadable)")
		}
	case "image_url":
		if part, ok := oaImagePart(p.ImageURL); ok {
			n.add(part.Need())
		} else {
			n.add(needImageUnread)
		}
		if d := p.ImageURL; d != nil && d.Detail != "" && d.Detail != "auto" {
			n.add(llm.NeedImageDetail)
		}
	case "file":
		part, ok := oaFilePart(p.File)
		if !ok {
			n.add(needFile)
			return
		}
		n.add(part.Need())
		if part.Title != "" {
			n.add(llm.NeedDocumentTitle)
		}
	}
}

// anMediaPart reads an image or document block (typ): a base64 source
// with its data and media type, a url source with its URL, or a
// document's text source. Anthropic fetches only PDFs as documents by
// URL.
func anMediaPart(typ string, src *anSource, title string) (llm.Part, bool) {
	if src == nil || typ != "image" && typ != "document" {
		return llm.Part{}, false
	}
	p := llm.Part{Kind: llm.PartKind(typ)}
	switch {
	case src.Type == "base64" && src.Data != "" && src.MediaType != "":
		p.Data, p.MediaType = src.Data, mediaType(src.MediaType)
	case src.Type == "url" && src.URL != "":
		p.URL = src.URL
		if typ == "document" {
			p.MediaType = "application/pdf"
		}
	case src.Type == "text" && typ == "document":
		p.Text, p.MediaType = src.Data, "text/plain"
	default:
		return llm.Part{}, false
	}
	if typ == "document" {
		p.Title = title
	}
	return p, true
}

// anMediaNeeds names the needs of an image or document block (typ) whose
// source is src; title says whether it has a title.
func anMediaNeeds(n *needs, typ string, src *anSource, title bool) {
	part, ok := anMediaPart(typ, src, "")
	switch {
	case !ok && src == nil:
		n.add(typ + " input (no source)")
	case !ok:
		n.add(typ + " input (unreadable " + src.Type + " source)")
	default:
		n.add(part.Need())
	}
	if title && typ == "document" {
		n.add(llm.NeedDocumentTitle)
	}
}
