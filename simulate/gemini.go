package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Gemini's generateContent as recorded in https://github.com/maruel/genai
// (providers/gemini/testdata/TestClient/Scoreboard/gemini-2.5-flash-lite/
// GenSync-Text.yaml, gemini-2.5-flash/GenStream-Text.yaml,
// GenSync-Tools-SquareRoot-1.yaml, GenStream-Tools-SquareRoot-2.yaml,
// gemini-2.5-flash-lite/GenStream-Tools-SquareRoot-1.yaml, commit
// ae451f7a582cc4e130cd2acf878f46fa8cc696cf): a body pretty-printed with two
// spaces and a trailing newline (Content-Type application/json;
// charset=UTF-8); streams of `data: ` lines ended by "\r\n\r\n", each a whole
// GenerateContentResponse in the protobuf printer's layout (a space after
// each colon, none after commas), carrying usageMetadata, modelVersion and
// responseId, the last one with finishReason, and no [DONE]; a function call
// arrives whole in one chunk.

// base64URL is the alphabet of Gemini's responseId (e.g. AV-FaJjEDo_cjMcP5bu94AM).
const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// serveGemini serves rest, the path after /{name}/, for a Gemini provider.
func (s *Server) serveGemini(ctx context.Context, w http.ResponseWriter, r *http.Request, t *target, seq uint64, rest string, ec errCtx) {
	version, path, _ := strings.Cut(rest, "/")
	name, isModels := strings.CutPrefix(path, "models/")
	model, method, _ := splitModelMethod(name)
	if isModels && method == "" && r.Method == http.MethodGet && (version == "v1beta" || version == "v1") {
		s.read(t)
		ec.apiVersion, ec.model = version, model
		if ec.key, ec.keyGiven = geminiKey(r); t.Key != "" && (!ec.keyGiven || ec.key != t.Key) {
			ec.f = Fault{Kind: Unauthorized}
			s.sendError(ctx, w, t, ec.reply(), nil)
			return
		}
		writeGeminiModel(w, t, model, ec)
		return
	}
	embed := method == "embedContent" || method == "batchEmbedContents"
	if (version != "v1beta" && version != "v1") || !isModels || (method != "generateContent" && method != "streamGenerateContent" && !embed) || r.Method != http.MethodPost {
		writeReply(w, googleNotFound("/"+rest), nil)
		return
	}
	ec.apiVersion, ec.stream, ec.model = version, method == "streamGenerateContent", model
	ec.key, ec.keyGiven = geminiKey(r)
	if t.Key != "" && (!ec.keyGiven || ec.key != t.Key) {
		ec.f = Fault{Kind: Unauthorized}
		s.record(t, Record{Kind: Unauthorized, Stream: ec.stream, Embed: embed})
		s.sendError(ctx, w, t, ec.reply(), nil)
		return
	}
	if embed {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			return // the client is gone
		}
		er, rerr := parseGeminiEmbed(body, model, method == "batchEmbedContents")
		if rerr != nil {
			s.rejectEmbed(ctx, w, t, ec, rerr)
			return
		}
		s.serveEmbed(ctx, w, t, er, ec)
		return
	}
	if ec.stream && r.URL.Query().Get("alt") != "sse" {
		// Not Google's answer: the real endpoint streams a JSON array
		// without alt=sse. The simulator models the SSE form only.
		s.reject(ctx, w, t, ec, &reqError{status: 400, kind: BadRequest, model: model,
			msg: "simulate: streamGenerateContent is simulated with alt=sse only"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return // the client is gone
	}
	req, rerr := parseGenerate(body, model)
	if rerr != nil {
		s.reject(ctx, w, t, ec, rerr)
		return
	}
	req.stream = ec.stream
	s.serve(ctx, w, t, req, seq, ec)
}

// geminiKey returns the key of an x-goog-api-key header, else of the key
// query parameter.
func geminiKey(r *http.Request) (string, bool) {
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return k, true
	}
	if k := r.URL.Query().Get("key"); k != "" {
		return k, true
	}
	return "", false
}

