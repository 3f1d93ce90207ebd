package simulate

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The shapes below are OpenAI's chat completions as recorded in
// https://github.com/maruel/genai (providers/openaichat/testdata/TestClient/
// Scoreboard/gpt-4.1-nano/GenSync-Text.yaml, GenStream-Text.yaml,
// GenSync-Tools-SquareRoot-1.yaml, GenStream-Tools-SquareRoot-1.yaml, commit
// 89838964649b99f965ab661fde507f5f4bddf6ae): field order, null fields, a
// 2-space pretty body ending in a newline, compact chunks, "usage": null on
// every chunk only when include_usage asked for the extra usage chunk, and an
// "obfuscation" padding field on OpenAI's chunks.

// end says how an answer ends.
type end int

const (
	endNormal      end = iota // finish_reason chunk, usage chunk if asked, [DONE]
	endFiltered               // finish_reason content_filter, no content
	endCut                    // connection closed after Fault.Chunks events
	endErrorFrame             // error frame after Fault.Chunks events
	endStall                  // silence after Fault.Chunks events
	endMalformed              // a garbled event after Fault.Chunks events
	endNoDone                 // endNormal without the terminal marker
	endGarbledOnce            // endNormal with a garbled event after Fault.Chunks events
)

// headOnly reports whether the answer stops after Fault.Chunks events of its head.
func (e end) headOnly() bool {
	return e == endCut || e == endErrorFrame || e == endStall || e == endMalformed
}

// answer is one successful completion before encoding.
type answer struct {
	id, model, fingerprint string
	created                int64
	text                   string
	parts                  []string // the stream deltas of text
	tool                   *toolPick
	callID                 string
	finish                 string
	prompt, completion     int
	cached                 int // prompt tokens the cache served
	includeUsage           bool
	obfuscate              bool
	seed                   uint64
}

func newAnswer(t *target, req *chatReq, seq uint64, created int64, filtered bool, pieces int) *answer {
	a := &answer{
		id:           "chatcmpl-" + token(seq, 29, base62),
		model:        req.model,
		fingerprint:  "fp_" + token(hash(t.Name+"/"+req.model), 10, hexDigits),
		created:      created,
		finish:       "stop",
		prompt:       req.promptTokens,
		cached:       req.cached,
		includeUsage: req.includeUsage,
		obfuscate:    req.obfuscate && style(t.Style) == StyleOpenAI,
		seed:         seq,
	}
	switch {
	case filtered:
		a.finish = "content_filter"
	case req.tool != nil:
		a.tool, a.finish = req.tool, "tool_calls"
		a.callID = "call_" + token(seq^0x5eed, 24, base62)
		a.completion = (len(req.tool.name) + len(req.tool.args) + 3) / 4
	case t.Answer != nil:
		a.scriptedText(t, req, seq, pieces)
	default:
		a.parts = textPieces("Hello from " + t.Name + "/" + req.model + ".")
		if pieces > 0 {
			a.parts = fitPieces(a.parts, pieces)
		}
		a.text = strings.Join(a.parts, "")
		a.completion = (utf8.RuneCountInString(a.text) + 3) / 4
	}
	return a
}

// pieces returns the stream deltas of the answer text (or of the tool arguments).
func (a *answer) pieces() []string {
	if a.tool != nil {
		return splitRunes(a.tool.args, 6)
	}
	return a.parts
}

