package gateway

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/detourhq/detour/internal/jsonscan"
)

// needs lists what a request carries beyond detour's canonical fields, by
// name (llm.Request.Needs): a top-level field no canonical field holds
// ("seed", "logprobs", "thinking", a field detour never heard of), what
// the canonical messages and tools cannot hold ("cache_control", "thinking
// blocks", "web_search tool"), and the images, documents and audio they
// hold (llm.Message.Parts) by the form each was given in (llm.Part.Need:
// "image input", "image url input", "document input", "audio input", ...;
// parts.go). A target of the client's own dialect gets all of it; a
// target of another dialect must carry each, drop the safe ones, or be
// skipped (router contract).
type needs []string

func (n *needs) add(name string) {
	if !slices.Contains(*n, name) {
		*n = append(*n, name)
	}
}

// The top-level fields each surface's canonical form holds.
var (
	oaCovered = []string{"model", "models", "detour", "messages", "tools", "tool_choice", "max_tokens",
		"max_completion_tokens", "temperature", "top_p", "stop", "stream", "stream_options", "n", "response_format"}
	anCovered = []string{"model", "models", "detour", "messages", "system", "max_tokens", "temperature", "top_p",
		"stop_sequences", "stream", "tools", "tool_choice"}
)

// needsOf reads the needs of a request body on surface d. A body the fast
// scanner cannot walk is read through encoding/json.
func needsOf(d dialect, body []byte) []string {
	var n needs
	s := &jsonscan.Scanner{S: string(body)}
	var ok bool
	if d == anthropicDialect {
		ok = anNeeds(s, &n)
	} else {
		ok = oaNeeds(s, &n)
	}
	if ok {
		return n
	}
	n = nil
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil // the parser has already refused it
	}
	b, _ := json.Marshal(v) // escapes normalised: the fast scanner reads it
	s = &jsonscan.Scanner{S: string(b)}
	if d == anthropicDialect {
		ok = anNeeds(s, &n)
	} else {
		ok = oaNeeds(s, &n)
	}
	if !ok {
		// Keys no scanner here reads (non-ASCII): whatever they are, no
		// other dialect may lose them quietly.
		n.add("unrecognised fields")
	}
	return n
}

// top walks the top-level fields of a request: covered ones go to field
// (which reads the value), the others, unless null, are needs by name.
func top(s *jsonscan.Scanner, n *needs, covered []string, field func(key string) bool) bool {
	return s.Object(func(k string) bool {
		// encoding/json, which reads the request, matches a key to its
		// field without regard to case ("messaGes" is messages): so does
		// the walk.
		if i := slices.IndexFunc(covered, func(c string) bool { return strings.EqualFold(c, k) }); i >= 0 {
			return field(covered[i])
		}
		if !s.Null() {
			n.add(k)
			return s.SkipValue()
		}
		return true
	}) && s.End()
}

// objects reads null or an array of objects, calling key for each member.
func objects(s *jsonscan.Scanner, key func(k string) bool) bool {
	if s.Null() {
		return true
	}
	return s.Array(func() bool { return s.Object(key) })
}

// skipOrNull skips a value; null is a value too.
func skipOrNull(s *jsonscan.Scanner) bool { return s.Null() || s.SkipValue() }

