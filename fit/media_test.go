package fit

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/detourhq/detour/llm"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// encoded returns a w x h image in format, base64.
func encoded(t *testing.T, format string, w, h int) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b64(buf.Bytes())
}

// webp returns the header of a WebP image of one of the three kinds.
func webp(kind string, w, h int) string {
	b := []byte("RIFF\x00\x00\x00\x00WEBP" + kind)
	b = append(b, make([]byte, 20)...)
	switch kind {
	case "VP8 ":
		binary.LittleEndian.PutUint16(b[26:], uint16(w))
		binary.LittleEndian.PutUint16(b[28:], uint16(h))
	case "VP8L":
		binary.LittleEndian.PutUint32(b[21:], uint32(w-1)|uint32(h-1)<<14)
	case "VP8X":
		b[24], b[25], b[26] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
		b[27], b[28], b[29] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	}
	return b64(b)
}

func TestImageSize(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		w, h       int
	}{
		{"png", encoded(t, "png", 1024, 768), 1024, 768},
		{"jpeg", encoded(t, "jpeg", 640, 3000), 640, 3000},
		{"gif", encoded(t, "gif", 37, 5), 37, 5},
		{"webp lossy", webp("VP8 ", 800, 600), 800, 600},
		{"webp lossless", webp("VP8L", 4000, 3), 4000, 3},
		{"webp extended", webp("VP8X", 70000, 2), 70000, 2},
	} {
		w, h, ok := imageSize(tc.data)
		if !ok || w != tc.w || h != tc.h {
			t.Errorf("%s: %dx%d %v, want %dx%d", tc.name, w, h, ok, tc.w, tc.h)
		}
	}
	for _, bad := range []string{"", "!!!!", b64([]byte("not an image at all, just text")), encoded(t, "png", 10, 10)[:20],
		b64([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01}), b64([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF})} {
		if w, h, ok := imageSize(bad); ok {
			t.Errorf("imageSize(%.20q) = %dx%d, want not ok", bad, w, h)
		}
	}
}

// The providers' published examples.
func TestImageTokens(t *testing.T) {
	for _, tc := range []struct {
		m    media
		w, h int
		want float64
	}{
		{mediaOpenAI, 1024, 1024, 765},  // 4 tiles
		{mediaOpenAI, 2048, 4096, 1105}, // scaled to 768x1536: 6 tiles
		{mediaOpenAI, 100, 100, 255},    // 1 tile
		{mediaClaude, 1000, 1000, 1334},
		{mediaClaude, 200, 200, 54},
		{mediaClaude, 4000, 4000, 1534}, // capped near 1.15 megapixels
		{mediaGemini, 384, 300, 258},
		{mediaGemini, 1024, 1024, 1032}, // 4 tiles
		{mediaAny, 1000, 1000, 1334},    // the most of the three
	} {
		if got := imageTokens(tc.m, tc.w, tc.h); got != tc.want {
			t.Errorf("media %d, %dx%d: %v tokens, want %v", tc.m, tc.w, tc.h, got, tc.want)
		}
	}
}

func TestEstimate_Media(t *testing.T) {
	msg := func(p llm.Part) *llm.Request {
		return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "what is this?", Parts: []llm.Part{p}}}}
	}
	base, _ := Estimate(msg(llm.Part{Kind: llm.PartText}), "gpt-4o")
	sized, e1 := Estimate(msg(llm.Part{Kind: llm.PartImage, MediaType: "image/png", Data: encoded(t, "png", 1024, 1024)}), "gpt-4o")
	url, e2 := Estimate(msg(llm.Part{Kind: llm.PartImage, URL: "https://example.com/cat.jpg"}), "gpt-4o")
	if sized-base != 765 || url-base != 1445 || e2 <= e1 {
		t.Errorf("gpt-4o image: %d tokens known (±%.0f%%), %d guessed (±%.0f%%); want 765, 1445 and a larger error for the guess",
			sized-base, 100*e1, url-base, 100*e2)
	}
	// Audio: 32 tokens a second, from a WAV header's byte rate.
	wav := make([]byte, 44+32000*10) // 10 s of 16 kHz 16-bit mono
	copy(wav, "RIFF\x00\x00\x00\x00WAVEfmt ")
	binary.LittleEndian.PutUint32(wav[28:], 32000)
	audio, _ := Estimate(msg(llm.Part{Kind: llm.PartAudio, MediaType: "audio/wav", Data: b64(wav)}), "gemini-2.5-flash")
	gbase, _ := Estimate(msg(llm.Part{Kind: llm.PartText}), "gemini-2.5-flash")
	if d := audio - gbase; d < 320 || d > 322 {
		t.Errorf("10 s of WAV: %d tokens, want 320", d)
	}
	// A plain-text document counts as its text; a PDF by a guess per page.
	doc, _ := Estimate(msg(llm.Part{Kind: llm.PartDocument, MediaType: "text/plain", Text: words(1000)}), "gpt-4o")
	pdf, e3 := Estimate(msg(llm.Part{Kind: llm.PartDocument, MediaType: "application/pdf", Data: b64(make([]byte, 250e3))}), "claude-sonnet-4")
	if doc-base < 1000 || doc-base > 1250 || pdf < 7500 || e3 < 0.5 {
		t.Errorf("text document %d tokens, 250 KB PDF %d (±%.0f%%)", doc-base, pdf, 100*e3)
	}
}
