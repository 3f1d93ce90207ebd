package simulate

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Question is what a scripted Provider.Answer sees of a chat request.
type Question struct {
	// Provider and Model are the provider's name and the model asked for.
	Provider, Model string
	// System is the system prompt: the text of OpenAI's system and developer
	// messages (joined with "\n", empty ones skipped), Anthropic's "system"
	// string or text blocks, Gemini's systemInstruction text parts; "" when
	// there is none.
	System string
	// Prompt is the text of the last message with the user role (Gemini:
	// role "user" or none), its text parts joined with "\n"; "" when no
	// message has that role or the message has no text (tool results only).
	Prompt string
	// MaxTokens is the request's output limit (OpenAI max_completion_tokens,
	// else max_tokens; Anthropic max_tokens; Gemini
	// generationConfig.maxOutputTokens); 0 when absent.
	MaxTokens int
	// Seq is the Server's sequence number of the request, distinct per
	// request (shared by every provider of the Server, so not contiguous
	// for one provider).
	Seq uint64
}

// Reply is a scripted answer, what a Provider.Answer returns.
type Reply struct {
	// Text is the whole text of the answer, sent as it is (it may be empty).
	// A stream splits it into deltas as the default text is split (at each
	// space or slash), never inside a rune.
	Text string
	// Truncated ends the answer as cut at its output limit: finish_reason
	// "length" (OpenAI), stop_reason "max_tokens" (Anthropic), finishReason
	// "MAX_TOKENS" (Gemini). Text is not shortened.
	Truncated bool
	// OutputTokens is the completion's token count in the usage; 0 (or less)
	// estimates it from Text as for the default text: its runes / 4, rounded up.
	OutputTokens int
}

// ask builds the Question a scripted Answer gets for r, sent to provider.
func (r *chatReq) ask(provider string, seq uint64) Question {
	q := Question{Provider: provider, Model: r.model, MaxTokens: r.maxTokens, Seq: seq}
	if r.question != nil {
		q.System, q.Prompt = r.question()
	}
	return q
}

// scriptedText asks t's Answer for the text of a's answer to req and applies
// the Reply: the pieces of its text (pieces of them when above 0, the text
// unchanged), the finish and the completion tokens.
func (a *answer) scriptedText(t *target, req *chatReq, seq uint64, pieces int) {
	rep := t.Answer(req.ask(t.Name, seq))
	a.parts = textPieces(rep.Text)
	if pieces > 0 {
		a.parts = splitPieces(a.parts, pieces)
	}
	a.text = rep.Text
	a.completion = (utf8.RuneCountInString(a.text) + 3) / 4
	if rep.OutputTokens > 0 {
		a.completion = rep.OutputTokens
	}
	if rep.Truncated {
		a.finish = "length"
	}
}

// splitPieces returns parts as n > 0 pieces without changing their text:
// the last ones joined when there are more than n, else the longest piece
// (the first of equals) cut in two at its middle rune until there are n, or
// fewer when every piece is down to one rune.
func splitPieces(parts []string, n int) []string {
	if n <= len(parts) {
		return fitPieces(parts, n)
	}
	out := append(make([]string, 0, n), parts...)
	for len(out) < n {
		at, most := -1, 1
		for i, p := range out {
			if c := utf8.RuneCountInString(p); c > most {
				at, most = i, c
			}
		}
		if at < 0 {
			break
		}
		p, cut := out[at], 0
		for range most / 2 {
			_, size := utf8.DecodeRuneInString(out[at][cut:])
			cut += size
		}
		out = append(out, "")
		copy(out[at+2:], out[at+1:])
		out[at], out[at+1] = p[:cut], p[cut:]
	}
	return out
}

// blockText is the text of an OpenAI or Anthropic content: a string, or the
// text of its parts (blocks) of type "text" joined with "\n".
func blockText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// geminiText is the text of a Gemini content: its text parts joined with "\n".
func geminiText(c geminiContentIn) string {
	var texts []string
	for _, p := range c.Parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
