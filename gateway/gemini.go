package gateway

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The Gemini surface: POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse (and the same under /v1/) in Gemini's
// GenerateContentRequest, translated to llm.Request; answers and stream
// chunks are GenerateContentResponse objects (geminiout.go). The model is
// in the URL, not the body.

type gmRequest struct {
	Contents          []gmContent     `json:"contents"`
	SystemInstruction *gmContent      `json:"systemInstruction"`
	Tools             []gmTool        `json:"tools"`
	ToolConfig        *gmToolConfig   `json:"toolConfig"`
	GenerationConfig  *gmGenConfig    `json:"generationConfig"`
	Models            []string        `json:"models"`
	Detour            json.RawMessage `json:"detour"`
}

type gmContent struct {
	Role  string   `json:"role"`
	Parts []gmPart `json:"parts"`
}

type gmPart struct {
	Text             *string     `json:"text"`
	Thought          bool        `json:"thought"`
	InlineData       *gmBlob     `json:"inlineData"`
	FunctionCall     *gmCall     `json:"functionCall"`
	FunctionResponse *gmResponse `json:"functionResponse"`
}

type gmBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gmCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gmResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gmTool struct {
	FunctionDeclarations []gmFunction `json:"functionDeclarations"`
}

type gmFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

type gmToolConfig struct {
	FunctionCallingConfig *struct {
		Mode                 string   `json:"mode"`
		AllowedFunctionNames []string `json:"allowedFunctionNames"`
	} `json:"functionCallingConfig"`
}

