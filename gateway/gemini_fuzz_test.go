package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/openai"
)

// geminiSeeds are GenerateContentRequest bodies as the Gen AI SDKs and
// Google's REST docs write them, and some that are wrong.
var geminiSeeds = []string{
	`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	`{"contents":[{"parts":[{"text":"What is in this image?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}],` +
		`"systemInstruction":{"parts":[{"text":"Be brief."}]},"generationConfig":{"maxOutputTokens":100,"temperature":0.2,` +
		`"topP":0.9,"topK":40,"stopSequences":["END"],"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}}}`,
	`{"contents":[{"role":"user","parts":[{"text":"Weather?"}]},{"role":"model","parts":[{"functionCall":{"name":"w","args":{"c":"P"}},` +
		`"thoughtSignature":"c2ln"}]},{"role":"user","parts":[{"functionResponse":{"name":"w","response":{"output":"sun"}}}]}],` +
		`"tools":[{"functionDeclarations":[{"name":"w","parameters":{"type":"OBJECT","properties":{"c":{"type":"STRING","nullable":true}}}}]},` +
		`{"googleSearch":{}}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["w"]}}}`,
	`{"contents":[{"parts":[{"text":"json"}]}],"generationConfig":{"responseMimeType":"application/json",` +
		`"responseSchema":{"type":"ARRAY","items":{"type":"OBJECT","propertyOrdering":["a"],"anyOf":[{"type":"INTEGER"}]}}}}`,
	`{"contents":[{"parts":[{"fileData":{"mimeType":"application/pdf","fileUri":"https://x/f"}},{"thought":true,"text":"t"}]}],` +
		`"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],"cachedContent":"c/1"}`,
	`{"contents":[]}`, `{"contents":[{"role":"system","parts":[]}]}`, `{"contents":[{"parts":[{"functionCall":{}}]}]}`,
	`{"contents":[{"parts":[{"inlineData":{}}]}]}`, `{"contents":"x"}`, `[]`, `null`, ``, `{"generationConfig":{"maxOutputTokens":-1}}`,
	`{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":[1]}]}]}`,
	`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":"s"}}`,
}

// FuzzParseGemini: whatever the body, the Gemini surface's decoder neither
// panics nor returns anything but a request or a 400 that says why, and a
// request it returns is one the other dialects' encoders take or refuse
// with an error, never a panic.
func FuzzParseGemini(f *testing.F) {
	for _, s := range geminiSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var cr chatRequest
		ae := parseGemini(body, &cr)
		needs, reasoning := geminiNeeds(body)
		if ae != nil {
			if ae.Status != http.StatusBadRequest || ae.Message == "" {
				t.Fatalf("error %+v for %q", ae, body)
			}
			b := appendGoogleError(nil, ae)
			if !json.Valid(b) {
				t.Fatalf("error body %s is not JSON", b)
			}
			return
		}
		req := cr.req
		if req == nil || len(req.Messages) == 0 && !hasContents(body) {
			t.Fatalf("no request for %q", body)
		}
		for i, m := range req.Messages {
			switch m.Role {
			case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
			case llm.RoleTool:
				if m.ToolCallID == "" {
					t.Fatalf("message %d: a tool result without a call id, for %q", i, body)
				}
			default:
				t.Fatalf("message %d: role %q for %q", i, m.Role, body)
			}
		}
		for _, n := range needs {
			if n == "" {
				t.Fatalf("an empty need for %q", body)
			}
		}
		if req.ResponseFormat != nil && !json.Valid(req.ResponseFormat) || req.ToolChoice != nil && !json.Valid(req.ToolChoice) {
			t.Fatalf("response_format %s, tool_choice %s for %q", req.ResponseFormat, req.ToolChoice, body)
		}
		req.Model, req.Reasoning = "m", reasoning
		openai.EncodeRequest(req, false)   //nolint:errcheck // an error is an answer too
		anthropic.EncodeRequest(req, true) //nolint:errcheck // likewise
	})
}

// hasContents reports whether body has a contents member at all.
func hasContents(body []byte) bool {
	var v struct {
		Contents json.RawMessage `json:"contents"`
	}
	return json.Unmarshal(body, &v) == nil && len(v.Contents) > 0
}
