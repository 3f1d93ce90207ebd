package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The Gemini surface's paths, answers, stream chunks and errors.

// The methods of a model the Gemini surface serves.
const (
	gmGenerate = "generateContent"
	gmStream   = "streamGenerateContent"
)

// geminiPath reads a path of the Gemini surface: /v1beta/... always,
// /v1/models/{model}:{method} too (GET /v1/models/{id} is the OpenAI and
// Anthropic model list's). model is what follows models/ up to the last
// colon of the path: the Gen AI SDKs send a target id's "/" as it is
// (go-genai's tModel makes "p1/m" models/p1/m), and net/http has already
// decoded an escaped one (p1%2Fm). ok is false for a path of another
// surface; then model and method are empty.
func geminiPath(p string) (model, method string, ok bool) {
	rest, beta := strings.CutPrefix(p, "/v1beta/")
	if !beta {
		if rest, ok = strings.CutPrefix(p, "/v1/models/"); !ok || !strings.Contains(rest, ":") {
			return "", "", false
		}
		rest = "models/" + rest
	}
	name, isModel := strings.CutPrefix(rest, "models/")
	i := strings.LastIndexByte(name, ':')
	if !isModel || i <= 0 {
		return "", "", true // a path of the surface detour does not serve
	}
	return name[:i], name[i+1:], true
}

// serveGemini serves a request to a path of the Gemini surface: a POST to
// :generateContent or :streamGenerateContent goes to serveChat; any other
// method of a model or path is answered in Google's shape saying what
// detour serves.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, model, method string) {
	const serves = "detour serves POST /v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse, :embedContent and :batchEmbedContents (also under /v1/)"
	switch {
	case model == "":
		s.metrics.rejected.With(geminiDialect.String(), "not_found").Inc()
		writeError(w, geminiDialect, &apiError{Status: http.StatusNotFound, NoRetry: true, Code: "unknown_url",
			Message: fmt.Sprintf("unknown URL %s %s: %s", r.Method, r.URL.Path, serves)}, "")
	case method == gmEmbed || method == gmBatchEmbed:
		if s.method(w, r, http.MethodPost, geminiDialect) {
			s.serveEmbed(w, r, geminiDialect, model, method)
		}
	case method != gmGenerate && method != gmStream:
		s.metrics.rejected.With(geminiDialect.String(), "not_implemented").Inc()
		writeError(w, geminiDialect, &apiError{Status: http.StatusNotImplemented, NoRetry: true, Code: "unknown_method",
			Message: fmt.Sprintf("method %q of models is not served by detour: %s", method, serves)}, "")
	case s.method(w, r, http.MethodPost, geminiDialect):
		s.serveChat(w, r, geminiDialect)
	}
}

// parseGeminiCall reads the request of a Gemini path: the body, then the
// model and whether to stream from the URL. A stream must ask for SSE
// (alt=sse), as every Gen AI SDK does; the JSON array Gemini streams
// without it is not served.
func parseGeminiCall(r *http.Request, body []byte, cr *chatRequest) *apiError {
	model, method, _ := geminiPath(r.URL.Path)
	if ae := parseGemini(body, cr); ae != nil {
		return ae
	}
	if ae := checkModels(model, nil); ae != nil {
		return ae
	}
	cr.model, cr.stream = model, method == gmStream
	if cr.stream && r.URL.Query().Get("alt") != "sse" {
		return badRequest("alt", "detour streams :streamGenerateContent as server-sent events only: add ?alt=sse to the URL")
	}
	cr.req.Stream = cr.stream
	return nil
}

