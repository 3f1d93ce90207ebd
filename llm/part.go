package llm

// PartKind is what a Part holds.
type PartKind string

// The kinds of Part.
const (
	// PartText is text (Part.Text).
	PartText PartKind = "text"
	// PartImage is an image, by URL or inline (Part.URL, or Part.Data
	// and Part.MediaType).
	PartImage PartKind = "image"
	// PartDocument is a document, typically a PDF: by URL, inline
	// (Part.Data and Part.MediaType), or plain text (Part.Text with
	// MediaType "text/plain"); Part.Title optionally names it.
	PartDocument PartKind = "document"
	// PartAudio is inline audio (Part.Data and Part.MediaType:
	// "audio/wav", "audio/mp3").
	PartAudio PartKind = "audio"
)

// Part is one piece of a message's content when it is more than text: an
// image, a document or audio beside text, in the order the client wrote
// them (Message.Parts). Exactly one of URL, Data and (for a plain-text
// document) Text holds the content of an image, a document or audio.
type Part struct {
	// Kind is what the part holds.
	Kind PartKind `json:"kind"`
	// Text is the text of a PartText part, or the content of a plain-text
	// document (MediaType "text/plain", e.g. Anthropic's text source).
	Text string `json:"text,omitempty"`
	// URL is where the provider fetches the image or document from
	// (https). Empty for inline content. The request names no media type
	// for it unless MediaType is set.
	URL string `json:"url,omitempty"`
	// Data is inline content, base64-encoded (standard alphabet, as every
	// dialect carries it: detour never decodes it). Empty for a URL.
	Data string `json:"data,omitempty"`
	// MediaType is the IANA media type of the content, lower case:
	// "image/png", "image/jpeg", "application/pdf", "text/plain",
	// "audio/wav", "audio/mp3" (as Gemini and OpenAI's "mp3" name it).
	// Required with Data; optional with a URL.
	MediaType string `json:"media_type,omitempty"`
	// Title names a document: Anthropic's document title, OpenAI's file
	// name. Optional; a target that has no place for it names
	// NeedDocumentTitle as dropped.
	Title string `json:"title,omitempty"`
}

// The needs (Request.Needs) of a message's images, documents and audio: a
// target of another dialect carries each only if its Client says so
// (Carrier). Part.Need names the one of a part.
const (
	// NeedImage is an inline image of a type every dialect takes
	// (image/png, image/jpeg, image/webp). Another inline type is
	// NeedImage + " (" + media type + ")", e.g. "image input (image/gif)".
	NeedImage = "image input"
	// NeedImageURL is an image by URL, fetched by the provider.
	NeedImageURL = "image url input"
	// NeedImageDetail is OpenAI's image detail (low, high): droppable.
	NeedImageDetail = "image detail"
	// NeedDocument is an inline PDF. Another inline type is NeedDocument
	// + " (" + media type + ")", e.g. "document input (text/plain)".
	NeedDocument = "document input"
	// NeedDocumentURL is a PDF by URL, fetched by the provider.
	NeedDocumentURL = "document url input"
	// NeedDocumentTitle is a document's title or file name (Part.Title):
	// droppable.
	NeedDocumentTitle = "document title"
	// NeedAudio is inline WAV or MP3 audio. Another type is NeedAudio +
	// " (" + media type + ")".
	NeedAudio = "audio input"
)

// commonImage are the inline image types every dialect takes.
var commonImage = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true}

// Need names what a target of another dialect must carry for p: one of
// the Need constants, NeedImage, NeedDocument or NeedAudio with the media
// type, "audio url input", or "" for text. A document's Title is a need
// of its own (NeedDocumentTitle).
func (p *Part) Need() string {
	switch p.Kind {
	case PartImage:
		switch {
		case p.URL != "":
			return NeedImageURL
		case commonImage[p.MediaType]:
			return NeedImage
		}
		return NeedImage + " (" + p.MediaType + ")"
	case PartDocument:
		switch {
		case p.URL != "":
			return NeedDocumentURL
		case p.MediaType == "application/pdf":
			return NeedDocument
		}
		return NeedDocument + " (" + p.MediaType + ")"
	case PartAudio:
		switch {
		case p.URL != "":
			return "audio url input"
		case p.MediaType == "audio/wav" || p.MediaType == "audio/mp3":
			return NeedAudio
		}
		return NeedAudio + " (" + p.MediaType + ")"
	}
	return ""
}
