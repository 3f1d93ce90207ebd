package gateway

import (
	"encoding/json"

	"github.com/detourhq/detour/internal/jsonscan"
)

// parseOARequestFast decodes a chat completions body into *in, which must
// be zero, exactly as decodeJSON would, or reports false for anything it
// does not handle (the caller then uses decodeJSON, which also words the
// errors). It reads the fields oaRequest has under their exact names, each
// at most once, and skips (checking them) the keys it does not have; a key
// that matches a field only when case is ignored is left to encoding/json.
// FuzzOARequestMatchesJSON checks it against decodeJSON.
func parseOARequestFast(body string, in *oaRequest) bool {
	p := &jsonscan.Scanner{S: body}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "model":
			return seen.First(1<<0) && p.NullableString(&in.Model)
		case "models":
			return seen.First(1<<1) && jsonscan.List(p, &in.Models, 2, p.NullableString)
		case "messages":
			return seen.First(1<<2) && jsonscan.List(p, &in.Messages, 4, func(m *oaMessage) bool { return oaMessageFast(p, m) })
		case "tools":
			return seen.First(1<<3) && jsonscan.List(p, &in.Tools, 1, func(t *oaTool) bool { return oaToolFast(p, t) })
		case "tool_choice":
			return seen.First(1<<4) && raw(p, &in.ToolChoice)
		case "max_tokens":
			return seen.First(1<<5) && jsonscan.Ptr(p, &in.MaxTokens, p.Int)
		case "max_completion_tokens":
			return seen.First(1<<6) && jsonscan.Ptr(p, &in.MaxCompletionTokens, p.Int)
		case "temperature":
			return seen.First(1<<7) && jsonscan.Ptr(p, &in.Temperature, p.Float)
		case "top_p":
			return seen.First(1<<8) && jsonscan.Ptr(p, &in.TopP, p.Float)
		case "stop":
			return seen.First(1<<9) && raw(p, &in.Stop)
		case "response_format":
			return seen.First(1<<10) && raw(p, &in.ResponseFormat)
		case "stream":
			return seen.First(1<<11) && jsonscan.Ptr(p, &in.Stream, p.Bool)
		case "stream_options":
			return seen.First(1<<12) && jsonscan.Ptr(p, &in.StreamOptions, func(o *oaStreamOptions) bool {
				var seen jsonscan.Seen
				return p.Object(func(key string) bool {
					if key == "include_usage" {
						return seen.First(1) && (p.Null() || p.Bool(&o.IncludeUsage))
					}
					return p.SkipUnknown(key, "include_usage")
				})
			})
		case "n":
			return seen.First(1<<13) && jsonscan.Ptr(p, &in.N, p.Int)
		}
		return p.SkipUnknown(key, "model", "models", "messages", "tools", "tool_choice", "max_tokens",
			"max_completion_tokens", "temperature", "top_p", "stop", "response_format", "stream", "stream_options", "n")
	}) && p.End()
}

// raw reads any value as a json.RawMessage holds it.
func raw(p *jsonscan.Scanner, dst *json.RawMessage) bool {
	s, ok := p.Raw()
	if ok {
		*dst = json.RawMessage(s)
	}
	return ok
}

// content reads a message's content as oaContentField.UnmarshalJSON
// does: a string's text (a substring of the body when it has no escapes),
// null, or the JSON of anything else.
func content(p *jsonscan.Scanner, c *oaContentField) bool {
	switch p.Peek() {
	case '"':
		s, ok := p.Str()
		c.Text = s
		return ok
	case 'n':
		return p.Null()
	}
	return raw(p, &c.Raw)
}

// oaMessageFast reads one message object.
func oaMessageFast(p *jsonscan.Scanner, m *oaMessage) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "role":
			return seen.First(1) && p.NullableString(&m.Role)
		case "content":
			return seen.First(2) && content(p, &m.Content)
		case "name":
			return seen.First(4) && p.NullableString(&m.Name)
		case "tool_calls":
			return seen.First(8) && jsonscan.List(p, &m.ToolCalls, 1, func(tc *oaToolCall) bool { return oaToolCallFast(p, tc) })
		case "tool_call_id":
			return seen.First(16) && p.NullableString(&m.ToolCallID)
		}
		return p.SkipUnknown(key, "role", "content", "name", "tool_calls", "tool_call_id")
	})
}

// oaToolCallFast reads one tool call of an assistant message.
func oaToolCallFast(p *jsonscan.Scanner, tc *oaToolCall) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "id":
			return seen.First(1) && p.NullableString(&tc.ID)
		case "type":
			return seen.First(2) && p.NullableString(&tc.Type)
		case "function":
			return seen.First(4) && (p.Null() || p.Object(func(key string) bool {
				switch key {
				case "name":
					return seen.First(8) && p.NullableString(&tc.Function.Name)
				case "arguments":
					return seen.First(16) && p.NullableString(&tc.Function.Arguments)
				}
				return p.SkipUnknown(key, "name", "arguments")
			}))
		}
		return p.SkipUnknown(key, "id", "type", "function")
	})
}

// oaToolFast reads one tool definition.
func oaToolFast(p *jsonscan.Scanner, t *oaTool) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "type":
			return seen.First(1) && p.NullableString(&t.Type)
		case "function":
			return seen.First(2) && jsonscan.Ptr(p, &t.Function, func(f *oaFunctionDef) bool {
				var seen jsonscan.Seen
				return p.Object(func(key string) bool {
					switch key {
					case "name":
						return seen.First(1) && p.NullableString(&f.Name)
					case "description":
						return seen.First(2) && p.NullableString(&f.Description)
					case "parameters":
						return seen.First(4) && raw(p, &f.Parameters)
					}
					return p.SkipUnknown(key, "name", "description", "parameters")
				})
			})
		}
		return p.SkipUnknown(key, "type", "function")
	})
}
