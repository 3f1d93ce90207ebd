package gateway

import (
	"github.com/detourhq/detour/internal/jsonscan"
)

// parseANRequestFast decodes a Messages body into *in, which must be zero,
// exactly as decodeJSON would, or reports false for anything it does not
// handle (the caller then uses decodeJSON, which also words the errors).
// It reads the fields anRequest has under their exact names, each at most
// once, and skips (checking them) the keys it does not have (metadata,
// thinking, ...); a key that matches a field only when case is ignored is
// left to encoding/json. FuzzANRequestMatchesJSON checks it against
// decodeJSON.
func parseANRequestFast(body string, in *anRequest) bool {
	p := &jsonscan.Scanner{S: body}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "model":
			return seen.First(1<<0) && p.NullableString(&in.Model)
		case "models":
			return seen.First(1<<1) && jsonscan.List(p, &in.Models, 2, p.NullableString)
		case "messages":
			return seen.First(1<<2) && jsonscan.List(p, &in.Messages, 4, func(m *anMessage) bool { return anMessageFast(p, m) })
		case "system":
			return seen.First(1<<3) && raw(p, &in.System)
		case "max_tokens":
			return seen.First(1<<4) && jsonscan.Ptr(p, &in.MaxTokens, p.Int)
		case "stop_sequences":
			return seen.First(1<<5) && jsonscan.List(p, &in.StopSequences, 1, p.NullableString)
		case "temperature":
			return seen.First(1<<6) && jsonscan.Ptr(p, &in.Temperature, p.Float)
		case "top_p":
			return seen.First(1<<7) && jsonscan.Ptr(p, &in.TopP, p.Float)
		case "stream":
			return seen.First(1<<8) && jsonscan.Ptr(p, &in.Stream, p.Bool)
		case "tools":
			return seen.First(1<<9) && jsonscan.List(p, &in.Tools, 1, func(t *anTool) bool { return anToolFast(p, t) })
		case "tool_choice":
			return seen.First(1<<10) && jsonscan.Ptr(p, &in.ToolChoice, func(tc *anToolChoice) bool {
				var seen jsonscan.Seen
				return p.Object(func(key string) bool {
					switch key {
					case "type":
						return seen.First(1) && p.NullableString(&tc.Type)
					case "name":
						return seen.First(2) && p.NullableString(&tc.Name)
					}
					return p.SkipUnknown(key, "type", "name")
				})
			})
		}
		return p.SkipUnknown(key, "model", "models", "messages", "system", "max_tokens", "stop_sequences",
			"temperature", "top_p", "stream", "tools", "tool_choice")
	}) && p.End()
}

// anMessageFast reads one message object; a string content is kept as its
// text (a substring of the body when it has no escapes).
func anMessageFast(p *jsonscan.Scanner, m *anMessage) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "role":
			return seen.First(1) && p.NullableString(&m.Role)
		case "content":
			if !seen.First(2) {
				return false
			}
			if p.Peek() == '"' {
				s, ok := p.Str()
				m.Content.Text, m.Content.Str = s, true
				return ok
			}
			return raw(p, &m.Content.Raw)
		}
		return p.SkipUnknown(key, "role", "content")
	})
}

// anToolFast reads one tool definition.
func anToolFast(p *jsonscan.Scanner, t *anTool) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "type":
			return seen.First(1) && p.NullableString(&t.Type)
		case "name":
			return seen.First(2) && p.NullableString(&t.Name)
		case "description":
			return seen.First(4) && p.NullableString(&t.Description)
		case "input_schema":
			return seen.First(8) && raw(p, &t.InputSchema)
		}
		return p.SkipUnknown(key, "type", "name", "description", "input_schema")
	})
}
