package gateway

import (
	"strconv"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// rsStream writes the Responses event stream of an answer:
// response.created and response.in_progress with the first output, then
// per output item output_item.added, its deltas (output_text.delta after
// a content_part.added; function_call_arguments.delta), and at the end
// each item's .done events and response.completed (response.incomplete
// at the output cap or the content filter) carrying the whole response
// and its usage. A failure after the first output is a response.failed
// event, then an error event whose "error" key makes openai-go's stream
// end with an error (Err) and the Python SDK raise. No [DONE]: the
// Responses API sends none.
type rsStream struct {
	c       *call
	seq     int
	model   string
	started bool
	items   []*rsOutItem
	msg     *rsOutItem         // the message item, once text came
	calls   map[int]*rsOutItem // the function call items, by the canonical tool call index
	finish  llm.FinishReason
	u       llm.Usage
}

func (o *rsStream) usage() llm.Usage { return o.u }

// ev appends the start of event typ: its event line, and its data up to
// the sequence number. The caller appends the other fields and "}\n\n".
func (o *rsStream) ev(b []byte, typ string) []byte {
	b = event(b, typ)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = appendInt(b, o.seq)
	o.seq++
	return b
}

// where appends the item_id and output_index of it.
func where(b []byte, it *rsOutItem) []byte {
	b = append(b, `,"item_id":`...)
	b = jsonw.String(b, it.id)
	b = append(b, `,"output_index":`...)
	return appendInt(b, it.out)
}

// start appends response.created and response.in_progress, once.
func (o *rsStream) start(b []byte, model string) []byte {
	if o.started {
		return b
	}
	o.started = true
	if o.model == "" {
		o.model = model
	}
	for _, typ := range []string{"response.created", "response.in_progress"} {
		b = o.ev(b, typ)
		b = append(b, `,"response":`...)
		b = appendRsResponse(b, o.c, o.model, "in_progress", "", nil, "", nil, nil)
		b = append(b, "}\n\n"...)
	}
	return b
}

// add appends output_item.added for a new item.
func (o *rsStream) add(b []byte, it *rsOutItem) []byte {
	it.out = len(o.items)
	o.items = append(o.items, it)
	b = o.ev(b, "response.output_item.added")
	b = append(b, `,"output_index":`...)
	b = appendInt(b, it.out)
	b = append(b, `,"item":`...)
	b = appendItem(b, it, "in_progress")
	return append(b, "}\n\n"...)
}

// chunk appends the events of ch; nothing for a chunk without output.
func (o *rsStream) chunk(b []byte, ch llm.Chunk) []byte {
	if ch.Usage != nil {
		o.u = *ch.Usage
	}
	if ch.FinishReason != "" {
		o.finish = ch.FinishReason
	}
	if ch.Model != "" && o.model == "" {
		o.model = ch.Model
	}
	if ch.Content == "" && len(ch.ToolCalls) == 0 {
		return b
	}
	b = o.start(b, ch.Model)
	if ch.Content != "" {
		if o.msg == nil {
			o.msg = &rsOutItem{kind: rsMessageItem, id: "msg_" + o.c.id}
			b = o.add(b, o.msg)
			b = o.ev(b, "response.content_part.added")
			b = where(b, o.msg)
			b = append(b, `,"content_index":0,"part":`...)
			b = appendTextPart(b, "")
			b = append(b, "}\n\n"...)
		}
		o.msg.text.WriteString(ch.Content)
		b = o.ev(b, "response.output_text.delta")
		b = where(b, o.msg)
		b = append(b, `,"content_index":0,"delta":`...)
		b = jsonw.String(b, ch.Content)
		b = append(b, `,"logprobs":[]}`+"\n\n"...)
	}
	for _, tc := range ch.ToolCalls {
		it := o.calls[tc.Index]
		if it == nil {
			if o.calls == nil {
				o.calls = map[int]*rsOutItem{}
			}
			it = &rsOutItem{kind: rsCallItem, id: "fc_" + o.c.id + "_" + strconv.Itoa(len(o.calls)), callID: tc.ID, name: tc.Name}
			if it.callID == "" {
				it.callID = "call_" + o.c.id + "_" + strconv.Itoa(len(o.calls))
			}
			o.calls[tc.Index] = it
			b = o.add(b, it)
		}
		if tc.Arguments == "" {
			continue
		}
		it.args.WriteString(tc.Arguments)
		b = o.ev(b, "response.function_call_arguments.delta")
		b = where(b, it)
		b = append(b, `,"delta":`...)
		b = jsonw.String(b, tc.Arguments)
		b = append(b, "}\n\n"...)
	}
	return b
}

// done appends the .done events of it, of status status.
func (o *rsStream) done(b []byte, it *rsOutItem, status string) []byte {
	if it.kind == rsMessageItem {
		text := it.text.String()
		b = o.ev(b, "response.output_text.done")
		b = where(b, it)
		b = append(b, `,"content_index":0,"text":`...)
		b = jsonw.String(b, text)
		b = append(b, `,"logprobs":[]}`+"\n\n"...)
		b = o.ev(b, "response.content_part.done")
		b = where(b, it)
		b = append(b, `,"content_index":0,"part":`...)
		b = appendTextPart(b, text)
		b = append(b, "}\n\n"...)
	} else {
		b = o.ev(b, "response.function_call_arguments.done")
		b = where(b, it)
		b = append(b, `,"name":`...)
		b = jsonw.String(b, it.name)
		b = append(b, `,"arguments":`...)
		b = jsonw.String(b, orEmptyObject(it.args.String()))
		b = append(b, "}\n\n"...)
	}
	b = o.ev(b, "response.output_item.done")
	b = append(b, `,"output_index":`...)
	b = appendInt(b, it.out)
	b = append(b, `,"item":`...)
	b = appendItem(b, it, status)
	return append(b, "}\n\n"...)
}

// end appends the close of a complete answer: every item's .done events,
// then response.completed or response.incomplete.
func (o *rsStream) end(b []byte) []byte {
	b = o.start(b, "")
	if len(o.items) == 0 {
		// An answer with no output at all is one empty message, as whole.
		o.msg = &rsOutItem{kind: rsMessageItem, id: "msg_" + o.c.id}
		b = o.add(b, o.msg)
		b = o.ev(b, "response.content_part.added")
		b = where(b, o.msg)
		b = append(b, `,"content_index":0,"part":`...)
		b = appendTextPart(b, "")
		b = append(b, "}\n\n"...)
	}
	status, reason := rsStatus(o.finish)
	itemStatus, typ := "completed", "response.completed"
	if status != "completed" {
		itemStatus, typ = "incomplete", "response.incomplete"
	}
	for _, it := range o.items {
		b = o.done(b, it, itemStatus)
	}
	b = o.ev(b, typ)
	b = append(b, `,"response":`...)
	b = appendRsResponse(b, o.c, o.model, status, reason, o.items, itemStatus, &o.u, nil)
	return append(b, "}\n\n"...)
}

// fail appends response.failed (the output so far, incomplete, and the
// error), then the error event.
func (o *rsStream) fail(b []byte, e *apiError) []byte {
	b = o.start(b, "")
	b = o.ev(b, "response.failed")
	b = append(b, `,"response":`...)
	b = appendRsResponse(b, o.c, o.model, "failed", "", o.items, "incomplete", nil, e)
	b = append(b, "}\n\n"...)
	b = o.ev(b, "error")
	b = append(b, `,"code":`...)
	b = jsonw.String(b, rsErrorCode(e))
	b = append(b, `,"message":`...)
	b = jsonw.String(b, e.Message)
	b = append(b, `,"param":`...)
	b = appendStringOrNull(b, e.Param)
	// The "error" key is what openai-go (and the Python SDK) take for an
	// error: the event fields above alone pass as a normal event.
	b = append(b, `,"error":`...)
	b = appendOpenAIErrorObject(b, e)
	return append(b, "}\n\n"...)
}