type gmGenConfig struct {
	StopSequences      []string        `json:"stopSequences"`
	MaxOutputTokens    *int            `json:"maxOutputTokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	ThinkingConfig     *gmThinking     `json:"thinkingConfig"`
}

type gmThinking struct {
	ThinkingBudget *int   `json:"thinkingBudget"`
	ThinkingLevel  string `json:"thinkingLevel"`
}

// gmParam names a field of the request in an error, as Google's own
// messages do (contents[0].parts[1]).
func gmParam(i, j int) string {
	return "contents[" + strconv.Itoa(i) + "].parts[" + strconv.Itoa(j) + "]"
}

// parseGemini reads a GenerateContentRequest body into cr; model and
// stream come from the URL (geminiPath). A body it cannot use is a 400
// INVALID_ARGUMENT naming the field. What the canonical request cannot
// hold (safety settings, a thought, a file by URI, a built-in tool, ...)
// is left for the needs walk (geminiNeeds): a Gemini target gets it raw,
// another dialect's is skipped for it or drops it, saying so.
func parseGemini(body []byte, cr *chatRequest) *apiError {
	var in gmRequest
	if ae := decodeJSON(body, &in); ae != nil {
		return ae
	}
	if ae := checkModels("", in.Models); ae != nil {
		return ae
	}
	req := &llm.Request{}
	cr.req, cr.models = req, in.Models
	if si := in.SystemInstruction; si != nil {
		var text strings.Builder
		for _, p := range si.Parts {
			if p.Text != nil {
				text.WriteString(*p.Text)
			}
		}
		if text.Len() > 0 {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: text.String()})
		}
	}
	if len(in.Contents) == 0 {
		return badRequest("contents", "contents is not specified: at least one {role, parts} is required")
	}
	calls := &gmCalls{}
	for i := range in.Contents {
		var ae *apiError
		if req.Messages, ae = in.Contents[i].canonical(req.Messages, i, calls); ae != nil {
			return ae
		}
	}
	for i, t := range in.Tools {
		for j, f := range t.FunctionDeclarations {
			if f.Name == "" {
				return badRequest(fmt.Sprintf("tools[%d].functionDeclarations[%d].name", i, j),
					"tools[%d].functionDeclarations[%d].name is required", i, j)
			}
			params := present(f.ParametersJSONSchema)
			if params == nil && present(f.Parameters) != nil {
				var err error
				if params, err = gmSchema(f.Parameters); err != nil {
					return badRequest(fmt.Sprintf("tools[%d].functionDeclarations[%d].parameters", i, j),
						"tools[%d].functionDeclarations[%d].parameters is not a schema: %v", i, j, err)
				}
			}
			req.Tools = append(req.Tools, llm.Tool{Name: f.Name, Description: f.Description, Parameters: params})
		}
	}
	if tc := in.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		switch strings.ToUpper(fc.Mode) {
		case "", "AUTO", "MODE_UNSPECIFIED":
		case "NONE":
			req.ToolChoice = json.RawMessage(`"none"`)
		case "ANY":
			req.ToolChoice = json.RawMessage(`"required"`)
			if len(fc.AllowedFunctionNames) == 1 {
				b := jsonw.String([]byte(`{"type":"function","function":{"name":`), fc.AllowedFunctionNames[0])
				req.ToolChoice = append(b, "}}"...)
			}
		}
		// VALIDATED, and a choice among several functions: needs.
	}
	if gc := in.GenerationConfig; gc != nil {
		req.Temperature, req.TopP, req.Stop = gc.Temperature, gc.TopP, gc.StopSequences
		if mt := gc.MaxOutputTokens; mt != nil {
			if *mt < 0 {
				return badRequest("generationConfig.maxOutputTokens", "generationConfig.maxOutputTokens must be positive, not %d", *mt)
			}
			req.MaxTokens = *mt
		}
		rf, ae := gmResponseFormat(gc)
		if ae != nil {
			return ae
		}
		req.ResponseFormat = rf
	}
	return nil
}

// gmCalls pairs the function calls of a conversation with their
// responses: Gemini pairs them by name and order, the canonical form by
// id. A call without an id gets call_<n> (n counting every call).
type gmCalls struct {
	n       int
	pending []llm.ToolCall // calls not answered yet, in order
}

func (g *gmCalls) call(c *gmCall) llm.ToolCall {
	id := c.ID
	if id == "" {
		id = "call_" + strconv.Itoa(g.n)
	}
	g.n++
	args := "{}"
	if a := present(c.Args); a != nil {
		args = string(appendCompact(nil, a))
	}
	tc := llm.ToolCall{ID: id, Name: c.Name, Arguments: args}
	g.pending = append(g.pending, tc)
	return tc
}

// answer returns the id of the call r answers: its own id, else the first
// pending call of its name, else a new one.
func (g *gmCalls) answer(r *gmResponse) string {
	for i, c := range g.pending {
		if r.ID != "" && c.ID == r.ID || r.ID == "" && c.Name == r.Name {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return c.ID
		}
	}
	if r.ID != "" {
		return r.ID
	}
	g.n++
	return "call_" + strconv.Itoa(g.n-1)
}

// canonical appends content i in llm's shape to out: function responses
// become tool messages (first, as OpenAI wants them right after the
// call), the rest one user or assistant message. Text parts are joined as
// they are (a streamed answer replayed comes as many parts); with an
// image, a document or audio among them the parts keep their order.
func (c *gmContent) canonical(out []llm.Message, i int, calls *gmCalls) ([]llm.Message, *apiError) {
	var role llm.Role
	switch c.Role {
	case "user", "", "function":
		role = llm.RoleUser
	case "model":
		role = llm.RoleAssistant
	default:
		return out, badRequest("contents["+strconv.Itoa(i)+"].role",
			"contents[%d].role must be user or model, not %q", i, c.Role)
	}
	msg := llm.Message{Role: role}
	for j := range c.Parts {
		if c.Parts[j].InlineData != nil {
			msg.Parts = make([]llm.Part, 0, len(c.Parts))
			break
		}
	}
	var text strings.Builder
	for j := range c.Parts {
		p := &c.Parts[j]
		switch {
		case p.Thought:
			// A thought: a Gemini target gets it raw; another dialect's is
			// skipped for it (needs).
		case p.FunctionCall != nil:
			if role != llm.RoleAssistant || p.FunctionCall.Name == "" {
				return out, badRequest(gmParam(i, j)+".functionCall",
					"%s.functionCall belongs to a model turn and needs a name", gmParam(i, j))
			}
			msg.ToolCalls = append(msg.ToolCalls, calls.call(p.FunctionCall))
		case p.FunctionResponse != nil:
			fr := p.FunctionResponse
			if role != llm.RoleUser || fr.Name == "" {
				return out, badRequest(gmParam(i, j)+".functionResponse",
					"%s.functionResponse belongs to a user turn and needs a name", gmParam(i, j))
			}
			content := "{}"
			if r := present(fr.Response); r != nil {
				content = string(appendCompact(nil, r))
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: calls.answer(fr), Name: fr.Name, Content: content})
		case p.InlineData != nil:
			part, ok := gmMediaPart(p.InlineData)
			if !ok {
				return out, badRequest(gmParam(i, j)+".inlineData",
					"%s.inlineData needs a mimeType and base64 data", gmParam(i, j))
			}
			msg.Parts = append(msg.Parts, part)
		case p.Text != nil:
			if msg.Parts != nil {
				msg.Parts = append(msg.Parts, llm.Part{Kind: llm.PartText, Text: *p.Text})
				break
			}
			text.WriteString(*p.Text)
		}
		// A file by URI, code execution, video metadata: needs.
	}
	msg.Content = text.String()
	if msg.Content != "" || len(msg.Parts) > 0 || len(msg.ToolCalls) > 0 {
		out = append(out, msg)
	}
	return out, nil
}

// gmMediaPart reads inline data as an image, a document (PDF, plain
// text) or audio, by its media type.
func gmMediaPart(b *gmBlob) (llm.Part, bool) {
	mt := mediaType(b.MimeType)
	if mt == "" || b.Data == "" {
		return llm.Part{}, false
	}
	p := llm.Part{Data: b.Data, MediaType: mt}
	switch {
	case strings.HasPrefix(mt, "image/"):
		p.Kind = llm.PartImage
	case strings.HasPrefix(mt, "audio/"):
		p.Kind = llm.PartAudio
		if mt == "audio/mpeg" {
			p.MediaType = "audio/mp3"
		}
	default:
		p.Kind = llm.PartDocument // application/pdf, text/plain, ...: Part.Need names it
	}
	return p, true
}

// gmResponseFormat reads responseMimeType and responseSchema (Gemini's
// OpenAPI subset, translated by gmSchema) or responseJsonSchema (JSON
// Schema) as OpenAI's response_format; text/plain and no type are
// nothing. Another media type (text/x.enum) is a need.
func gmResponseFormat(gc *gmGenConfig) (json.RawMessage, *apiError) {
	if strings.ToLower(gc.ResponseMimeType) != "application/json" {
		return nil, nil
	}
	schema := present(gc.ResponseJSONSchema)
	if schema == nil && present(gc.ResponseSchema) != nil {
		var err error
		if schema, err = gmSchema(gc.ResponseSchema); err != nil {
			return nil, badRequest("generationConfig.responseSchema", "generationConfig.responseSchema is not a schema: %v", err)
		}
	}
	if schema == nil {
		return json.RawMessage(`{"type":"json_object"}`), nil
	}
	b := append([]byte(`{"type":"json_schema","json_schema":{"name":"response","schema":`), appendCompact(nil, schema)...)
	return append(b, "}}"...), nil
}

// gmSchema turns a schema in Gemini's OpenAPI subset into JSON Schema: its
// type names in lower case ("OBJECT" is "object"), "nullable": true as a
// null type beside the other, "propertyOrdering" (Gemini's alone) left
// out, through properties, items and anyOf.
func gmSchema(raw json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	gmSchemaObject(m)
	return json.Marshal(m)
}

func gmSchemaObject(m map[string]any) {
	if t, ok := m["type"].(string); ok {
		t = strings.ToLower(t)
		if t == "type_unspecified" {
			delete(m, "type")
		} else if n, _ := m["nullable"].(bool); n && t != "null" {
			m["type"] = []any{t, "null"}
		} else {
			m["type"] = t
		}
	}
	delete(m, "nullable")
	delete(m, "propertyOrdering")
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			if pm, ok := p.(map[string]any); ok {
				gmSchemaObject(pm)
			}
		}
	}
	if it, ok := m["items"].(map[string]any); ok {
		gmSchemaObject(it)
	}
	if list, ok := m["anyOf"].([]any); ok {
		for _, s := range list {
			if sm, ok := s.(map[string]any); ok {
				gmSchemaObject(sm)
			}
		}
	}
}