// textPieces splits text into stream deltas: a new one starts at each space
// or slash, and at a final period.
func textPieces(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if i > start && (r == ' ' || r == '/' || (r == '.' && i == len(text)-1)) {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// fitPieces returns exactly n > 0 pieces: parts followed by the words " k"
// (k the piece's 1-based position), or parts with their last ones joined.
func fitPieces(parts []string, n int) []string {
	if n <= len(parts) {
		out := append([]string(nil), parts[:n-1]...)
		return append(out, strings.Join(parts[n-1:], ""))
	}
	out := append(make([]string, 0, n), parts...)
	for k := len(parts) + 1; k <= n; k++ {
		out = append(out, " "+strconv.Itoa(k))
	}
	return out
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func (a *answer) usage() usageJSON {
	u := usageJSON{PromptTokens: a.prompt, CompletionTokens: a.completion, TotalTokens: a.prompt + a.completion}
	u.PromptTokensDetails.CachedTokens = a.cached
	return u
}

type functionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type toolCallJSON struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionJSON `json:"function"`
}

// completionJSON is the non-streamed body.
func (a *answer) completionJSON() []byte {
	type message struct {
		Role        string         `json:"role"`
		Content     *string        `json:"content"`
		ToolCalls   []toolCallJSON `json:"tool_calls,omitempty"`
		Refusal     *string        `json:"refusal"`
		Annotations []struct{}     `json:"annotations"`
	}
	type choice struct {
		Index        int       `json:"index"`
		Message      message   `json:"message"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
	}
	v := struct {
		ID                string    `json:"id"`
		Object            string    `json:"object"`
		Created           int64     `json:"created"`
		Model             string    `json:"model"`
		Choices           []choice  `json:"choices"`
		Usage             usageJSON `json:"usage"`
		ServiceTier       string    `json:"service_tier"`
		SystemFingerprint string    `json:"system_fingerprint"`
	}{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		Usage: a.usage(), ServiceTier: "default", SystemFingerprint: a.fingerprint}
	m := message{Role: "assistant", Annotations: []struct{}{}}
	switch {
	case a.tool != nil:
		m.ToolCalls = []toolCallJSON{{ID: a.callID, Type: "function", Function: functionJSON{Name: a.tool.name, Arguments: a.tool.args}}}
	case a.finish != "content_filter":
		m.Content = &a.text
	}
	v.Choices = []choice{{Message: m, FinishReason: a.finish}}
	return append(marshalIndent(v, "  "), '\n')
}

type deltaJSON struct {
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	ToolCalls []toolCallJSON  `json:"tool_calls,omitempty"`
	Refusal   json.RawMessage `json:"refusal,omitempty"`
}

type choiceDeltaJSON struct {
	Index        int       `json:"index"`
	Delta        deltaJSON `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// chunk encodes one chat.completion.chunk; choices nil is the usage chunk.
func (a *answer) chunk(n int, choices []choiceDeltaJSON, usage *usageJSON) []byte {
	v := struct {
		ID                string            `json:"id"`
		Object            string            `json:"object"`
		Created           int64             `json:"created"`
		Model             string            `json:"model"`
		ServiceTier       string            `json:"service_tier"`
		SystemFingerprint string            `json:"system_fingerprint"`
		Choices           []choiceDeltaJSON `json:"choices"`
		Usage             json.RawMessage   `json:"usage,omitempty"`
		Obfuscation       string            `json:"obfuscation,omitempty"`
	}{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
		ServiceTier: "default", SystemFingerprint: a.fingerprint, Choices: choices}
	if v.Choices == nil {
		v.Choices = []choiceDeltaJSON{}
	}
	switch {
	case usage != nil:
		v.Usage, _ = marshal(usage)
	case a.includeUsage:
		v.Usage = json.RawMessage("null")
	}
	if a.obfuscate {
		x := splitmix(splitmix(a.seed^0x6f626675736361) + uint64(n))
		v.Obfuscation = token(x, 1+int(x%15), base62)
	}
	b, _ := marshal(v)
	return b
}

// events returns the data of the stream's events: head (the role chunk and
// the content or argument deltas, where a cut may fall) and tail (the
// finish_reason chunk and, when asked, the usage chunk).
func (a *answer) events() (head, tail [][]byte) {
	zero := 0
	role := deltaJSON{Role: "assistant", Content: json.RawMessage(`""`), Refusal: json.RawMessage("null")}
	if a.tool != nil {
		role.Content = json.RawMessage("null")
		role.ToolCalls = []toolCallJSON{{Index: &zero, ID: a.callID, Type: "function", Function: functionJSON{Name: a.tool.name}}}
	}
	head = append(head, a.chunk(0, []choiceDeltaJSON{{Delta: role}}, nil))
	if a.finish != "content_filter" {
		for _, p := range a.pieces() {
			var d deltaJSON
			if a.tool != nil {
				d.ToolCalls = []toolCallJSON{{Index: &zero, Function: functionJSON{Arguments: p}}}
			} else {
				d.Content, _ = marshal(p)
			}
			head = append(head, a.chunk(len(head), []choiceDeltaJSON{{Delta: d}}, nil))
		}
	}
	fin := a.finish
	tail = append(tail, a.chunk(len(head), []choiceDeltaJSON{{FinishReason: &fin}}, nil))
	if a.includeUsage {
		u := a.usage()
		tail = append(tail, a.chunk(len(head)+1, nil, &u))
	}
	return head, tail
}

// errorFrame is the data of OpenAI's in-stream error, as captured in
// https://github.com/sashabaranov/go-openai/issues/69.
func errorFrame(requestID string) []byte {
	v := struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}{}
	v.Error.Message = "The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if you keep seeing this error. (Please include the request ID " + requestID + " in your email.)"
	v.Error.Type = "server_error"
	b, _ := marshal(v)
	return b
}

// openaiWire encodes the answer in OpenAI's chat completions.
func (a *answer) openaiWire(ec errCtx, stream bool) wireAnswer {
	wa := wireAnswer{
		header:           headerOf("X-Request-Id", ec.requestID),
		bodyType:         "application/json",
		streamHeader:     headerOf("Content-Type", "text/event-stream; charset=utf-8"),
		done:             dataFrame([]byte("[DONE]")),
		errorFrame:       dataFrame,
		defaultErrorData: errorFrame(ec.requestID),
	}
	if !stream {
		wa.body = a.completionJSON()
		return wa
	}
	head, tail := a.events()
	wa.preamble = 1 // the role chunk
	for i, ev := range head {
		wa.head = append(wa.head, dataFrame(ev))
		if i >= wa.preamble {
			wa.garbled = append(wa.garbled, garbledEvent{i, dataFrame(cutShort(ev))})
		}
	}
	for _, ev := range tail {
		wa.tail = append(wa.tail, dataFrame(ev))
	}
	return wa
}
