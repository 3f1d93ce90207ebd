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
	var seen uint
	first := func(bit uint) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	return p.Object(func(key string) bool {
		switch key {
		case "model":
			return first(1<<0) && p.NullableString(&in.Model)
		case "models":
			return first(1<<1) && stringList(p, &in.Models)
		case "messages":
			return first(1<<2) && oaMessagesFast(p, &in.Messages)
		case "tools":
			return first(1<<3) && oaToolsFast(p, &in.Tools)
		case "tool_choice":
			return first(1<<4) && raw(p, &in.ToolChoice)
		case "max_tokens":
			return first(1<<5) && jsonscan.Ptr(p, &in.MaxTokens, p.Int)
		case "max_completion_tokens":
			return first(1<<6) && jsonscan.Ptr(p, &in.MaxCompletionTokens, p.Int)
		case "temperature":
			return first(1<<7) && jsonscan.Ptr(p, &in.Temperature, p.Float)
		case "top_p":
			return first(1<<8) && jsonscan.Ptr(p, &in.TopP, p.Float)
		case "stop":
			return first(1<<9) && raw(p, &in.Stop)
		case "response_format":
			return first(1<<10) && raw(p, &in.ResponseFormat)
		case "stream":
			return first(1<<11) && jsonscan.Ptr(p, &in.Stream, p.Bool)
		case "stream_options":
			return first(1<<12) && streamOptions(p, &in.StreamOptions)
		case "n":
			return first(1<<13) && jsonscan.Ptr(p, &in.N, p.Int)
		}
		return skipUnknown(p, key, "model", "models", "messages", "tools", "tool_choice", "max_tokens",
			"max_completion_tokens", "temperature", "top_p", "stop", "response_format", "stream", "stream_options", "n")
	}) && p.End()
}

// skipUnknown skips the value of a key the struct being filled lacks,
// unless it matches one of its fields (names) when case is ignored.
func skipUnknown(p *jsonscan.Scanner, key string, names ...string) bool {
	return !jsonscan.Folds(key, names...) && p.SkipValue()
}

// raw reads any value as a json.RawMessage holds it.
func raw(p *jsonscan.Scanner, dst *json.RawMessage) bool {
	s, ok := p.Raw()
	if ok {
		*dst = json.RawMessage(s)
	}
	return ok
}

// stringList reads an array of strings (null elements stay ""), or null.
func stringList(p *jsonscan.Scanner, dst *[]string) bool {
	if p.Null() {
		return true
	}
	out := []string{}
	ok := p.Array(func() bool {
		out = append(out, "")
		return p.NullableString(&out[len(out)-1])
	})
	*dst = out
	return ok
}

// streamOptions reads stream_options, or null.
func streamOptions(p *jsonscan.Scanner, dst **oaStreamOptions) bool {
	return jsonscan.Ptr(p, dst, func(o *oaStreamOptions) bool {
		var seen bool
		return p.Object(func(key string) bool {
			if key == "include_usage" && !seen {
				seen = true
				return p.Null() || p.Bool(&o.IncludeUsage)
			}
			return skipUnknown(p, key, "include_usage")
		})
	})
}

// oaMessagesFast reads the messages array, or null.
func oaMessagesFast(p *jsonscan.Scanner, dst *[]oaMessage) bool {
	if p.Null() {
		return true
	}
	out := make([]oaMessage, 0, 4)
	ok := p.Array(func() bool {
		out = append(out, oaMessage{})
		m := &out[len(out)-1]
		if p.Null() {
			return true
		}
		var seen uint
		return p.Object(func(key string) bool {
			var bit uint
			switch key {
			case "role":
				bit = 1
			case "content":
				bit = 2
			case "name":
				bit = 4
			case "tool_calls":
				bit = 8
			case "tool_call_id":
				bit = 16
			default:
				return skipUnknown(p, key, "role", "content", "name", "tool_calls", "tool_call_id")
			}
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			switch bit {
			case 1:
				return p.NullableString(&m.Role)
			case 2:
				return raw(p, &m.Content)
			case 4:
				return p.NullableString(&m.Name)
			case 8:
				return oaToolCallsFast(p, &m.ToolCalls)
			}
			return p.NullableString(&m.ToolCallID)
		})
	})
	*dst = out
	return ok
}

// oaToolCallsFast reads an assistant message's tool_calls, or null.
func oaToolCallsFast(p *jsonscan.Scanner, dst *[]oaToolCall) bool {
	if p.Null() {
		return true
	}
	out := []oaToolCall{}
	ok := p.Array(func() bool {
		out = append(out, oaToolCall{})
		tc := &out[len(out)-1]
		if p.Null() {
			return true
		}
		var seen uint
		return p.Object(func(key string) bool {
			var bit uint
			switch key {
			case "id":
				bit = 1
			case "type":
				bit = 2
			case "function":
				bit = 4
			default:
				return skipUnknown(p, key, "id", "type", "function")
			}
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			switch bit {
			case 1:
				return p.NullableString(&tc.ID)
			case 2:
				return p.NullableString(&tc.Type)
			}
			return oaFunctionCallFast(p, &tc.Function)
		})
	})
	*dst = out
	return ok
}

// oaFunctionCallFast reads a tool call's function object, or null.
func oaFunctionCallFast(p *jsonscan.Scanner, f *oaFunctionCall) bool {
	if p.Null() {
		return true
	}
	var seen uint
	return p.Object(func(key string) bool {
		switch {
		case key == "name" && seen&1 == 0:
			seen |= 1
			return p.NullableString(&f.Name)
		case key == "arguments" && seen&2 == 0:
			seen |= 2
			return p.NullableString(&f.Arguments)
		case key == "name" || key == "arguments":
			return false
		}
		return skipUnknown(p, key, "name", "arguments")
	})
}

// oaToolsFast reads the tools array, or null.
func oaToolsFast(p *jsonscan.Scanner, dst *[]oaTool) bool {
	if p.Null() {
		return true
	}
	out := []oaTool{}
	ok := p.Array(func() bool {
		out = append(out, oaTool{})
		t := &out[len(out)-1]
		if p.Null() {
			return true
		}
		var seen uint
		return p.Object(func(key string) bool {
			switch {
			case key == "type" && seen&1 == 0:
				seen |= 1
				return p.NullableString(&t.Type)
			case key == "function" && seen&2 == 0:
				seen |= 2
				return oaFunctionDefFast(p, &t.Function)
			case key == "type" || key == "function":
				return false
			}
			return skipUnknown(p, key, "type", "function")
		})
	})
	*dst = out
	return ok
}

// oaFunctionDefFast reads a tool's function definition, or null (nil).
func oaFunctionDefFast(p *jsonscan.Scanner, dst **oaFunctionDef) bool {
	return jsonscan.Ptr(p, dst, func(f *oaFunctionDef) bool {
		return functionDefFields(p, f)
	})
}

// functionDefFields reads the fields of a tool's function definition.
func functionDefFields(p *jsonscan.Scanner, f *oaFunctionDef) bool {
	var seen uint
	return p.Object(func(key string) bool {
		switch {
		case key == "name" && seen&1 == 0:
			seen |= 1
			return p.NullableString(&f.Name)
		case key == "description" && seen&2 == 0:
			seen |= 2
			return p.NullableString(&f.Description)
		case key == "parameters" && seen&4 == 0:
			seen |= 4
			return raw(p, &f.Parameters)
		case key == "name" || key == "description" || key == "parameters":
			return false
		}
		return skipUnknown(p, key, "name", "description", "parameters")
	})
}
