package fit

import (
	"math"

	"github.com/detourhq/detour/llm"
)

// media says how a family prices images, documents and audio.
type media int

const (
	mediaAny    media = iota // unknown: the most any of the others would
	mediaOpenAI              // gpt-4o and its kin
	mediaClaude
	mediaGemini
)

// The errors of media costs. A size read from the image's own header
// prices it by the provider's published rule; anything else is a guess.
const (
	knownErr = 0.15 // a published rule applied to a known size
	guessErr = 0.6  // a guess: size, pages or duration unknown
)

// partCost is what p costs by prof, and the part of it that is error.
func partCost(p *llm.Part, prof *profile) (tokens, errTokens float64) {
	switch p.Kind {
	case llm.PartImage:
		w, h, ok := imageSize(p.Data)
		if !ok {
			return imageGuess(prof.media), guessErr * imageGuess(prof.media)
		}
		t := imageTokens(prof.media, w, h)
		return t, knownErr * t
	case llm.PartDocument:
		if p.Text != "" || p.Data == "" && p.URL == "" {
			t, e := prof.textCost(p.Title)
			tt, te := prof.textCost(p.Text)
			return t + tt, e + te
		}
		t := documentTokens(prof.media, p)
		return t, guessErr * t
	case llm.PartAudio:
		t := audioTokens(p)
		return t, guessErr * t
	}
	return prof.textCost(p.Text)
}

// imageGuess is the cost of an image whose size is unknown (a URL, or a
// format whose header imageSize does not read). These are guesses: a
// large photo as each provider scales it (OpenAI: 2048x768 at high
// detail, 8 tiles; Anthropic: about 1.15 megapixels, its most; Gemini: 4
// tiles of 768x768).
func imageGuess(m media) float64 {
	switch m {
	case mediaOpenAI:
		return 1445
	case mediaGemini:
		return 1032
	}
	return 1600
}

// imageTokens prices a w x h image by the provider's published rule.
func imageTokens(m media, w, h int) float64 {
	switch m {
	case mediaOpenAI:
		return openAIImage(w, h)
	case mediaClaude:
		return claudeImage(w, h)
	case mediaGemini:
		return geminiImage(w, h)
	}
	return max(openAIImage(w, h), claudeImage(w, h), geminiImage(w, h))
}

// openAIImage: high detail. Fit in 2048x2048, then the short side down to
// 768; 85 tokens plus 170 for each 512x512 tile.
func openAIImage(w, h int) float64 {
	fw, fh := float64(w), float64(h)
	if s := 2048 / max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	if s := 768 / min(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	return 85 + 170*math.Ceil(fw/512)*math.Ceil(fh/512)
}

// claudeImage: the long edge at most 1568 pixels and the area at most
// about 1.15 megapixels, then width x height / 750.
func claudeImage(w, h int) float64 {
	fw, fh := float64(w), float64(h)
	if s := 1568 / max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	if a := fw * fh; a > 1.15e6 {
		s := math.Sqrt(1.15e6 / a)
		fw, fh = fw*s, fh*s
	}
	return math.Ceil(fw * fh / 750)
}

// geminiImage: 258 tokens for an image within 384x384, else 258 for each
// 768x768 tile.
func geminiImage(w, h int) float64 {
	if w <= 384 && h <= 384 {
		return 258
	}
	return 258 * math.Ceil(float64(w)/768) * math.Ceil(float64(h)/768)
}

// documentTokens guesses a PDF's cost from its size: one page per 100 KB
// inline (five for a URL, whose size is unknown), and per page what the
// provider says a page costs (Gemini: 258; Anthropic: 1,500 to 3,000 of
// text plus the page's image; OpenAI: its text plus the page's image).
// Every number here is a guess.
func documentTokens(m media, p *llm.Part) float64 {
	pages := 5.0
	if p.Data != "" {
		pages = math.Ceil(float64(len(p.Data)) * 3 / 4 / 100e3)
	}
	switch m {
	case mediaGemini:
		return 258 * pages
	case mediaOpenAI:
		return 1500 * pages
	}
	return 2500 * pages
}

// audioTokens guesses audio's cost at 32 tokens a second (Gemini's rule;
// a guess for others), its duration read from a WAV header, else taken
// as 128 kbit/s of inline data, else (a URL) a minute.
func audioTokens(p *llm.Part) float64 {
	secs := 60.0
	if p.Data != "" {
		n := float64(len(p.Data)) * 3 / 4
		rate := 16000.0
		if r := wavByteRate(p.Data); r > 0 {
			rate = float64(r)
		}
		secs = n / rate
	}
	return math.Ceil(32 * secs)
}