// The request fields read, in both spellings Google's JSON parser accepts
// (lowerCamelCase, as the SDKs send, and snake_case, as curl examples do).
type (
	geminiRequest struct {
		Contents               json.RawMessage   `json:"contents"`
		SystemInstruction      json.RawMessage   `json:"systemInstruction"`
		SystemInstructionSnake json.RawMessage   `json:"system_instruction"`
		Tools                  []geminiToolIn    `json:"tools"`
		ToolConfig             *geminiToolConfig `json:"toolConfig"`
		ToolConfigSnake        *geminiToolConfig `json:"tool_config"`
		GenerationConfig       *geminiGenConfig  `json:"generationConfig"`
		GenerationConfigSnake  *geminiGenConfig  `json:"generation_config"`
	}
	geminiToolIn struct {
		FunctionDeclarations      []geminiFuncIn `json:"functionDeclarations"`
		FunctionDeclarationsSnake []geminiFuncIn `json:"function_declarations"`
	}
	geminiFuncIn struct {
		Name                      string          `json:"name"`
		Parameters                json.RawMessage `json:"parameters"`
		ParametersJSONSchema      json.RawMessage `json:"parametersJsonSchema"`
		ParametersJSONSchemaSnake json.RawMessage `json:"parameters_json_schema"`
	}
	geminiCallingConfig struct {
		Mode                      string   `json:"mode"`
		AllowedFunctionNames      []string `json:"allowedFunctionNames"`
		AllowedFunctionNamesSnake []string `json:"allowed_function_names"`
	}
	geminiToolConfig struct {
		FunctionCallingConfig      *geminiCallingConfig `json:"functionCallingConfig"`
		FunctionCallingConfigSnake *geminiCallingConfig `json:"function_calling_config"`
	}
	geminiGenConfig struct {
		MaxOutputTokens      *int `json:"maxOutputTokens"`
		MaxOutputTokensSnake *int `json:"max_output_tokens"`
	}
	geminiContentIn struct {
		Role  string `json:"role"`
		Parts []struct {
			Text                  string          `json:"text"`
			FunctionCall          json.RawMessage `json:"functionCall"`
			FunctionCallSnake     json.RawMessage `json:"function_call"`
			FunctionResponse      json.RawMessage `json:"functionResponse"`
			FunctionResponseSnake json.RawMessage `json:"function_response"`
		} `json:"parts"`
	}
)

// either returns a unless it is the zero value, else b.
func either[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// parseGenerate reads a generateContent body for model (from the path),
// validating it the way Gemini does for the fields the simulator needs.
func parseGenerate(body []byte, model string) (*chatReq, *reqError) {
	if !validModelName(model) {
		// Recorded: sample gemini-400-bad-model-name. Served as a
		// ModelNotFound: the target, not the request, is wrong.
		return nil, &reqError{status: 400, kind: ModelNotFound, model: model, msg: "* GenerateContentRequest.model: unexpected model name format\n"}
	}
	var w geminiRequest
	if err := json.Unmarshal(body, &w); err != nil {
		// reconstructed: Google's JSON parser messages, with the
		// google.rpc.BadRequest detail its 400s carry.
		msg := "Invalid JSON payload received. Unexpected token."
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			msg = "Invalid value at '" + te.Field + "' (" + protoKind(te.Type.Kind().String()) + "), " + te.Value
		}
		return nil, &reqError{status: 400, kind: BadRequest, model: model, msg: msg, details: []any{fieldViolation(msg)}}
	}
	var contents []geminiContentIn
	if len(w.Contents) > 0 && string(w.Contents) != "null" {
		if err := json.Unmarshal(w.Contents, &contents); err != nil {
			msg := "Invalid value at 'contents' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)"
			return nil, &reqError{status: 400, kind: BadRequest, model: model, msg: msg, details: []any{fieldViolation(msg)}}
		}
	}
	if len(contents) == 0 {
		// The real API's wording for a request without contents.
		return nil, &reqError{status: 400, kind: BadRequest, model: model, msg: "* GenerateContentRequest.contents: contents is not specified\n"}
	}
	r := &chatReq{model: model, lastRole: geminiRole(contents[len(contents)-1].Role)}
	r.question = func() (system, prompt string) {
		for i := len(contents) - 1; i >= 0; i-- {
			if geminiRole(contents[i].Role) == "user" {
				prompt = geminiText(contents[i])
				break
			}
		}
		for _, c := range systemContent(either(string(w.SystemInstruction), string(w.SystemInstructionSnake))) {
			system = geminiText(c)
		}
		return system, prompt
	}
	if g := either(w.GenerationConfig, w.GenerationConfigSnake); g != nil {
		if m := either(g.MaxOutputTokens, g.MaxOutputTokensSnake); m != nil {
			r.maxTokens = *m
		}
	}
	chars := 0
	for _, c := range append(contents, systemContent(either(string(w.SystemInstruction), string(w.SystemInstructionSnake)))...) {
		for _, p := range c.Parts {
			chars += utf8.RuneCountInString(p.Text) + len(p.FunctionCall) + len(p.FunctionCallSnake) + len(p.FunctionResponse) + len(p.FunctionResponseSnake)
		}
	}
	var decls []toolDecl
	toolChars := 0
	for _, t := range w.Tools {
		for _, f := range append(t.FunctionDeclarations, t.FunctionDeclarationsSnake...) {
			schema := either(string(f.Parameters), either(string(f.ParametersJSONSchema), string(f.ParametersJSONSchemaSnake)))
			decls = append(decls, toolDecl{f.Name, json.RawMessage(schema)})
			toolChars += len(f.Name) + len(schema)
		}
	}
	// About four characters a token plus one per turn (the captured "Say
	// hello. Use only one word." is 9).
	r.promptTokens = (chars+3)/4 + len(contents) + toolChars/4
	var cc *geminiCallingConfig
	if tc := either(w.ToolConfig, w.ToolConfigSnake); tc != nil {
		cc = either(tc.FunctionCallingConfig, tc.FunctionCallingConfigSnake)
	}
	if cc == nil || !strings.EqualFold(cc.Mode, "NONE") {
		name := ""
		if cc != nil {
			if allowed := append(cc.AllowedFunctionNames, cc.AllowedFunctionNamesSnake...); len(allowed) > 0 {
				name = allowed[0]
			}
		}
		r.tool = chooseTool(decls, name)
	}
	return r, nil
}

