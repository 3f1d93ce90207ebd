package gateway

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The Responses surface's answers: the response object, whole or as the
// event stream openai-go's ResponseStreamEventUnion reads, each event
// with its "type" and a sequence_number from 0.

// rsEcho is what every response object repeats of its request
// (instructions, tools, text, reasoning, ...), built once at parse time:
// the request's body is gone by the time a stream ends.
type rsEcho struct {
	// fields are `"instructions":...,...,"user":...`, with no comma
	// before or after.
	fields []byte
}

// rsEchoOf builds the echo of in. store is always false: detour keeps
// no response, whatever the request asked.
func rsEchoOf(in *rsRequest, fields map[string]json.RawMessage) *rsEcho {
	b := make([]byte, 0, 256)
	b = append(b, `"instructions":`...)
	if in.Instructions != nil {
		b = jsonw.String(b, *in.Instructions)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"max_output_tokens":`...)
	if in.MaxOutputTokens != nil {
		b = appendInt(b, *in.MaxOutputTokens)
	} else {
		b = append(b, "null"...)
	}
	b = echoRaw(b, "metadata", fields, "{}")
	b = append(b, `,"parallel_tool_calls":`...)
	b = strconv.AppendBool(b, in.ParallelToolCalls == nil || *in.ParallelToolCalls)
	b = append(b, `,"previous_response_id":null`...)
	b = echoRaw(b, "reasoning", fields, `{"effort":null,"summary":null}`)
	b = append(b, `,"store":false`...)
	b = echoFloat(b, "temperature", in.Temperature)
	b = echoRaw(b, "text", fields, `{"format":{"type":"text"}}`)
	b = echoRaw(b, "tool_choice", fields, `"auto"`)
	b = echoRaw(b, "tools", fields, "[]")
	b = echoFloat(b, "top_p", in.TopP)
	b = append(b, `,"truncation":"disabled","user":`...)
	b = appendStringOrNull(b, in.User)
	return &rsEcho{fields: b}
}

// echoRaw appends ,"key": and the request's value of key, or def when it
// has none.
func echoRaw(b []byte, key string, fields map[string]json.RawMessage, def string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, `":`...)
	if v := present(fields[key]); v != nil {
		return appendCompact(b, v)
	}
	return append(b, def...)
}

// echoFloat appends ,"key": and v (1 when unset: the API's default).
func echoFloat(b []byte, key string, v *float64) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, `":`...)
	if v == nil {
		return append(b, '1')
	}
	return strconv.AppendFloat(b, *v, 'g', -1, 64)
}

// The kinds of output item.
const (
	rsMessageItem = iota
	rsCallItem
)

// rsOutItem is one output item: the assistant's message, or one function
// call.
type rsOutItem struct {
	kind         int
	id           string
	text         strings.Builder
	callID, name string
	args         strings.Builder
	// out is the item's output_index.
	out int
}

// appendItem appends it as an output item of status status.
func appendItem(b []byte, it *rsOutItem, status string) []byte {
	if it.kind == rsCallItem {
		b = append(b, `{"id":`...)
		b = jsonw.String(b, it.id)
		b = append(b, `,"type":"function_call","status":`...)
		b = jsonw.String(b, status)
		b = append(b, `,"call_id":`...)
		b = jsonw.String(b, it.callID)
		b = append(b, `,"name":`...)
		b = jsonw.String(b, it.name)
		b = append(b, `,"arguments":`...)
		args := it.args.String()
		if status == "completed" {
			args = orEmptyObject(args)
		}
		b = jsonw.String(b, args)
		return append(b, '}')
	}
	b = append(b, `{"id":`...)
	b = jsonw.String(b, it.id)
	b = append(b, `,"type":"message","status":`...)
	b = jsonw.String(b, status)
	b = append(b, `,"role":"assistant","content":[`...)
	if status != "in_progress" {
		b = appendTextPart(b, it.text.String())
	}
	return append(b, "]}"...)
}

// appendTextPart appends an output_text part.
func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = jsonw.String(b, text)
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

// rsStatus returns the response's status and incomplete reason for a
// finish: completed, or incomplete at the output cap or the content
// filter.
func rsStatus(f llm.FinishReason) (status, reason string) {
	switch f {
	case llm.FinishLength:
		return "incomplete", "max_output_tokens"
	case llm.FinishContentFilter:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// appendRsResponse appends the response object: its status (and the
// incomplete reason, or the error e of a failed one), the output items
// (each of itemStatus; none when items is nil) and usage (null when nil).
func appendRsResponse(b []byte, c *call, model, status, reason string, items []*rsOutItem, itemStatus string,
	u *llm.Usage, e *apiError) []byte {
	b = append(b, `{"id":"resp_`...)
	b = append(b, c.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = appendInt(b, int(c.start.Unix()))
	b = append(b, `,"status":`...)
	b = jsonw.String(b, status)
	b = append(b, `,"background":false,"error":`...)
	if e != nil {
		b = append(b, `{"code":`...)
		b = jsonw.String(b, rsErrorCode(e))
		b = append(b, `,"message":`...)
		b = jsonw.String(b, e.Message)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if reason != "" {
		b = append(b, `{"reason":`...)
		b = jsonw.String(b, reason)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, ',')
	if c.cr.rs != nil {
		b = append(b, c.cr.rs.fields...)
		b = append(b, ',')
	}
	b = append(b, `"model":`...)
	b = jsonw.String(b, answerModel(model, c))
	b = append(b, `,"output":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, it, itemStatus)
	}
	b = append(b, `],"usage":`...)
	if u == nil {
		b = append(b, "null"...)
	} else {
		b = appendRsUsage(b, *u)
	}
	return append(b, '}')
}

// appendRsUsage appends u in the Responses API's words.
func appendRsUsage(b []byte, u llm.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.InputTokens)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, u.CacheReadTokens)
	b = append(b, `},"output_tokens":`...)
	b = appendInt(b, u.OutputTokens)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, u.ReasoningTokens)
	b = append(b, `},"total_tokens":`...)
	b = appendInt(b, u.InputTokens+u.OutputTokens)
	return append(b, '}')
}

// rsErrorCode is the code of a failed response's error: e's code, else
// its type.
func rsErrorCode(e *apiError) string {
	if e.Code != "" {
		return e.Code
	}
	return e.openAIType()
}

// rsItems returns the output items of a whole answer: the message (when
// it has text, or nothing else), then one item per tool call.
func rsItems(c *call, m *llm.Message) []*rsOutItem {
	var items []*rsOutItem
	if m.Content != "" || len(m.ToolCalls) == 0 {
		it := &rsOutItem{kind: rsMessageItem, id: "msg_" + c.id}
		it.text.WriteString(m.Content)
		items = append(items, it)
	}
	for i, tc := range m.ToolCalls {
		it := &rsOutItem{kind: rsCallItem, id: "fc_" + c.id + "_" + strconv.Itoa(i), callID: tc.ID, name: tc.Name,
			out: len(items)}
		it.args.WriteString(tc.Arguments)
		items = append(items, it)
	}
	return items
}

// appendResponsesObject appends the response object of a whole answer.
func appendResponsesObject(b []byte, c *call, resp *llm.Response) []byte {
	status, reason := rsStatus(resp.FinishReason)
	itemStatus := "completed"
	if status != "completed" {
		itemStatus = "incomplete"
	}
	b = appendRsResponse(b, c, resp.Model, status, reason, rsItems(c, &resp.Message), itemStatus, &resp.Usage, nil)
	return append(b, '\n')
}
