package fit

import (
	"math"
	"unsafe"

	"github.com/detourhq/detour/llm"
)

// Estimate returns an estimate of the input tokens req takes for a model
// of the given family ("llama-3.3-70b", "claude-sonnet-4", "gpt-4o",
// "gemini-2.5-flash", "" for unknown; a model name works too) and the
// relative error the estimator is known to have (0.3 = ±30%): the true
// count is expected within tokens×(1±relErr).
//
// It needs no tokenizer. It counts each message's framing (its chat
// template's tokens), its text by the family's rates for each kind of
// text (English-like words and their letters, words of other
// Latin-script languages, digit groups, punctuation, newlines, Cyrillic,
// CJK, Hangul, other scripts, symbols), its tool calls, the tool
// definitions, tool choice and response format, and images, documents
// and audio by each provider's published rule where the size is known,
// else by a guess (see partCost).
//
// relErr is the token-weighted error of those parts. For text it is
// measured, not assumed, where the tokenizer is published: against
// o200k, cl100k, Llama 3, DeepSeek V3 and Qwen 3 the estimate of every
// text of testdata/ is within ±18% to ±21%, and ±28% to ±36% on texts the
// rates were not fitted to, so text gets ±30%. It is partly an
// assumption for Gemini (fitted to Gemma 3's tokenizer, which Google
// says is Gemini 2.0's: ±35%), an assumption for Claude (whose tokenizer
// is not published: ±40%, see the claude profile), ±45% for an unknown
// family, ±50% (±110% unknown) for scripts with a single reference
// sample (Arabic, Hindi, ...), and ±60% for media whose size is guessed.
// It allocates nothing.
func Estimate(req *llm.Request, family string) (tokens int, relErr float64) {
	if req == nil {
		return 0, 0
	}
	p := profileOf(family)
	tokens, errTokens := p.requestCost(req)
	for i := range req.Messages {
		t, e := p.messageCost(&req.Messages[i])
		tokens += t
		errTokens += e
	}
	if tokens == 0 {
		return 0, 0
	}
	return tokens, errTokens / float64(tokens)
}

// requestCost is what req costs beside its messages: its framing, tools,
// tool choice and response format.
func (p *profile) requestCost(req *llm.Request) (tokens int, errTokens float64) {
	t := float64(p.req)
	var e float64
	if len(req.Tools) > 0 {
		t += float64(p.tools)
		e += p.textErr * float64(p.tools)
	}
	for i := range req.Tools {
		tool := &req.Tools[i]
		tt, te := p.textCost(tool.Name)
		t, e = t+tt+8, e+te
		tt, te = p.textCost(tool.Description)
		t, e = t+tt, e+te
		tt, te = p.textCost(bytesString(tool.Parameters))
		t, e = t+tt, e+te
	}
	tt, te := p.textCost(bytesString(req.ToolChoice))
	t, e = t+tt, e+te
	tt, te = p.textCost(bytesString(req.ResponseFormat))
	t, e = t+tt, e+te
	return int(math.Ceil(t)), e
}

// messageCost is what m costs: its framing, name, text, parts, tool calls
// and the id of the call it answers, rounded up to a whole token.
func (p *profile) messageCost(m *llm.Message) (tokens int, errTokens float64) {
	t := float64(p.msg)
	var e float64
	if m.Name != "" {
		tt, te := p.textCost(m.Name)
		t, e = t+tt+1, e+te
	}
	tt, te := p.textCost(m.Content)
	t, e = t+tt, e+te
	for i := range m.Parts {
		tt, te := partCost(&m.Parts[i], p)
		t, e = t+tt, e+te
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		tt, te := p.textCost(c.Name)
		t, e = t+tt+4, e+te
		tt, te = p.textCost(c.ID)
		t, e = t+tt, e+te
		tt, te = p.textCost(c.Arguments)
		t, e = t+tt, e+te
	}
	tt, te = p.textCost(m.ToolCallID)
	t, e = t+tt, e+te
	return int(math.Ceil(t)), e
}

// textCost is what s costs, and the part of it that is error.
func (p *profile) textCost(s string) (tokens, errTokens float64) {
	if s == "" {
		return 0, 0
	}
	t, script := p.cost(scan(s))
	return t + script, p.textErr*t + p.scriptErr*script
}

// bytesString views b as a string, without a copy: it is only read.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
