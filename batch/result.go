package batch

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// Status is an item's outcome, as its results line says it.
type Status string

// The outcomes of an item.
const (
	// StatusOK is an answer.
	StatusOK Status = "ok"
	// StatusError is a failure no rerun would change by itself: every
	// candidate failed, the request failed closed, or the line is no
	// valid item (error kind invalid_input).
	StatusError Status = "error"
	// StatusPending is an item blocked only by walls and rate limits
	// (every candidate parked or refusing for now): a rerun sends it
	// again; retry_at is the earliest reset.
	StatusPending Status = "pending"
)

// outcome is what became of one item, for its results line.
type outcome struct {
	id        string
	line      int // the input line, for an invalid one; else 0
	status    Status
	res       *router.Result
	kind, msg string
	// httpStatus, errType and errCode are the OpenAI form of a failure.
	httpStatus        int
	errType, errCode  string
	retryAt           time.Time
	attempts          int
	cost              float64
	requestID, target string
}

// encode returns o's results line in format f, ending in a newline.
func (o *outcome) encode(f Format, now time.Time) []byte {
	var b []byte
	if f == OpenAI {
		b, _ = json.Marshal(o.openAI(now))
	} else {
		b, _ = json.Marshal(o.native())
	}
	return append(b, '\n')
}

// nativeResult is a native results line.
type nativeResult struct {
	ID           string         `json:"id"`
	Status       Status         `json:"status"`
	Line         int            `json:"line,omitempty"`
	Answer       *string        `json:"answer,omitempty"`
	ToolCalls    []llm.ToolCall `json:"tool_calls,omitempty"`
	FinishReason string         `json:"finish_reason,omitempty"`
	Target       string         `json:"target,omitempty"`
	Model        string         `json:"model,omitempty"`
	Degraded     *bool          `json:"degraded,omitempty"`
	Dropped      []string       `json:"dropped,omitempty"`
	Replayed     bool           `json:"replayed,omitempty"`
	Attempts     int            `json:"attempts"`
	CostUSD      float64        `json:"cost_usd"`
	TokensIn     *int           `json:"tokens_in,omitempty"`
	TokensOut    *int           `json:"tokens_out,omitempty"`
	RequestID    string         `json:"request_id,omitempty"`
	RetryAt      *time.Time     `json:"retry_at,omitempty"`
	Error        *nativeError   `json:"error,omitempty"`
}

// nativeError is a native results line's error.
type nativeError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (o *outcome) native() nativeResult {
	n := nativeResult{ID: o.id, Status: o.status, Line: o.line, Attempts: o.attempts, CostUSD: o.cost,
		RequestID: o.requestID, Target: o.target}
	if o.status == StatusOK {
		r := o.res.Response
		text := r.Message.Content
		deg := o.res.Degraded
		in, out := r.Usage.InputTokens, r.Usage.OutputTokens
		n.Answer, n.ToolCalls, n.FinishReason, n.Model = &text, r.Message.ToolCalls, string(r.FinishReason), r.Model
		n.Degraded, n.Dropped, n.Replayed, n.TokensIn, n.TokensOut = &deg, o.res.Dropped, o.res.Replayed, &in, &out
		return n
	}
	if !o.retryAt.IsZero() {
		t := o.retryAt.UTC()
		n.RetryAt = &t
	}
	n.Error = &nativeError{Kind: o.kind, Message: o.msg}
	return n
}

// openAIResult is an OpenAI Batch API output line, with detour's account
// of the item beside it.
type openAIResult struct {
	ID       string          `json:"id"`
	CustomID *string         `json:"custom_id"`
	Response *openAIResponse `json:"response"`
	Error    *openAIError    `json:"error"`
	Detour   detourNote      `json:"detour"`
}

type openAIResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

// openAIError is an output line's error: for a line that is no valid
// item, or one left pending. Line is OpenAI's BatchError.line.
type openAIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
}

// detourNote is what an OpenAI output line says beyond OpenAI's fields.
type detourNote struct {
	Status   Status     `json:"status"`
	Target   string     `json:"target,omitempty"`
	Degraded bool       `json:"degraded,omitempty"`
	Dropped  []string   `json:"dropped,omitempty"`
	Replayed bool       `json:"replayed,omitempty"`
	Attempts int        `json:"attempts"`
	CostUSD  float64    `json:"cost_usd"`
	Kind     string     `json:"kind,omitempty"`
	RetryAt  *time.Time `json:"retry_at,omitempty"`
	Line     int        `json:"line,omitempty"`
}

