package anthropic

import (
	"encoding/json"

	"github.com/detourhq/detour/internal/jsonscan"
)

// This file holds a fast path for decoding the common stream events,
// content_block_delta above all:
//
//	{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}
//
// parseEventFast fills a streamEvent exactly as json.Unmarshal would, or
// reports false and the caller uses encoding/json. It reads type, index,
// delta (type, text, partial_json, stop_reason) and usage under their exact
// names, each at most once, skips (checking them) keys streamEvent does not
// have, and leaves to encoding/json the events that carry a message, a
// content_block, an error or stop_details, and any key that matches a
// field only when case is ignored. FuzzEventDecodeMatchesJSON checks it
// against json.Unmarshal.

// eventScratch backs the pointers parseEventFast fills, reused event after
// event (the stream reads each event before it decodes the next).
type eventScratch struct {
	index int
	delta eventDelta
}

// parseEventFast decodes data into *e, which must be zero, with its index
// and delta pointers into *sc. It reports false when data is not of the
// handled shape; *e is then undefined.
func parseEventFast(data string, e *streamEvent, sc *eventScratch) bool {
	p := &jsonscan.Scanner{S: data}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "type":
			return seen.First(1) && p.NullableString(&e.Type)
		case "index":
			return seen.First(2) && jsonscan.PtrInto(p, &e.Index, &sc.index, p.Int)
		case "delta":
			return seen.First(4) && jsonscan.PtrInto(p, &e.Delta, &sc.delta, func(d *eventDelta) bool { return deltaFast(p, d) })
		case "usage":
			return seen.First(8) && jsonscan.Ptr(p, &e.Usage, func(u *usage) bool { return usageFast(p, u) })
		case "message":
			return seen.First(16) && jsonscan.Ptr(p, &e.Message, func(m *message) bool { return messageFast(p, m) })
		case "content_block":
			return seen.First(32) && jsonscan.Ptr(p, &e.ContentBlock, func(b *contentBlock) bool { return blockFast(p, b) })
		}
		return p.SkipUnknown(key, "type", "message", "index", "content_block", "delta", "usage", "error")
	}) && p.End()
}

// parseMessageFast decodes a Messages response body into *m, which must be
// zero, as json.Unmarshal would, or reports false (see parseEventFast).
func parseMessageFast(body string, m *message) bool {
	p := &jsonscan.Scanner{S: body}
	return messageFast(p, m) && p.End()
}

// messageFast reads a message object (message_start's, or a whole
// response) without an error or stop_details.
func messageFast(p *jsonscan.Scanner, m *message) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "id":
			return seen.First(1) && p.NullableString(&m.ID)
		case "type":
			return seen.First(2) && p.NullableString(&m.Type)
		case "model":
			return seen.First(4) && p.NullableString(&m.Model)
		case "content":
			return seen.First(8) && jsonscan.List(p, &m.Content, 1, func(b *contentBlock) bool { return blockFast(p, b) })
		case "stop_reason":
			return seen.First(16) && p.NullableString(&m.StopReason)
		case "stop_details":
			return seen.First(32) && p.Null()
		case "usage":
			return seen.First(64) && jsonscan.Ptr(p, &m.Usage, func(u *usage) bool { return usageFast(p, u) })
		}
		return p.SkipUnknown(key, "id", "type", "model", "content", "stop_reason", "stop_details", "usage", "error")
	})
}

// blockFast reads a content block.
func blockFast(p *jsonscan.Scanner, b *contentBlock) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "type":
			return seen.First(1) && p.NullableString(&b.Type)
		case "text":
			return seen.First(2) && p.NullableString(&b.Text)
		case "id":
			return seen.First(4) && p.NullableString(&b.ID)
		case "name":
			return seen.First(8) && p.NullableString(&b.Name)
		case "input":
			if !seen.First(16) {
				return false
			}
			s, ok := p.Raw()
			b.Input = json.RawMessage(s)
			return ok
		}
		return p.SkipUnknown(key, "type", "text", "id", "name", "input")
	})
}

// deltaFast reads a delta object without stop_details.
func deltaFast(p *jsonscan.Scanner, d *eventDelta) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "type":
			return seen.First(1) && p.NullableString(&d.Type)
		case "text":
			return seen.First(2) && p.NullableString(&d.Text)
		case "partial_json":
			return seen.First(4) && p.NullableString(&d.PartialJSON)
		case "stop_reason":
			return seen.First(8) && p.NullableString(&d.StopReason)
		case "stop_details":
			return seen.First(16) && p.Null()
		}
		return p.SkipUnknown(key, "type", "text", "partial_json", "stop_reason", "stop_details")
	})
}

// usageFast reads a usage object's token counts.
func usageFast(p *jsonscan.Scanner, u *usage) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "input_tokens":
			return seen.First(1) && jsonscan.Ptr(p, &u.InputTokens, p.Int)
		case "output_tokens":
			return seen.First(2) && jsonscan.Ptr(p, &u.OutputTokens, p.Int)
		case "cache_creation_input_tokens":
			return seen.First(4) && jsonscan.Ptr(p, &u.CacheCreationInputTokens, p.Int)
		case "cache_read_input_tokens":
			return seen.First(8) && jsonscan.Ptr(p, &u.CacheReadInputTokens, p.Int)
		}
		return p.SkipUnknown(key, "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
	})
}
