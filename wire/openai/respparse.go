package openai

import (
	"github.com/detourhq/detour/internal/jsonscan"
)

// parseResponseFast decodes a chat.completion body into *cr, which must be
// zero, exactly as json.Unmarshal would, or reports false for anything it
// does not handle (the caller then uses encoding/json). It reads the
// fields chatResponse has under their exact names, each at most once, and
// skips (checking them) the keys it does not have; it leaves to
// encoding/json a key that matches a field only when case is ignored, an
// "error" anywhere, and content or arguments that are not strings.
// FuzzResponseDecodeMatchesJSON checks it against json.Unmarshal.
func parseResponseFast(body string, cr *chatResponse) bool {
	p := &jsonscan.Scanner{S: body}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "id":
			return seen.First(1) && p.NullableString(&cr.ID)
		case "model":
			return seen.First(2) && p.NullableString(&cr.Model)
		case "choices":
			return seen.First(4) && respChoices(p, &cr.Choices)
		case "usage":
			return seen.First(8) && usage(p, &cr.Usage, new(chatUsage))
		}
		return p.SkipUnknown(key, "id", "model", "choices", "usage", "error")
	}) && p.End()
}

// respChoices reads the "choices" array of a response.
func respChoices(p *jsonscan.Scanner, dst *[]chatChoice) bool {
	return jsonscan.List(p, dst, 1, func(ch *chatChoice) bool {
		var seen jsonscan.Seen
		return p.Object(func(key string) bool {
			switch key {
			case "index":
				return seen.First(1) && nullableInt(p, &ch.Index)
			case "message":
				return seen.First(2) && respMessageFast(p, &ch.Message)
			case "finish_reason":
				return seen.First(4) && p.NullableString(&ch.FinishReason)
			}
			return p.SkipUnknown(key, "index", "message", "finish_reason", "error")
		})
	})
}

// respMessageFast reads a choice's message object.
func respMessageFast(p *jsonscan.Scanner, m *respMessage) bool {
	if p.Null() {
		return true
	}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "role":
			return seen.First(1) && p.NullableString(&m.Role)
		case "content":
			return seen.First(2) && stringContent(p, &m.Content)
		case "refusal":
			return seen.First(4) && nullableStringPtr(p, &m.Refusal)
		case "tool_calls":
			return seen.First(8) && jsonscan.List(p, &m.ToolCalls, 1, func(tc *respToolCall) bool {
				var seen jsonscan.Seen
				return p.Object(func(key string) bool {
					switch key {
					case "id":
						return seen.First(1) && p.NullableString(&tc.ID)
					case "function":
						return seen.First(2) && functionFields(p, &tc.Function)
					}
					return p.SkipUnknown(key, "id", "function")
				})
			})
		case "function_call":
			return seen.First(16) && function(p, &m.FunctionCall, new(respFunction))
		}
		return p.SkipUnknown(key, "role", "content", "refusal", "tool_calls", "function_call")
	})
}