func (o *outcome) openAI(now time.Time) openAIResult {
	out := openAIResult{ID: "batch_req_" + randomHex(12),
		Detour: detourNote{Status: o.status, Target: o.target, Attempts: o.attempts, CostUSD: o.cost, Kind: o.kind, Line: o.line}}
	if o.id != "" {
		id := o.id
		out.CustomID = &id
	}
	if !o.retryAt.IsZero() {
		t := o.retryAt.UTC()
		out.Detour.RetryAt = &t
	}
	switch {
	case o.status == StatusOK:
		out.Detour.Degraded, out.Detour.Dropped, out.Detour.Replayed = o.res.Degraded, o.res.Dropped, o.res.Replayed
		out.Response = &openAIResponse{StatusCode: 200, RequestID: o.requestID, Body: completionBody(o.res, o.requestID, now)}
	case o.status == StatusError && o.kind != KindInvalidInput:
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": o.msg, "type": o.errType, "param": nil, "code": o.errCode}})
		out.Response = &openAIResponse{StatusCode: o.httpStatus, RequestID: o.requestID, Body: body}
	default: // invalid input, pending: no response, as OpenAI writes an expired request
		code := o.kind
		if o.status == StatusPending {
			code = string(StatusPending)
		}
		out.Error = &openAIError{Code: code, Message: o.msg, Line: o.line}
	}
	return out
}

// completionBody is the answer as a chat.completion object: the
// provider's own body when it answered in OpenAI's dialect to a request
// sent raw, else one made from the canonical answer.
func completionBody(res *router.Result, requestID string, now time.Time) json.RawMessage {
	r := res.Response
	if r.Raw != nil && r.Raw.Dialect == "openai" {
		var b bytes.Buffer
		if json.Compact(&b, r.Raw.Body) == nil {
			return b.Bytes()
		}
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type message struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		Refusal   *string    `json:"refusal"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int             `json:"index"`
		Message      message         `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason string          `json:"finish_reason"`
	}
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	m := message{Role: "assistant"}
	if r.Message.Content != "" || len(r.Message.ToolCalls) == 0 {
		text := r.Message.Content
		m.Content = &text
	}
	for _, tc := range r.Message.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: fn{Name: tc.Name, Arguments: tc.Arguments}})
	}
	finish := string(r.FinishReason)
	if finish == "" {
		finish = string(llm.FinishStop)
	}
	id := r.ID
	if id == "" {
		id = "chatcmpl-" + requestID
	}
	b, _ := json.Marshal(struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   usage    `json:"usage"`
	}{id, "chat.completion", now.Unix(), r.Model,
		[]choice{{Message: m, Logprobs: json.RawMessage("null"), FinishReason: finish}},
		usage{r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.InputTokens + r.Usage.OutputTokens}})
	return b
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// doneLine is the part of a results line, of either format, that a rerun
// reads.
type doneLine struct {
	ID       json.RawMessage `json:"id"`
	Status   Status          `json:"status"`
	Line     int             `json:"line"`
	CustomID json.RawMessage `json:"custom_id"`
	Response *struct {
		StatusCode int `json:"status_code"`
	} `json:"response"`
	Error *struct {
		Kind string `json:"kind"`
		Code string `json:"code"`
		Line int    `json:"line"`
	} `json:"error"`
	Detour *struct {
		Status Status `json:"status"`
	} `json:"detour"`
}

// readDone reads a results line: the key of its outcome (doneKey), its
// status and format; ok is false for a line that is no results line.
func readDone(line []byte) (key string, st Status, f Format, ok bool) {
	var d doneLine
	if json.Unmarshal(line, &d) != nil {
		return "", "", "", false
	}
	if d.CustomID != nil || d.Detour != nil {
		f = OpenAI
		switch {
		case d.Detour != nil && d.Detour.Status != "":
			st = d.Detour.Status
		case d.Response != nil && d.Response.StatusCode == 200:
			st = StatusOK
		case d.Error != nil && d.Error.Code == string(StatusPending):
			st = StatusPending
		default:
			st = StatusError
		}
		if d.Error != nil && d.Error.Code == KindInvalidInput && d.Error.Line > 0 {
			return doneKey("", d.Error.Line), st, f, true
		}
		id, err := readID(d.CustomID)
		return doneKey(id, 0), st, f, err == nil
	}
	f, st = Native, d.Status
	switch st {
	case StatusOK, StatusError, StatusPending:
	default:
		return "", "", "", false
	}
	if d.Error != nil && d.Error.Kind == KindInvalidInput && d.Line > 0 {
		return doneKey("", d.Line), st, f, true
	}
	id, err := readID(d.ID)
	return doneKey(id, 0), st, f, err == nil
}
