package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// OpenAI's Responses API as recorded in https://github.com/maruel/genai
// (providers/openairesponses/testdata/TestClient/Scoreboard/gpt-4.1/
// GenStream-Seed.yaml, commit 1797d69b1eb57a7fd1daacd04615b3ae85bb0bec;
// gpt-5-mini/GenSync-Text.yaml, GenStream-Tools-SquareRoot-1.yaml and
// GenStream-MaxTokens.yaml, commit 89838964649b99f965ab661fde507f5f4bddf6ae):
// a response object pretty-printed with two spaces and no trailing newline;
// streams whose every event has an `event:` line naming its data's "type"
// and a sequence_number from 0; response.created and response.in_progress,
// then per output item output_item.added, content_part.added (a message),
// the deltas, their .done events and output_item.done, and the end:
// response.completed, or response.incomplete with incomplete_details (at
// max_output_tokens, or the content filter). No [DONE]. Failures in a
// stream are a response.failed event whose response.error carries
// {code, message} (openai-go responses/response.go ResponseFailedEvent).

// responsesRequest is the subset of a Responses body that is read.
type responsesRequest struct {
	Model           *string         `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          *bool           `json:"stream"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Tools           []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// responsesItem is one input item: a message (with or without "type"), a
// function_call, a function_call_output, or another item (reasoning, ...).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// serveResponses serves rest, the path after /{name}/, for a Responses
// provider: POST v1/responses and GET v1/models.
func (s *Server) serveResponses(ctx context.Context, w http.ResponseWriter, r *http.Request, t *target, seq uint64, rest string, ec errCtx) {
	var want string
	switch rest {
	case "v1/responses":
		want = http.MethodPost
	case "v1/models":
		want = http.MethodGet
	default:
		writeReply(w, genericError(ec, 404, fmt.Sprintf("Invalid URL (%s /%s)", r.Method, rest), "", ""), nil)
		return
	}
	if r.Method != want {
		writeReply(w, genericError(ec, 405, fmt.Sprintf("Invalid method for URL (%s /%s)", r.Method, rest), "", ""), nil)
		return
	}
	if want == http.MethodGet {
		s.read(t)
	}
	ec.key, ec.keyGiven = bearer(r)
	if t.Key != "" && (!ec.keyGiven || ec.key != t.Key) {
		ec.f = Fault{Kind: Unauthorized}
		if want == http.MethodPost {
			s.record(t, Record{Kind: Unauthorized})
		}
		s.sendError(ctx, w, t, ec.reply(), nil)
		return
	}
	if want == http.MethodGet {
		writeModels(w, t, ec.requestID)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return // the client is gone
	}
	req, rerr := parseResponses(body)
	if rerr != nil {
		if req != nil {
			ec.stream = req.stream
		}
		s.reject(ctx, w, t, ec, rerr)
		return
	}
	s.serve(ctx, w, t, req, seq, ec)
}

// parseResponses reads a Responses body, validating the fields the
// simulator needs the way the API words its refusals. On a rejection the
// returned request, when not nil, carries what was read (stream).
func parseResponses(body []byte) (*chatReq, *reqError) {
	var w responsesRequest
	if err := json.Unmarshal(body, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, &reqError{status: 400, kind: BadRequest,
				msg:   fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", te.Field, jsonKind(te.Type), article(te.Value)),
				param: te.Field, code: "invalid_type"}
		}
		return nil, &reqError{status: 400, kind: BadRequest,
			msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"}
	}
	r := &chatReq{}
	if w.Stream != nil {
		r.stream = *w.Stream
	}
	if w.Model == nil || *w.Model == "" {
		return r, &reqError{status: 400, kind: BadRequest, msg: "Missing required parameter: 'model'.", param: "model", code: "missing_required_parameter"}
	}
	r.model = *w.Model
	if w.MaxOutputTokens != nil {
		r.maxTokens = *w.MaxOutputTokens
	}
	input := w.Input
	if len(input) == 0 || string(input) == "null" {
		return r, &reqError{status: 400, kind: BadRequest, model: r.model,
			msg: "Missing required parameter: 'input'.", param: "input", code: "missing_required_parameter"}
	}
	var items []responsesItem
	var text string
	if json.Unmarshal(input, &text) == nil {
		items = []responsesItem{{Role: "user", Content: input}}
	} else if json.Unmarshal(input, &items) != nil {
		return r, &reqError{status: 400, kind: BadRequest, model: r.model,
			msg: "Invalid type for 'input': expected one of a string or array of input items.", param: "input", code: "invalid_type"}
	}
	chars := 0
	if w.Instructions != nil {
		chars += utf8.RuneCountInString(*w.Instructions)
	}
	for _, it := range items {
		chars += contentChars(it.Content) + len(it.Name) + len(it.Arguments) + contentChars(it.Output)
		if it.Type == "function_call" || it.Type == "function_call_output" {
			r.lastRole = map[string]string{"function_call": "assistant", "function_call_output": "tool"}[it.Type]
		} else if it.Type == "" || it.Type == "message" {
			r.lastRole = it.Role
		}
	}
	decls := make([]toolDecl, 0, len(w.Tools))
	toolChars := 0
	for _, t := range w.Tools {
		if t.Type == "function" {
			decls = append(decls, toolDecl{t.Name, t.Parameters})
			toolChars += len(t.Name) + len(t.Parameters)
		}
	}
	// As for chat completions: about four characters a token and a few
	// tokens of framing per item (the recorded "Say hello. Use only one
	// word." counts 15 on gpt-4.1).
	r.promptTokens = (chars+3)/4 + 3*len(items) + 3 + toolChars/4
	var choice string
	if json.Unmarshal(w.ToolChoice, &choice) != nil || choice != "none" {
		var named struct {
			Name string `json:"name"`
		}
		json.Unmarshal(w.ToolChoice, &named) //nolint:errcheck // a string choice names no function
		r.tool = chooseTool(decls, named.Name)
	}
	r.question = func() (system, prompt string) {
		var sys []string
		if w.Instructions != nil && *w.Instructions != "" {
			sys = append(sys, *w.Instructions)
		}
		for _, it := range items {
			if (it.Type == "" || it.Type == "message") && (it.Role == "system" || it.Role == "developer") {
				if s := inputText(it.Content); s != "" {
					sys = append(sys, s)
				}
			}
		}
		for i := len(items) - 1; i >= 0; i-- {
			if it := items[i]; (it.Type == "" || it.Type == "message") && it.Role == "user" {
				prompt = inputText(it.Content)
				break
			}
		}
		return strings.Join(sys, "\n"), prompt
	}
	return r, nil
}

// inputText is the text of a Responses message content: a string, or its
// input_text (output_text) parts joined with "\n".
func inputText(raw json.RawMessage) string {
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
		if p.Type == "input_text" || p.Type == "output_text" || p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// responsesError is the error answer of the Responses API: OpenAI's
// envelopes (errorReply), but for a model it does not serve, which
// /v1/responses answers with a 400 (recorded: testdata/errors corpus
// openai-responses-400-model-does-not-exist) where chat completions says
// 404.
func responsesError(c errCtx) reply {
	if c.f.Kind != ModelNotFound {
		return errorReply(c)
	}
	r := c.override(reply{400, jsonHeader("application/json"), openaiBody("  ", false,
		fmt.Sprintf("The requested model '%s' does not exist.", c.model), "invalid_request_error", "model", "model_not_found")})
	r.header.Set("X-Request-Id", c.requestID)
	return r
}

// The objects of a Responses answer, in the field order of the recordings.
type (
	rsUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	rsPart struct {
		Type        string     `json:"type"`
		Annotations []struct{} `json:"annotations"`
		Logprobs    []struct{} `json:"logprobs"`
		Text        string     `json:"text"`
	}
	rsItem struct {
		ID        string    `json:"id"`
		Type      string    `json:"type"`
		Status    string    `json:"status"`
		Content   *[]rsPart `json:"content,omitempty"`
		Arguments *string   `json:"arguments,omitempty"`
		CallID    string    `json:"call_id,omitempty"`
		Name      string    `json:"name,omitempty"`
		Role      string    `json:"role,omitempty"`
	}
	rsError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	rsIncomplete struct {
		Reason string `json:"reason"`
	}
	rsObject struct {
		ID                string        `json:"id"`
		Object            string        `json:"object"`
		CreatedAt         int64         `json:"created_at"`
		Status            string        `json:"status"`
		Background        bool          `json:"background"`
		Error             *rsError      `json:"error"`
		IncompleteDetails *rsIncomplete `json:"incomplete_details"`
		Instructions      *string       `json:"instructions"`
		MaxOutputTokens   *int          `json:"max_output_tokens"`
		MaxToolCalls      *int          `json:"max_tool_calls"`
		Model             string        `json:"model"`
		Output            []rsItem      `json:"output"`
		ParallelToolCalls bool          `json:"parallel_tool_calls"`
		PreviousResponse  *string       `json:"previous_response_id"`
		Reasoning         struct {
			Effort  *string `json:"effort"`
			Summary *string `json:"summary"`
		} `json:"reasoning"`
		ServiceTier string `json:"service_tier"`
		Store       bool   `json:"store"`
		Temperature int    `json:"temperature"`
		Text        struct {
			Format struct {
				Type string `json:"type"`
			} `json:"format"`
		} `json:"text"`
		ToolChoice  string     `json:"tool_choice"`
		Tools       []struct{} `json:"tools"`
		TopLogprobs int        `json:"top_logprobs"`
		TopP        int        `json:"top_p"`
		Truncation  string     `json:"truncation"`
		Usage       *rsUsage   `json:"usage"`
		User        *string    `json:"user"`
		Metadata    struct{}   `json:"metadata"`
	}
)

// responsesIDs are the answer's response, message and function call ids
// (48 hex digits after the prefix, as recorded).
func (a *answer) responsesIDs() (resp, msg, fc string) {
	return "resp_" + token(a.seed^0x72657370, 48, hexDigits), "msg_" + token(a.seed^0x6d7367, 48, hexDigits),
		"fc_" + token(a.seed^0x6663, 48, hexDigits)
}

// responsesStatus is the response's status and incomplete reason.
func (a *answer) responsesStatus() (status string, inc *rsIncomplete) {
	switch a.finish {
	case "length":
		return "incomplete", &rsIncomplete{"max_output_tokens"}
	case "content_filter":
		return "incomplete", &rsIncomplete{"content_filter"}
	}
	return "completed", nil
}

// responsesObject is the response object in status, with output and usage.
func (a *answer) responsesObject(status string, inc *rsIncomplete, output []rsItem, u *rsUsage) rsObject {
	id, _, _ := a.responsesIDs()
	o := rsObject{ID: id, Object: "response", CreatedAt: a.created, Status: status, IncompleteDetails: inc,
		Model: a.model, Output: output, ParallelToolCalls: true, ServiceTier: "default", Temperature: 1,
		ToolChoice: "auto", Tools: []struct{}{}, TopP: 1, Truncation: "disabled", Usage: u}
	if o.Output == nil {
		o.Output = []rsItem{}
	}
	o.Text.Format.Type = "text"
	return o
}

// responsesItem is the answer's output item (nil for a refusal: no
// output), of status status, with its text or arguments as far as given.
func (a *answer) responsesItem(status, text string) *rsItem {
	_, msgID, fcID := a.responsesIDs()
	switch {
	case a.tool != nil:
		return &rsItem{ID: fcID, Type: "function_call", Status: status, Arguments: &text, CallID: a.callID, Name: a.tool.name}
	case a.finish == "content_filter":
		return nil
	}
	parts := []rsPart{}
	if status != "in_progress" {
		parts = append(parts, rsPart{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: text})
	}
	return &rsItem{ID: msgID, Type: "message", Status: status, Content: &parts, Role: "assistant"}
}

func (a *answer) responsesUsage() *rsUsage {
	return &rsUsage{InputTokens: a.prompt, OutputTokens: a.completion, TotalTokens: a.prompt + a.completion}
}

// responsesFailed is the data of a response.failed event of code and
// message, numbered seq.
func (a *answer) responsesFailed(seq int, code, msg string) []byte {
	o := a.responsesObject("failed", nil, nil, nil)
	o.Error = &rsError{Code: code, Message: msg}
	b, _ := marshal(struct {
		Type           string   `json:"type"`
		SequenceNumber int      `json:"sequence_number"`
		Response       rsObject `json:"response"`
	}{"response.failed", seq, o})
	return b
}

// responsesWire encodes the answer in the Responses API.
func (a *answer) responsesWire(ec errCtx, stream bool) wireAnswer {
	wa := wireAnswer{
		header:       headerOf("X-Request-Id", ec.requestID),
		bodyType:     "application/json",
		streamHeader: headerOf("Content-Type", "text/event-stream; charset=utf-8"),
		// A stream's failure is a response.failed event; a Fault.Body is
		// framed under the name of its own "type" (an error event, say).
		errorFrame: func(data []byte) []byte {
			var v struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &v) != nil || v.Type == "" {
				v.Type = "error"
			}
			return namedFrame(v.Type, data)
		},
	}
	status, inc := a.responsesStatus()
	text := a.text
	if a.tool != nil {
		text = a.tool.args
	}
	var output []rsItem
	if it := a.responsesItem(status, text); it != nil {
		if status == "incomplete" && it.Type == "message" {
			it.Status = "incomplete"
		}
		output = []rsItem{*it}
	}
	if !stream {
		wa.body = marshalIndent(a.responsesObject(status, inc, output, a.responsesUsage()), "  ")
		return wa
	}

	seq := 0
	ev := func(typ string, fields any) []byte {
		b, _ := marshal(fields)
		// {"type":...,"sequence_number":n, then the event's own fields}
		head := fmt.Sprintf(`{"type":%q,"sequence_number":%d`, typ, seq)
		seq++
		if string(b) != "{}" {
			head += "," + string(b[1:len(b)-1])
		}
		return namedFrame(typ, []byte(head+"}"))
	}
	type withResponse struct {
		Response rsObject `json:"response"`
	}
	inProgress := a.responsesObject("in_progress", nil, nil, nil)
	// The events a server sends at once go out in one write, one frame:
	// the opening ones before the first delta, and the .done ones after
	// the last. So a stream has as many frames as a chat stream of the
	// same answer (its role chunk, the deltas, the finish and usage
	// chunks), and a fault's Chunks, a Gap or a LateFirstToken's Delay
	// fall at the same point of the answer in either dialect.
	opening := append(ev("response.created", withResponse{inProgress}), ev("response.in_progress", withResponse{inProgress})...)
	afterHead := 0 // the number of the first event after the head's
	_, msgID, fcID := a.responsesIDs()
	if started := a.responsesItem("in_progress", ""); started != nil {
		type itemEvent struct {
			OutputIndex int    `json:"output_index"`
			Item        rsItem `json:"item"`
		}
		opening = append(opening, ev("response.output_item.added", itemEvent{0, *started})...)
		type partEvent struct {
			ItemID       string `json:"item_id"`
			OutputIndex  int    `json:"output_index"`
			ContentIndex int    `json:"content_index"`
			Part         rsPart `json:"part"`
		}
		type deltaEvent struct {
			ItemID       string      `json:"item_id"`
			OutputIndex  int         `json:"output_index"`
			ContentIndex *int        `json:"content_index,omitempty"`
			Delta        string      `json:"delta"`
			Logprobs     *[]struct{} `json:"logprobs,omitempty"`
		}
		zero, none := 0, []struct{}{}
		part := rsPart{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}}
		if a.tool == nil {
			opening = append(opening, ev("response.content_part.added", partEvent{msgID, 0, 0, part})...)
		}
		wa.head = append(wa.head, opening)
		wa.preamble = len(wa.head)
		for _, p := range a.pieces() {
			var frame []byte
			if a.tool != nil {
				frame = ev("response.function_call_arguments.delta", deltaEvent{ItemID: fcID, Delta: p})
			} else {
				frame = ev("response.output_text.delta", deltaEvent{ItemID: msgID, ContentIndex: &zero, Delta: p, Logprobs: &none})
			}
			name, data, _ := strings.Cut(strings.TrimSuffix(string(frame), "\n\n"), "\ndata: ")
			wa.garbled = append(wa.garbled, garbledEvent{len(wa.head), namedFrame(strings.TrimPrefix(name, "event: "), cutShort([]byte(data)))})
			wa.head = append(wa.head, frame)
		}
		afterHead = seq
		done := output[0]
		var closing []byte
		if a.tool != nil {
			closing = ev("response.function_call_arguments.done", struct {
				ItemID      string `json:"item_id"`
				OutputIndex int    `json:"output_index"`
				Arguments   string `json:"arguments"`
			}{fcID, 0, text})
		} else {
			part.Text = text
			closing = append(ev("response.output_text.done", struct {
				ItemID       string     `json:"item_id"`
				OutputIndex  int        `json:"output_index"`
				ContentIndex int        `json:"content_index"`
				Text         string     `json:"text"`
				Logprobs     []struct{} `json:"logprobs"`
			}{msgID, 0, 0, text, none}), ev("response.content_part.done", partEvent{msgID, 0, 0, part})...)
		}
		wa.tail = append(wa.tail, append(closing, ev("response.output_item.done", itemEvent{0, done})...))
	} else {
		wa.head = append(wa.head, opening)
		wa.preamble = len(wa.head)
		afterHead = seq
	}
	final := "response.completed"
	if status == "incomplete" {
		final = "response.incomplete"
	}
	wa.tail = append(wa.tail, ev(final, withResponse{a.responsesObject(status, inc, output, a.responsesUsage())}))
	wa.stopLast = true
	// The message of openai/openai-node#1730's server_error; its number
	// follows the whole head's (a stream cut shorter numbered fewer).
	wa.defaultErrorData = a.responsesFailed(afterHead,
		"server_error", "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists. Please include the request ID "+ec.requestID+" in your message.")
	return wa
}
