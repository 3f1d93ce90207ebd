package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/detourhq/detour/llm"
)

// generateRequest is the body of POST .../models/{model}:generateContent
// (and :streamGenerateContent), in the field order Google documents. The
// model is in the URL, not the body.
type generateRequest struct {
	Contents          []content         `json:"contents"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

// content is one turn: role "user" or "model" (none for the system
// instruction) and its parts.
type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one piece of a turn; exactly one of Text, InlineData, FileData,
// FunctionCall and FunctionResponse is set in a request. Parts of other
// kinds in an answer (inline data, code execution) are ignored.
type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
}

// blob is inline content: its media type and base64 data.
type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// fileData is content by URI (a Files API URI, gs://, or https).
type fileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	StopSequences    []string        `json:"stopSequences,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   json.RawMessage `json:"responseSchema,omitempty"`
	MaxOutputTokens  int             `json:"maxOutputTokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	ThinkingConfig   *thinkingConfig `json:"thinkingConfig,omitempty"`
}

// thinkingConfig sets a thinking model's budget of thought tokens (0:
// none, on the models that allow it).
type thinkingConfig struct {
	ThinkingBudget int `json:"thinkingBudget"`
}

// SkipSignature is the thoughtSignature EncodeRequest puts on replayed
// function calls for Gemini 3 and later models, which reject a function
// call of an earlier turn without the signature the model gave it ("400
// Function call is missing a thought_signature"). llm.ToolCall does not
// carry signatures (and calls made by another provider have none), so the
// value Google documents for skipping the check is sent instead
// (ai.google.dev/gemini-api/docs/thought-signatures).
const SkipSignature = "skip_thought_signature_validator"

// EncodeRequest returns the JSON body of a Gemini generateContent request
// for req (the same body serves :streamGenerateContent; req.Model and
// req.Stream are not in it: the URL carries both).
//
// Messages:
//
//   - RoleSystem turns, wherever they are, become systemInstruction, one
//     text part each, in order;
//   - RoleUser is role "user" and RoleAssistant role "model" (its text,
//     then a functionCall {name, args} part per tool call; Arguments must
//     be a JSON object, "" is {}). Call IDs are not sent: Gemini pairs
//     calls and responses by name and order, an ID made by another
//     provider means nothing to it, and some endpoints reject the field
//     ("Unknown name \"id\" at 'contents[7].parts[0].function_response'",
//     google-gemini/gemini-cli#13972). For models other than gemini-1.x,
//     gemini-2.x and gemma, the first call of each turn carries
//     SkipSignature;
//   - RoleTool is a functionResponse {name, response} part of a "user"
//     turn. name is that of the earlier call whose ID is ToolCallID, else
//     Message.Name (else an error); response is the content when it is a
//     JSON object, else {"result": content};
//   - Message.Name of a user or assistant turn is not sent (Gemini has
//     no author names);
//   - a message's Parts follow its text in order: text parts, inline
//     images, documents and audio as inlineData {mimeType, data} (a
//     plain-text document's Text base64-encoded, as text/plain), content
//     by URL as fileData {mimeType, fileUri}, which needs the part's
//     MediaType (Gemini wants one; a URL alone does not give it). A
//     document's Title has no place here and is not sent. Parts on a
//     system or tool message are an error;
//   - empty text is left out (Gemini rejects an empty text part), a turn
//     with no part left is dropped, and consecutive turns of one role are
//     merged into one content (parallel tool results become one turn).
//
// Tools become one {functionDeclarations: [...]} entry; their parameters
// pass through SanitizeSchema, and an object schema without properties is
// left out (Gemini rejects it). ToolChoice (OpenAI's shape) becomes
// toolConfig.functionCallingConfig.mode: "auto" AUTO, "none" NONE,
// "required" ANY, a named function ANY with allowedFunctionNames.
// generationConfig carries MaxTokens (maxOutputTokens), Temperature, TopP,
// Stop (stopSequences) and ResponseFormat: json_object is responseMimeType
// "application/json", json_schema adds its schema as responseSchema
// (sanitized), text is nothing. Reasoning becomes
// thinkingConfig.thinkingBudget (an effort by its
// llm.Reasoning.BudgetTokens; none is 0). Unset fields are omitted.
func EncodeRequest(req *llm.Request) ([]byte, error) {
	if req == nil {
		return nil, errors.New("gemini: nil request")
	}
	body := generateRequest{Contents: []content{}}
	sign := wantsSignature(req.Model)
	names := map[string]string{} // tool call ID -> function name
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role == llm.RoleSystem {
			if len(m.Parts) > 0 {
				return nil, fmt.Errorf("gemini: message %d: a system message with parts: the system instruction is text here", i)
			}
			if m.Content != "" {
				if body.SystemInstruction == nil {
					body.SystemInstruction = &content{}
				}
				body.SystemInstruction.Parts = append(body.SystemInstruction.Parts, part{Text: m.Content})
			}
			continue
		}
		c, err := encodeMessage(m, names, sign)
		if err != nil {
			return nil, fmt.Errorf("gemini: message %d: %w", i, err)
		}
		if len(c.Parts) == 0 {
			continue
		}
		if n := len(body.Contents); n > 0 && body.Contents[n-1].Role == c.Role {
			body.Contents[n-1].Parts = append(body.Contents[n-1].Parts, c.Parts...)
			continue
		}
		body.Contents = append(body.Contents, c)
	}
	if len(req.Tools) > 0 {
		decls := make([]functionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			params, err := parameters(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("gemini: tool %q: parameters: %w", t.Name, err)
			}
			decls[i] = functionDeclaration{Name: t.Name, Description: t.Description, Parameters: params}
		}
		body.Tools = []tool{{FunctionDeclarations: decls}}
	}
	tc, err := encodeToolChoice(req.ToolChoice)
	if err != nil {
		return nil, fmt.Errorf("gemini: tool_choice: %w", err)
	}
	body.ToolConfig = tc
	gc := generationConfig{
		StopSequences:   req.Stop,
		MaxOutputTokens: req.MaxTokens,
		Temperature:     req.Temperature,
		TopP:            req.TopP,
	}
	if gc.ResponseMimeType, gc.ResponseSchema, err = encodeResponseFormat(req.ResponseFormat); err != nil {
		return nil, fmt.Errorf("gemini: response_format: %w", err)
	}
	if r := req.Reasoning; r != nil && (r.Effort != "" || r.Budget > 0) {
		gc.ThinkingConfig = &thinkingConfig{ThinkingBudget: r.BudgetTokens()}
	}
	if len(gc.StopSequences) > 0 || gc.ResponseMimeType != "" || gc.MaxOutputTokens > 0 ||
		gc.Temperature != nil || gc.TopP != nil || gc.ThinkingConfig != nil {
		body.GenerationConfig = &gc
	}
	// No HTML escaping: prompts go out byte for byte ("<" stays "<").
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&body); err != nil {
		return nil, fmt.Errorf("gemini: encoding request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeMessage turns one non-system message into a content; names maps
// the IDs of the tool calls seen so far to their function names.
func encodeMessage(m *llm.Message, names map[string]string, sign bool) (content, error) {
	switch m.Role {
	case llm.RoleUser:
		c := content{Role: "user"}
		if m.Content != "" {
			c.Parts = append(c.Parts, part{Text: m.Content})
		}
		return c, appendParts(&c, m.Parts)
	case llm.RoleAssistant:
		c := content{Role: "model"}
		if m.Content != "" {
			c.Parts = append(c.Parts, part{Text: m.Content})
		}
		if err := appendParts(&c, m.Parts); err != nil {
			return c, err
		}
		for i, tc := range m.ToolCalls {
			if tc.Name == "" {
				return c, fmt.Errorf("tool call %d has no name", i)
			}
			args, err := objectArgs(tc.Arguments)
			if err != nil {
				return c, fmt.Errorf("tool call %q (%s): arguments %w", tc.ID, tc.Name, err)
			}
			p := part{FunctionCall: &functionCall{Name: tc.Name, Args: args}}
			if sign && i == 0 {
				// Parallel calls carry the signature on the first only.
				p.ThoughtSignature = SkipSignature
			}
			c.Parts = append(c.Parts, p)
			if tc.ID != "" {
				names[tc.ID] = tc.Name
			}
		}
		return c, nil
	case llm.RoleTool:
		if len(m.Parts) > 0 {
			return content{}, errors.New("a tool message with parts: a functionResponse is JSON here")
		}
		name := names[m.ToolCallID]
		if name == "" {
			name = m.Name
		}
		if name == "" {
			return content{}, fmt.Errorf("tool result for call %q: no earlier call has that id and the message has no name", m.ToolCallID)
		}
		return content{Role: "user", Parts: []part{{FunctionResponse: &functionResponse{
			Name: name, Response: toolResponse(m.Content)}}}}, nil
	}
	return content{}, fmt.Errorf("unknown role %q", m.Role)
}

// appendParts appends the Gemini parts of ps to c.
func appendParts(c *content, ps []llm.Part) error {
	for i := range ps {
		p := &ps[i]
		switch {
		case p.Kind == llm.PartText:
			if p.Text != "" {
				c.Parts = append(c.Parts, part{Text: p.Text})
			}
		case p.Kind != llm.PartImage && p.Kind != llm.PartDocument && p.Kind != llm.PartAudio:
			return fmt.Errorf("part %d: unknown part kind %q", i, p.Kind)
		case p.MediaType == "":
			return fmt.Errorf("part %d: %s without a media type (Gemini needs one)", i, p.Kind)
		case p.URL != "":
			c.Parts = append(c.Parts, part{FileData: &fileData{MimeType: p.MediaType, FileURI: p.URL}})
		case p.Data == "" && p.Kind == llm.PartDocument && p.MediaType == "text/plain":
			c.Parts = append(c.Parts, part{InlineData: &blob{MimeType: p.MediaType,
				Data: base64.StdEncoding.EncodeToString([]byte(p.Text))}})
		default:
			c.Parts = append(c.Parts, part{InlineData: &blob{MimeType: p.MediaType, Data: p.Data}})
		}
	}
	return nil
}

// objectArgs checks that a call's arguments are a JSON object ("" is {}).
func objectArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("are not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("are null, not a JSON object")
	}
	return json.RawMessage(s), nil
}

// toolResponse is the response object of a tool result: the content when
// it is a JSON object, else {"result": content}.
func toolResponse(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(t), &m) == nil {
			return json.RawMessage(t)
		}
	}
	b, _ := json.Marshal(map[string]string{"result": s})
	return b
}

// wantsSignature reports whether model needs SkipSignature on replayed
// function calls: every Gemini model but the 1.x and 2.x generations
// (which do not check signatures) and Gemma.
func wantsSignature(model string) bool {
	m := strings.ToLower(strings.TrimPrefix(model, "models/"))
	if !strings.HasPrefix(m, "gemini-") {
		return false
	}
	return !strings.HasPrefix(m, "gemini-1") && !strings.HasPrefix(m, "gemini-2")
}

// encodeToolChoice maps OpenAI's tool_choice (and Anthropic's object
// forms) to a functionCallingConfig; nil when unset.
func encodeToolChoice(raw json.RawMessage) (*toolConfig, error) {
	raw = json.RawMessage(bytes.TrimSpace(raw))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	mode := func(s string) string {
		switch s {
		case "auto":
			return "AUTO"
		case "none":
			return "NONE"
		case "required", "any":
			return "ANY"
		}
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if m := mode(s); m != "" {
			return &toolConfig{functionCallingConfig{Mode: m}}, nil
		}
		return nil, fmt.Errorf("unknown value %q", s)
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("not a string or an object: %w", err)
	}
	switch name := o.Function.Name + o.Name; {
	case (o.Type == "function" || o.Type == "tool") && name != "":
		return &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{name}}}, nil
	case mode(o.Type) != "":
		return &toolConfig{functionCallingConfig{Mode: mode(o.Type)}}, nil
	}
	return nil, fmt.Errorf("unsupported %s", raw)
}

// encodeResponseFormat maps OpenAI's response_format to responseMimeType
// and responseSchema.
func encodeResponseFormat(raw json.RawMessage) (string, json.RawMessage, error) {
	raw = json.RawMessage(bytes.TrimSpace(raw))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", nil, fmt.Errorf("not an object: %w", err)
	}
	switch f.Type {
	case "text":
		return "", nil, nil
	case "json_object":
		return "application/json", nil, nil
	case "json_schema":
		schema, err := SanitizeSchema(f.JSONSchema.Schema)
		if err != nil {
			return "", nil, fmt.Errorf("schema: %w", err)
		}
		return "application/json", schema, nil
	}
	return "", nil, fmt.Errorf("unsupported type %q", f.Type)
}
