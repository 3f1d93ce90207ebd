package simulate

import (
	"net/http"
	"strings"
)

// Dialect is the wire format a fake provider speaks: its routes, request
// body, answers, streams and error envelopes. The zero Dialect is
// DialectOpenAI, so providers written before dialects existed keep working.
type Dialect string

// The dialects. Each one's answers and errors are encoded by this package from
// recorded real traffic (sources next to each encoder), independently of the
// client side in wire/*.
const (
	// DialectOpenAI is OpenAI's chat completions, served at
	// POST /{name}/v1/chat/completions (and GET /{name}/v1/models). Its error
	// envelopes follow the provider's Style. The zero Dialect means this one.
	DialectOpenAI Dialect = "openai"
	// DialectAnthropic is Anthropic's Messages API, served at
	// POST /{name}/v1/messages: x-api-key (or Authorization: Bearer) and an
	// anthropic-version header, message JSON, SSE streams with an `event:`
	// line per event, and {"type":"error","error":{...},"request_id"} errors
	// with a request-id header (anthropic.go, anthropic_errors.go).
	DialectAnthropic Dialect = "anthropic"
	// DialectGemini is Gemini's native generateContent API, served at
	// POST /{name}/v1beta/models/{model}:generateContent and
	// :streamGenerateContent?alt=sse (also under /v1/): x-goog-api-key (or
	// ?key=), GenerateContentResponse JSON, SSE `data:` chunks without [DONE],
	// and google.rpc.Status errors (gemini.go, gemini_errors.go).
	DialectGemini Dialect = "gemini"
	// DialectResponses is OpenAI's Responses API, served at
	// POST /{name}/v1/responses (and GET /{name}/v1/models): Bearer keys,
	// a response object, SSE streams with an `event:` line per event and
	// a sequence_number, no [DONE] (responses.go); the events that open
	// the answer go in one write, as do the .done events that close it,
	// so a fault's Chunks counts writes as in a chat stream (the opening
	// one for its role chunk). Errors are OpenAI's
	// envelopes (StyleOpenAI; a ModelNotFound is the 400 /v1/responses
	// answers). In a stream: ContentFilter is a response.incomplete of
	// reason content_filter, a Reply cut at its limit one of reason
	// max_output_tokens, StreamError a response.failed event with
	// error.code server_error (a Fault.Body is sent as the data of an
	// event named by its own "type": a response.failed of another code,
	// an error event), and NoDone leaves out the terminal
	// response.completed.
	DialectResponses Dialect = "openai-responses"
)

func (d Dialect) valid() bool {
	switch d {
	case "", DialectOpenAI, DialectAnthropic, DialectGemini, DialectResponses:
		return true
	}
	return false
}

// or returns d, or DialectOpenAI for the zero Dialect.
func (d Dialect) or() Dialect {
	if d == "" {
		return DialectOpenAI
	}
	return d
}

// baseURL is what a client of dialect d appends its paths to, under root + "/" + name.
func (d Dialect) baseURL(root, name string) string {
	switch d.or() {
	case DialectAnthropic:
		return root + "/" + name // the client appends /v1/messages
	case DialectGemini:
		return root + "/" + name + "/v1beta" // the client appends /models/{model}:generateContent
	}
	return root + "/" + name + "/v1" // the client appends /chat/completions (or /responses)
}

// wireAnswer is one successful answer encoded in a dialect: the plain body,
// or the stream's framed events (each frame is the exact bytes of one SSE
// event, its terminating blank line included).
type wireAnswer struct {
	// header is sent with both forms (request ids).
	header http.Header
	// body and bodyType are the non-streamed answer.
	body     []byte
	bodyType string
	// streamHeader holds the stream's headers, Content-Type included.
	streamHeader http.Header
	// head are the events a StreamCut or StreamError may cut short; tail
	// ends the answer; done, when set, is written after tail without a
	// PerChunk wait (OpenAI's [DONE]).
	head, tail [][]byte
	done       []byte
	// errorFrame is the framed in-stream error of a StreamError.
	errorFrame func(data []byte) []byte
	// defaultErrorData is the data of the in-stream error when Fault.Body is empty.
	defaultErrorData []byte
	// preamble counts the head events before the first content event: what
	// a LateFirstToken sends with its headers.
	preamble int
	// garbled holds a malformed stand-in of each content event, in order,
	// for StreamMalformed.
	garbled []garbledEvent
	// stopLast says the last tail event is the terminal marker (Anthropic's
	// message_stop), which a NoDone omits.
	stopLast bool
}

// garbledEvent is a content event cut short inside its text, framed.
type garbledEvent struct {
	at    int // the position of the original among head then tail
	frame []byte
}

// dataFrame frames data as one SSE event "data: ...\n\n" (OpenAI).
func dataFrame(data []byte) []byte {
	b := make([]byte, 0, len(data)+8)
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// namedFrame frames data as "event: name\ndata: ...\n\n" (Anthropic).
func namedFrame(name string, data []byte) []byte {
	b := make([]byte, 0, len(name)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// crlfFrame frames data as "data: ...\r\n\r\n", the line ends Gemini's
// streamGenerateContent?alt=sse uses (maruel/genai gemini GenStream recordings).
func crlfFrame(data []byte) []byte {
	b := make([]byte, 0, len(data)+10)
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\r\n\r\n"...)
}

// writeFrame writes one framed event and flushes it; false means the client is gone.
func writeFrame(w http.ResponseWriter, frame []byte) bool {
	if _, err := w.Write(frame); err != nil {
		return false
	}
	return flush(w)
}

// spaceColons inserts a space after every ':' outside JSON strings, turning
// compact JSON into the layout of Google's protobuf JSON printer as seen in
// Gemini's SSE chunks: `{"candidates": [{"content": {"parts": ...},"index": 0}]}`.
func spaceColons(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/8)
	inStr, esc := false, false
	for _, c := range b {
		out = append(out, c)
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && c == ':':
			out = append(out, ' ')
		}
	}
	return out
}

// headerOf builds a header from key, value pairs.
func headerOf(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// splitModelMethod splits "{model}:{method}" at its last colon.
func splitModelMethod(s string) (model, method string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