// geminiRole names a content's role as Record.LastRole does: "model" is the
// assistant, and a content without a role is the user's.
func geminiRole(role string) string {
	switch role {
	case "model":
		return "assistant"
	case "":
		return "user"
	}
	return role
}

// systemContent reads a systemInstruction (a Content), if any.
func systemContent(raw string) []geminiContentIn {
	var c geminiContentIn
	if raw == "" || json.Unmarshal([]byte(raw), &c) != nil {
		return nil
	}
	return []geminiContentIn{c}
}

// validModelName accepts the characters of Gemini's model ids.
func validModelName(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// protoKind names a Go kind as a protobuf field type.
func protoKind(kind string) string {
	switch kind {
	case "bool":
		return "TYPE_BOOL"
	case "string":
		return "TYPE_STRING"
	case "float64", "float32":
		return "TYPE_FLOAT"
	case "int", "int32", "int64":
		return "TYPE_INT32"
	}
	return "TYPE_MESSAGE"
}

type (
	geminiCall struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	geminiPart struct {
		Text         *string     `json:"text,omitempty"`
		FunctionCall *geminiCall `json:"functionCall,omitempty"`
	}
	geminiContent struct {
		Parts []geminiPart `json:"parts"`
		Role  string       `json:"role"`
	}
	geminiRating struct {
		Category    string `json:"category"`
		Probability string `json:"probability"`
		Blocked     bool   `json:"blocked,omitempty"`
	}
	geminiCandidate struct {
		Content       *geminiContent `json:"content,omitempty"`
		FinishReason  string         `json:"finishReason,omitempty"`
		Index         *int           `json:"index,omitempty"`
		SafetyRatings []geminiRating `json:"safetyRatings,omitempty"`
	}
	geminiTokens struct {
		Modality   string `json:"modality"`
		TokenCount int    `json:"tokenCount"`
	}
	// geminiUsage omits a zero candidatesTokenCount, as proto3 JSON omits defaults.
	geminiUsage struct {
		PromptTokenCount     int            `json:"promptTokenCount"`
		CandidatesTokenCount int            `json:"candidatesTokenCount,omitempty"`
		TotalTokenCount      int            `json:"totalTokenCount"`
		PromptTokensDetails  []geminiTokens `json:"promptTokensDetails"`
	}
	geminiResponse struct {
		Candidates    []geminiCandidate `json:"candidates"`
		UsageMetadata geminiUsage       `json:"usageMetadata"`
		ModelVersion  string            `json:"modelVersion"`
		ResponseID    string            `json:"responseId"`
	}
)

// geminiSafetyRatings are the ratings of a candidate blocked for safety,
// verbatim from sample gemini-200-finish-reason-safety
// (CherryHQ/cherry-studio#664): the sexually explicit one blocks.
var geminiSafetyRatings = []geminiRating{
	{"HARM_CATEGORY_HATE_SPEECH", "NEGLIGIBLE", false},
	{"HARM_CATEGORY_DANGEROUS_CONTENT", "NEGLIGIBLE", false},
	{"HARM_CATEGORY_HARASSMENT", "NEGLIGIBLE", false},
	{"HARM_CATEGORY_SEXUALLY_EXPLICIT", "HIGH", true},
}

// geminiResponse builds one GenerateContentResponse: parts (none for a
// blocked candidate), whether it is the last, and the output tokens so far.
func (a *answer) geminiResponse(parts []geminiPart, last bool, output int) geminiResponse {
	zero := 0
	c := geminiCandidate{Index: &zero}
	switch {
	case a.finish == "content_filter":
		// A blocked candidate has no content and, in the sample, no index.
		c = geminiCandidate{FinishReason: "SAFETY", SafetyRatings: geminiSafetyRatings}
	default:
		c.Content = &geminiContent{Parts: parts, Role: "model"}
		switch {
		case last && a.finish == "length":
			c.FinishReason = "MAX_TOKENS"
		case last:
			c.FinishReason = "STOP" // a function call also ends with STOP
		}
	}
	return geminiResponse{
		Candidates: []geminiCandidate{c},
		UsageMetadata: geminiUsage{PromptTokenCount: a.prompt, CandidatesTokenCount: output, TotalTokenCount: a.prompt + output,
			PromptTokensDetails: []geminiTokens{{"TEXT", a.prompt}}},
		ModelVersion: a.model,
		ResponseID:   token(a.seed^0x67656d, 23, base64URL),
	}
}

// geminiWire encodes the answer in generateContent or streamGenerateContent.
func (a *answer) geminiWire(stream bool) wireAnswer {
	wa := wireAnswer{
		header:       map[string][]string{},
		bodyType:     "application/json; charset=UTF-8",
		streamHeader: headerOf("Content-Type", "text/event-stream", "Content-Disposition", "attachment"),
		errorFrame:   crlfFrame,
		// reconstructed: a google.rpc.Status in the stream, as go-genai reads
		// one (PROVIDERS.md, Gemini "Streaming"), with the 503 message of
		// sample gemini-503-model-overloaded.
		defaultErrorData: spaceColons([]byte(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)),
	}
	var call []geminiPart
	if a.tool != nil {
		call = []geminiPart{{FunctionCall: &geminiCall{Name: a.tool.name, Args: json.RawMessage(a.tool.args)}}}
	}
	if !stream {
		parts := call
		if a.tool == nil {
			text := a.text
			parts = []geminiPart{{Text: &text}}
		}
		wa.body = append(marshalIndent(a.geminiResponse(parts, true, a.completion), "  "), '\n')
		return wa
	}
	// chunk frames r, keeping its malformed stand-in at position at.
	chunk := func(r geminiResponse, at int) []byte {
		b, _ := marshal(r)
		data := spaceColons(b)
		wa.garbled = append(wa.garbled, garbledEvent{at, crlfFrame(cutShort(data))})
		return crlfFrame(data)
	}
	if a.tool != nil || a.finish == "content_filter" {
		wa.tail = [][]byte{chunk(a.geminiResponse(call, true, a.completion), 0)}
		return wa
	}
	pieces := a.pieces()
	if len(pieces) == 0 { // an empty scripted text: one chunk all the same
		pieces = []string{""}
	}
	sofar := 0
	for i, p := range pieces {
		sofar += utf8.RuneCountInString(p)
		out := min((sofar+3)/4, a.completion) // a scripted count may be lower
		last := i == len(pieces)-1
		if last {
			out = a.completion
		}
		ev := chunk(a.geminiResponse([]geminiPart{{Text: &p}}, last, out), i)
		if last {
			wa.tail = append(wa.tail, ev)
		} else {
			wa.head = append(wa.head, ev)
		}
	}
	return wa
}

// writeGeminiModel answers GET models/{model} with the Model resource, or
// Google's 404 for a model the provider does not serve.
func writeGeminiModel(w http.ResponseWriter, t *target, m string, ec errCtx) {
	if len(t.models) > 0 && !t.models[m] {
		ec.f = Fault{Kind: ModelNotFound}
		writeReply(w, ec.reply(), nil)
		return
	}
	v := struct {
		Name                       string   `json:"name"`
		Version                    string   `json:"version"`
		DisplayName                string   `json:"displayName"`
		InputTokenLimit            int      `json:"inputTokenLimit"`
		OutputTokenLimit           int      `json:"outputTokenLimit"`
		SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	}{"models/" + m, "001", m, orDefault(t.ContextWindow, 1048576), 65536, []string{"generateContent", "countTokens"}}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(append(marshalIndent(v, "  "), '\n')) //nolint:errcheck // nothing to do for a gone client
}