// oaNeeds walks an OpenAI chat completions request.
func oaNeeds(s *jsonscan.Scanner, n *needs) bool {
	var format, tools bool
	ok := top(s, n, oaCovered, func(k string) bool {
		switch k {
		case "response_format":
			format = s.Peek() != 'n'
		case "tools":
			tools = s.Peek() == '['
		}
		switch k {
		case "n":
			var v int
			if s.Null() {
				return true
			}
			if !s.Int(&v) {
				return false
			}
			if v != 1 {
				n.add("n")
			}
			return true
		case "response_format":
			if !s.Null() {
				n.add("response_format")
				return s.SkipValue()
			}
			return true
		case "messages":
			return objects(s, func(mk string) bool {
				switch mk {
				case "role":
					r, ok := s.Str()
					if r == "function" {
						n.add("function role")
					}
					return ok
				case "name", "tool_calls", "tool_call_id":
					return skipOrNull(s)
				case "content":
					return oaContentNeeds(s, n)
				}
				if !s.Null() {
					n.add("message " + mk)
					return s.SkipValue()
				}
				return true
			})
		case "tools":
			return objects(s, func(tk string) bool {
				switch tk {
				case "type":
					t, ok := s.Str()
					if ok && t != "function" {
						n.add(t + " tool")
					}
					return ok
				case "function":
					return s.Null() || s.Object(func(fk string) bool {
						if fk == "strict" {
							var strict bool
							if !s.Null() && s.Bool(&strict) && strict {
								n.add("strict tools")
							}
							return true
						}
						return skipOrNull(s)
					})
				}
				return skipOrNull(s)
			})
		}
		return skipOrNull(s)
	})
	if format && tools {
		// A JSON answer and tools of the request's own at once: a target
		// that gets structured output through a forced tool cannot.
		n.add("response_format with tools")
	}
	return ok
}

// oaContentNeeds walks a message's content: a string, or parts whose type
// is not text. An image, a PDF or audio is named by what it needs
// (oaPartNeeds);
// a key encoding/json would read as one of a part's fields only when case
// is ignored is left to it (false: the fallback then names the request's
// "unrecognised fields").
func oaContentNeeds(s *jsonscan.Scanner, n *needs) bool {
	if s.Peek() != '[' {
		return skipOrNull(s)
	}
	return s.Array(func() bool {
		var p oaPart
		ok := s.Object(func(k string) bool {
			switch k {
			case "type":
				return s.NullableString(&p.Type)
			case "image_url":
				return jsonscan.Ptr(s, &p.ImageURL, func(img *oaImageURL) bool {
					return s.Object(func(k string) bool {
						switch k {
						case "url":
							return s.NullableString(&img.URL)
						case "detail":
							return s.NullableString(&img.Detail)
						}
						return s.SkipUnknown(k, "url", "detail")
					})
				})
			case "input_audio":
				return jsonscan.Ptr(s, &p.InputAudio, func(a *oaAudio) bool {
					return s.Object(func(k string) bool {
						switch k {
						case "data":
							return s.NullableString(&a.Data)
						case "format":
							return s.NullableString(&a.Format)
						}
						return s.SkipUnknown(k, "data", "format")
					})
				})
			case "file":
				return jsonscan.Ptr(s, &p.File, func(f *oaFile) bool {
					return s.Object(func(k string) bool {
						switch k {
						case "file_data":
							return s.NullableString(&f.FileData)
						case "file_id":
							return s.NullableString(&f.FileID)
						case "filename":
							return s.NullableString(&f.Filename)
						}
						return s.SkipUnknown(k, "file_data", "file_id", "filename")
					})
				})
			}
			return !jsonscan.Folds(k, "type", "image_url", "file", "input_audio") && skipOrNull(s)
		})
		switch p.Type {
		case "text", "input_text", "refusal":
		case "image_url", "file", "input_audio":
			oaPartNeeds(n, &p)
		case "":
			n.add("untyped content")
		default:
			n.add(p.Type + " content")
		}
		return ok
	})
}

