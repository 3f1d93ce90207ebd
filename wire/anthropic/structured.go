package anthropic

import (
	"bytes"
	"encoding/json"
	"regexp"

	"github.com/detourhq/detour/llm"
)

// Structured output has no field of its own in the Messages API; the way
// Anthropic documents to get JSON that follows a schema is a tool whose
// input_schema is the schema, forced with tool_choice. A request with
// response_format (OpenAI's json_schema or json_object) and no tools of
// its own is sent so, and the forced tool's input comes back as the
// answer's text: the JSON a client parses, finish_reason stop.

// structured is the forced tool of a request's response_format.
type structured struct {
	name   string
	schema json.RawMessage
}

// toolName is what Anthropic accepts as a tool name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// structuredOf reads req's response_format: ok false for none, for
// {"type":"text"}, and when req has tools of its own (both cannot be
// honoured at once: the gateway skips Anthropic targets for that).
func structuredOf(req *llm.Request) (structured, bool) {
	rf := bytes.TrimSpace(req.ResponseFormat)
	if len(rf) == 0 || string(rf) == "null" || len(req.Tools) > 0 {
		return structured{}, false
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(rf, &f) != nil {
		return structured{}, false
	}
	switch f.Type {
	case "json_object":
		return structured{name: "json_response", schema: emptySchema}, true
	case "json_schema":
		s := structured{name: "json_response", schema: emptySchema}
		if f.JSONSchema != nil {
			if toolName.MatchString(f.JSONSchema.Name) {
				s.name = f.JSONSchema.Name
			}
			if sc := bytes.TrimSpace(f.JSONSchema.Schema); len(sc) > 0 && json.Valid(sc) && sc[0] == '{' {
				s.schema = sc
			}
		}
		return s, true
	}
	return structured{}, false
}

// answer turns the forced tool's call in resp into the answer's text.
func (s structured) answer(resp *llm.Response) {
	for i, tc := range resp.Message.ToolCalls {
		if tc.Name == s.name {
			resp.Message.Content += tc.Arguments
			resp.Message.ToolCalls = append(resp.Message.ToolCalls[:i:i], resp.Message.ToolCalls[i+1:]...)
			break
		}
	}
	if len(resp.Message.ToolCalls) == 0 {
		resp.Message.ToolCalls = nil
		if resp.FinishReason == llm.FinishToolCalls {
			resp.FinishReason = llm.FinishStop
		}
	}
}

// structuredStream is a stream whose forced tool's input fragments come as
// the answer's text.
type structuredStream struct {
	llm.Stream
	s structured
}

func (st *structuredStream) Next() (llm.Chunk, error) {
	c, err := st.Stream.Next()
	if err != nil {
		return c, err
	}
	// The forced tool is the request's only one: every fragment is its.
	for _, d := range c.ToolCalls {
		c.Content += d.Arguments
	}
	c.ToolCalls = nil
	if c.FinishReason == llm.FinishToolCalls {
		c.FinishReason = llm.FinishStop
	}
	return c, nil
}

// Ready passes the inner stream's readiness on (llm.Readier).
func (st *structuredStream) Ready() bool { return llm.Ready(st.Stream) }