// googleStatus names an HTTP status as google.rpc.Code does
// (https://cloud.google.com/apis/design/errors#handling_errors).
func googleStatus(code int) string {
	switch code {
	case 400, 411, 413, 422:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 405, 501:
		return "UNIMPLEMENTED"
	case 408, 504:
		return "DEADLINE_EXCEEDED"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 502, 503:
		return "UNAVAILABLE"
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// appendGoogleError appends {"error":{"code","message","status"}}, with
// detour's code (too_many_models, all_candidates_rate_limited, ...) as an
// ErrorInfo detail's reason when it has one.
func appendGoogleError(b []byte, e *apiError) []byte {
	b = append(b, `{"error":{"code":`...)
	b = appendInt(b, e.Status)
	b = append(b, `,"message":`...)
	b = jsonw.String(b, e.Message)
	b = append(b, `,"status":`...)
	b = jsonw.String(b, googleStatus(e.Status))
	if e.Code != "" {
		b = append(b, `,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":`...)
		b = jsonw.String(b, e.Code)
		b = append(b, `,"domain":"detour"}]`...)
	}
	return append(b, "}}"...)
}

// geminiFinish returns the finishReason of f: STOP for an answer that ended
// or called functions, MAX_TOKENS, SAFETY, else OTHER.
func geminiFinish(f llm.FinishReason) string {
	switch f {
	case "", llm.FinishStop, llm.FinishToolCalls:
		return "STOP"
	case llm.FinishLength:
		return "MAX_TOKENS"
	case llm.FinishContentFilter:
		return "SAFETY"
	}
	return "OTHER"
}

// gmCallPart is one function call of an answer, whole.
type gmCallPart struct {
	id, name, args string
}

// appendGeminiCandidate appends the candidate of an answer: its text and
// function calls as parts (an empty text part when there is neither, so
// that parts[0] exists), and its finish reason when finish is set.
func appendGeminiCandidate(b []byte, text string, calls []gmCallPart, finish string) []byte {
	b = append(b, `{"candidates":[{"content":{"parts":[`...)
	n := 0
	if text != "" || len(calls) == 0 {
		b = append(b, `{"text":`...)
		b = jsonw.String(b, text)
		b = append(b, '}')
		n++
	}
	for _, c := range calls {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"functionCall":{`...)
		if c.id != "" {
			b = append(b, `"id":`...)
			b = jsonw.String(b, c.id)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = jsonw.String(b, c.name)
		b = append(b, `,"args":`...)
		b = appendJSONObject(b, c.args)
		b = append(b, "}}"...)
		n++
	}
	b = append(b, `],"role":"model"}`...)
	if finish != "" {
		b = append(b, `,"finishReason":`...)
		b = jsonw.String(b, finish)
	}
	return append(b, `,"index":0}]`...)
}

// appendGeminiTail appends the members after the candidates: usage when
// u is set, modelVersion (the model that answered) and responseId.
func appendGeminiTail(b []byte, c *call, u *llm.Usage, model, id string) []byte {
	if u != nil {
		b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
		b = appendInt(b, u.InputTokens)
		b = append(b, `,"candidatesTokenCount":`...)
		b = appendInt(b, u.OutputTokens)
		b = append(b, `,"totalTokenCount":`...)
		b = appendInt(b, u.InputTokens+u.OutputTokens)
		if u.CacheReadTokens > 0 {
			b = append(b, `,"cachedContentTokenCount":`...)
			b = appendInt(b, u.CacheReadTokens)
		}
		b = append(b, '}')
	}
	b = append(b, `,"modelVersion":`...)
	b = jsonw.String(b, answerModel(model, c))
	b = append(b, `,"responseId":`...)
	if id == "" {
		id = c.id
	}
	b = jsonw.String(b, id)
	return append(b, '}')
}

// appendGeminiResponse appends the GenerateContentResponse of resp.
func appendGeminiResponse(b []byte, c *call, resp *llm.Response) []byte {
	m := &resp.Message
	calls := make([]gmCallPart, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		calls[i] = gmCallPart{id: tc.ID, name: tc.Name, args: tc.Arguments}
	}
	b = appendGeminiCandidate(b, m.Content, calls, geminiFinish(resp.FinishReason))
	b = appendGeminiTail(b, c, &resp.Usage, resp.Model, resp.ID)
	return append(b, '\n')
}

// gmStreamOut writes a stream as Gemini's alt=sse does: one `data:`
// GenerateContentResponse per chunk of text, and a last one with the
// function calls (Gemini sends each whole; another dialect's arrive in
// pieces and are put together here), finishReason and usageMetadata. There
// is no terminal event; a failure is a `data: {"error":{...}}` chunk, which
// the Gen AI SDKs raise.
type gmStreamOut struct {
	c      *call
	model  string
	id     string
	finish llm.FinishReason
	u      *llm.Usage
	calls  []gmCallPart
	index  map[int]int // a tool call delta's Index -> its place in calls
}

func (g *gmStreamOut) usage() llm.Usage {
	if g.u == nil {
		return llm.Usage{}
	}
	return *g.u
}

func (g *gmStreamOut) chunk(b []byte, ch llm.Chunk) []byte {
	if ch.Usage != nil {
		u := *ch.Usage
		g.u = &u
	}
	if g.model == "" && ch.Model != "" {
		g.model = ch.Model
	}
	if g.id == "" && ch.ID != "" {
		g.id = ch.ID
	}
	if ch.FinishReason != "" && g.finish == "" {
		g.finish = ch.FinishReason
	}
	for _, d := range ch.ToolCalls {
		if g.index == nil {
			g.index = map[int]int{}
		}
		i, ok := g.index[d.Index]
		if !ok {
			i = len(g.calls)
			g.index[d.Index] = i
			g.calls = append(g.calls, gmCallPart{})
		}
		tc := &g.calls[i]
		if d.ID != "" {
			tc.id = d.ID
		}
		if d.Name != "" {
			tc.name = d.Name
		}
		tc.args += d.Arguments
	}
	if ch.Content == "" {
		return b
	}
	b = append(b, "data: "...)
	b = appendGeminiCandidate(b, ch.Content, nil, "")
	b = appendGeminiTail(b, g.c, nil, g.model, g.id)
	return append(b, "\n\n"...)
}

// end appends the last chunk: the function calls, finishReason and usage.
func (g *gmStreamOut) end(b []byte) []byte {
	b = append(b, "data: "...)
	b = appendGeminiCandidate(b, "", g.calls, geminiFinish(g.finish))
	u := g.usage()
	b = appendGeminiTail(b, g.c, &u, g.model, g.id)
	return append(b, "\n\n"...)
}

// fail appends the error chunk.
func (g *gmStreamOut) fail(b []byte, e *apiError) []byte {
	b = append(b, "data: "...)
	b = appendGoogleError(b, e)
	return append(b, "\n\n"...)
}