// anNeeds walks an Anthropic Messages request.
func anNeeds(s *jsonscan.Scanner, n *needs) bool {
	return top(s, n, anCovered, func(k string) bool {
		switch k {
		case "system":
			return anBlocksNeeds(s, n, false)
		case "messages":
			return objects(s, func(mk string) bool {
				if mk == "content" {
					return anBlocksNeeds(s, n, true)
				}
				return skipOrNull(s)
			})
		case "tools":
			if s.Null() {
				return true
			}
			return s.Array(func() bool {
				// A server tool is a need by its type; a custom tool's
				// members beyond name, description and schema are needs
				// by name (cache_control, strict, ...).
				typ, extra := "", []string(nil)
				ok := s.Object(func(tk string) bool {
					switch tk {
					case "type":
						t, ok := s.Str()
						typ = t
						return ok
					case "name", "description", "input_schema":
						return skipOrNull(s)
					}
					if !s.Null() {
						extra = append(extra, tk)
						return s.SkipValue()
					}
					return true
				})
				if typ != "" && typ != "custom" {
					n.add(typ + " tool")
				} else {
					for _, k := range extra {
						n.add(k)
					}
				}
				return ok
			})
		case "tool_choice":
			return s.Null() || s.Object(func(ck string) bool {
				if ck == "disable_parallel_tool_use" {
					var v bool
					if !s.Null() && s.Bool(&v) && v {
						n.add("disable_parallel_tool_use")
					}
					return true
				}
				return skipOrNull(s)
			})
		}
		return skipOrNull(s)
	})
}

// anBlocksNeeds walks a string or a list of content blocks (a message's,
// or the system prompt's or a tool result's when inMessage is false):
// blocks other than text, tool_use and tool_result, and members the
// canonical form does not hold (cache_control, citations, context, ...),
// are needs. A message's image or document is named by what it needs
// (anMediaNeeds); one in a tool result is a need no target carries.
func anBlocksNeeds(s *jsonscan.Scanner, n *needs, inMessage bool) bool {
	if s.Peek() != '[' {
		return skipOrNull(s)
	}
	return s.Array(func() bool {
		typ, extra := "", []string(nil)
		var src *anSource
		title, source := false, false
		ok := s.Object(func(k string) bool {
			switch k {
			case "type":
				t, ok := s.Str()
				typ = t
				return ok
			case "text", "id", "name", "input", "tool_use_id", "is_error":
				return skipOrNull(s)
			case "content":
				return anBlocksNeeds(s, n, false) // a tool_result's blocks
			case "source":
				source = source || s.Peek() != 'n'
				if s.Peek() != '{' {
					return skipOrNull(s) // a search result's URL
				}
				return anSourceNeeds(s, &src)
			case "title":
				var t string
				ok := s.NullableString(&t)
				title = title || t != ""
				return ok
			}
			if jsonscan.Folds(k, "source", "title") {
				return false
			}
			if !s.Null() {
				extra = append(extra, k)
				return s.SkipValue()
			}
			return true
		})
		if title && typ != "document" {
			extra = append(extra, "title")
		}
		if source && typ != "image" && typ != "document" {
			extra = append(extra, "source")
		}
		switch {
		case typ == "text", inMessage && (typ == "tool_use" || typ == "tool_result"),
			inMessage && (typ == "image" || typ == "document"):
			// A block the canonical form holds: its other members
			// (cache_control, citations, context) are needs by name.
			for _, k := range extra {
				n.add(k)
			}
			if typ == "image" || typ == "document" {
				anMediaNeeds(n, typ, src, title)
			}
		case typ == "image" || typ == "document":
			n.add(typ + " in tool result")
		case typ == "thinking" || typ == "redacted_thinking":
			n.add("thinking blocks")
		default:
			n.add(typ + " content")
		}
		return ok
	})
}

// anSourceNeeds reads an image or document block's source as the parser
// does (anMediaPart reads both).
func anSourceNeeds(s *jsonscan.Scanner, dst **anSource) bool {
	return jsonscan.Ptr(s, dst, func(src *anSource) bool {
		return s.Object(func(k string) bool {
			switch k {
			case "type":
				return s.NullableString(&src.Type)
			case "media_type":
				return s.NullableString(&src.MediaType)
			case "data":
				return s.NullableString(&src.Data)
			case "url":
				return s.NullableString(&src.URL)
			}
			return s.SkipUnknown(k, "type", "media_type", "data", "url")
		})
	})
}
