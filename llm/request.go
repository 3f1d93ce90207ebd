package llm

import (
	"encoding/json"
	"net/http"
)

// Role is who wrote a message.
type Role string

// The roles of a conversation.
const (
	// RoleSystem is an instruction to the model. Dialects that keep the system
	// prompt apart (Anthropic, Gemini) lift it out of the message list.
	RoleSystem Role = "system"
	// RoleUser is the person or program asking.
	RoleUser Role = "user"
	// RoleAssistant is the model.
	RoleAssistant Role = "assistant"
	// RoleTool carries the result of a tool call back to the model.
	RoleTool Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the turn. May be empty on an assistant turn that
	// only calls tools, or when Parts holds the whole content.
	Content string `json:"content,omitempty"`
	// Parts are the rest of the turn's content when it is more than text:
	// images, documents and audio, with text between them, in order.
	// Content, when not empty, comes first. Nil for a text-only turn (most
	// turns). Only user and assistant turns carry parts; an encoder
	// refuses them on a system or tool turn, and any part its dialect has
	// no form for (Carrier says which it carries).
	Parts []Part `json:"parts,omitempty"`
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a RoleTool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is an optional author name (OpenAI's `name`), or the tool's name on
	// a RoleTool message.
	Name string `json:"name,omitempty"`
}

// ToolCall is one function call made by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments, as the model produced it.
	Arguments string `json:"arguments"`
}

// Tool describes a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object; nil means no parameters.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict asks that the call's arguments follow Parameters exactly
	// (OpenAI's strict function calling); the request then carries the
	// need "strict", which a dialect without it may drop (degraded).
	Strict bool `json:"strict,omitempty"`
}

// Request is one chat request in detour's canonical form. The router fills
// Model per target; callers leave it empty or name a route.
type Request struct {
	// Model is the provider's model name, set by the router for each attempt.
	Model    string    `json:"model,omitempty"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// ToolChoice is passed through in OpenAI's shape ("auto", "none",
	// "required" or an object); nil leaves it to the provider.
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	// MaxTokens caps the output; 0 leaves it to the provider (or to the
	// target's output cap when the dialect requires one).
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	// ResponseFormat is passed through in OpenAI's shape, e.g.
	// {"type":"json_object"} or a json_schema object.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Stream asks for a streamed answer.
	Stream bool `json:"stream,omitempty"`
	// Reasoning, when set, asks a model that reasons for an effort or a
	// thinking budget (the client's reasoning_effort or thinking).
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// Needs names what the request carries beyond the fields above, or
	// in them but not carried by every dialect, as its client's surface
	// read it ("n", "logprobs", "cache_control", "thinking", the images,
	// documents and audio of Message.Parts: Part.Need, NeedImage and the
	// other Need constants, ...): a target of the client's own dialect gets them
	// with Raw; a target of another dialect must carry each (Carrier), or
	// drop it when it is safe to (Droppable, and not in Require), or be
	// skipped.
	Needs []string `json:"-"`
	// Require names needs that must not be dropped; "*" names them all.
	Require []string `json:"-"`
	// Raw, when set, is the request as its client sent it. A target of
	// the same dialect is sent Raw's body, with only the fields detour owns
	// replaced (the model; what streaming needs), instead of an encoding
	// of the fields above: nothing the client asked for is lost, known to
	// detour or not. Read-only once set; Clone shares it.
	Raw *Raw `json:"-"`
}

// Raw is a body in one dialect's wire format, kept as it came: a client's
// request, or a provider's answer. Its bytes must not be changed.
type Raw struct {
	// Dialect is the wire format: "openai" (chat completions),
	// "anthropic" (Messages), "gemini" (generateContent) or
	// "openai-responses" (the Responses API).
	Dialect string
	// Body is the JSON body.
	Body []byte
	// Header holds the client's headers that belong with the body in its
	// dialect (Anthropic's anthropic-version and anthropic-beta: the
	// features the body uses), for a target of the same dialect.
	Header http.Header
}

// RawFor returns the raw body of r for a target of dialect, or nil when r
// has none or it is in another dialect.
func (r *Request) RawFor(dialect string) []byte {
	if r.Raw == nil || r.Raw.Dialect != dialect {
		return nil
	}
	return r.Raw.Body
}

// Clone returns a copy of r whose slices may be changed without touching r.
func (r *Request) Clone() *Request {
	c := *r
	c.Messages = append([]Message(nil), r.Messages...)
	c.Tools = append([]Tool(nil), r.Tools...)
	c.Stop = append([]string(nil), r.Stop...)
	return &c
}

// Required reports whether need must reach the target: named in Require
// (or Require holds "*"), or not Droppable.
func (r *Request) Required(need string) bool {
	for _, q := range r.Require {
		if q == need || q == "*" {
			return true
		}
	}
	return !Droppable(need)
}

// droppable are the needs a target of another dialect may go without:
// hints and bookkeeping whose loss changes no answer a caller parses.
// Everything else (n, logprobs, images, thinking, a JSON schema, ...) is
// skipped for rather than dropped.
var droppable = map[string]bool{
	"user": true, "metadata": true, "store": true, "service_tier": true, "seed": true,
	"presence_penalty": true, "frequency_penalty": true, "top_k": true, "cache_control": true,
	"prompt_cache_key": true, "safety_identifier": true, "parallel_tool_calls": true,
	// Strict function calling, and what a Responses client asks to be
	// told of the reasoning (summaries, encrypted content): the answer is
	// the same without them, and says they were dropped.
	"strict": true, "include": true, "reasoning.summary": true,
	NeedImageDetail: true, NeedDocumentTitle: true,
	// Gemini's signature of its own earlier reasoning on a replayed part:
	// it proves nothing to another provider.
	"thoughtSignature": true,
	// Sampling a target leaves out only beside what it cannot have with
	// it (Anthropic's thinking: Fitter).
	"temperature": true, "top_p": true,
}

// Droppable reports whether a target of another dialect may leave need
// out, the answer then marked degraded and naming it.
func Droppable(need string) bool { return droppable[need] }
