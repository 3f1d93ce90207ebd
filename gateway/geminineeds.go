package gateway

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/detourhq/detour/llm"
)

// Needs of a Gemini request (llm.Request.Needs): what it carries beyond
// the canonical fields parseGemini fills, by name. A Gemini target gets
// all of it raw; a target of another dialect carries each (Carrier), drops
// the safe ones (llm.Droppable: topK as "top_k", seed, the penalties, a
// thoughtSignature) or is skipped.

// The members parseGemini reads, at each level.
var (
	gmCovered    = []string{"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "models", "detour"}
	gmGenCovered = []string{"stopSequences", "maxOutputTokens", "temperature", "topP", "responseMimeType",
		"responseSchema", "responseJsonSchema", "thinkingConfig", "candidateCount", "responseModalities"}
	// gmGenDroppable renames the sampling hints other dialects know by
	// another name, so that llm.Droppable reads them.
	gmGenDroppable = map[string]string{"topK": "top_k", "seed": "seed", "presencePenalty": "presence_penalty",
		"frequencyPenalty": "frequency_penalty"}
)

// The needs of a Gemini request that have a name of their own.
const (
	// needThinkingConfig is a thinkingConfig that asks for thinking: a
	// reasoning need (router), carried as llm.Request.Reasoning.
	needThinkingConfig = "thinkingConfig"
	// needThoughtSignature is a part's thoughtSignature: Gemini's proof of
	// its own earlier reasoning, of no use to another provider (droppable).
	needThoughtSignature = "thoughtSignature"
)

// geminiNeeds reads the needs of a GenerateContentRequest body and the
// reasoning its thinkingConfig asks for: thinkingBudget N > 0 is a budget
// of N, -1 (dynamic) the effort "medium", thinkingLevel an effort of that
// word; a budget of 0 turns thinking off and asks nothing.
func geminiNeeds(body []byte) ([]string, *llm.Reasoning) {
	var n needs
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil, nil // the parser has already refused it
	}
	for k, v := range top {
		if present(v) == nil {
			continue
		}
		if !slices.Contains(gmCovered, k) {
			n.add(gmName(k)) // safetySettings, cachedContent, ...: as Google names them
		}
	}
	for _, key := range []string{"systemInstruction"} {
		var c struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		}
		if json.Unmarshal(top[key], &c) == nil {
			for _, p := range c.Parts {
				for k := range p {
					if k != "text" {
						n.add("systemInstruction " + k)
					}
				}
			}
		}
	}
	var contents []struct {
		Parts []map[string]json.RawMessage `json:"parts"`
	}
	json.Unmarshal(top["contents"], &contents) //nolint:errcheck // parsed already
	for _, c := range contents {
		for _, p := range c.Parts {
			gmPartNeeds(&n, p)
		}
	}
	var tools []map[string]json.RawMessage
	json.Unmarshal(top["tools"], &tools) //nolint:errcheck // parsed already
	for _, t := range tools {
		for k, v := range t {
			if k != "functionDeclarations" {
				n.add("tool " + k) // googleSearch, codeExecution, urlContext, ...
				continue
			}
			var fs []map[string]json.RawMessage
			json.Unmarshal(v, &fs) //nolint:errcheck // parsed already
			for _, f := range fs {
				for fk, fv := range f {
					switch fk {
					case "name", "description", "parameters", "parametersJsonSchema":
					default:
						if present(fv) != nil {
							n.add("functionDeclarations " + fk)
						}
					}
				}
			}
		}
	}
	var tc struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
		RetrievalConfig json.RawMessage `json:"retrievalConfig"`
	}
	json.Unmarshal(top["toolConfig"], &tc) //nolint:errcheck // parsed already
	if present(tc.RetrievalConfig) != nil {
		n.add("toolConfig retrievalConfig")
	}
	if fc := tc.FunctionCallingConfig; fc != nil {
		mode := strings.ToUpper(fc.Mode)
		switch {
		case mode != "" && mode != "AUTO" && mode != "ANY" && mode != "NONE" && mode != "MODE_UNSPECIFIED":
			n.add("functionCallingConfig mode " + mode)
		case len(fc.AllowedFunctionNames) > 1 || len(fc.AllowedFunctionNames) == 1 && mode != "ANY":
			n.add("allowedFunctionNames")
		}
	}
	r := gmGenNeeds(&n, top["generationConfig"])
	slices.Sort(n) // members were read from maps: one order, whatever Go's
	return n, r
}

// gmPartNeeds names the needs of one part of a content.
func gmPartNeeds(n *needs, p map[string]json.RawMessage) {
	for k, v := range p {
		switch k {
		case "text", "functionCall", "functionResponse":
		case "thought":
			if string(v) == "true" {
				n.add("thought parts")
			}
		case "thoughtSignature":
			if present(v) != nil {
				n.add(needThoughtSignature)
			}
		case "inlineData":
			var b gmBlob
			if json.Unmarshal(v, &b) == nil {
				if part, ok := gmMediaPart(&b); ok {
					n.add(part.Need())
				}
			}
		default:
			if present(v) != nil {
				n.add("part " + gmName(k)) // fileData, executableCode, codeExecutionResult, videoMetadata, ...
			}
		}
	}
}

// gmGenNeeds names the needs of a generationConfig and returns the
// reasoning it asks for.
func gmGenNeeds(n *needs, raw json.RawMessage) *llm.Reasoning {
	var gc map[string]json.RawMessage
	if json.Unmarshal(raw, &gc) != nil {
		return nil
	}
	for k, v := range gc {
		if present(v) == nil {
			continue
		}
		switch {
		case gmGenDroppable[k] != "":
			n.add(gmGenDroppable[k])
		case !slices.Contains(gmGenCovered, k):
			n.add("generationConfig " + k) // responseLogprobs, speechConfig, mediaResolution, ...
		}
	}
	var g struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		CandidateCount     *int            `json:"candidateCount"`
		ResponseModalities []string        `json:"responseModalities"`
		ThinkingConfig     json.RawMessage `json:"thinkingConfig"`
	}
	json.Unmarshal(raw, &g) //nolint:errcheck // parsed already
	switch mt := strings.ToLower(g.ResponseMimeType); mt {
	case "", "text/plain":
	case "application/json":
		n.add("response_format")
	default:
		n.add("responseMimeType " + mt)
	}
	if g.CandidateCount != nil && *g.CandidateCount > 1 {
		n.add("candidateCount")
	}
	for _, m := range g.ResponseModalities {
		if !strings.EqualFold(m, "TEXT") {
			n.add("responseModalities")
			break
		}
	}
	var tc map[string]json.RawMessage
	if json.Unmarshal(g.ThinkingConfig, &tc) != nil || tc == nil {
		return nil
	}
	var r *llm.Reasoning
	for k, v := range tc {
		switch k {
		case "thinkingBudget":
			var b int
			if json.Unmarshal(v, &b) == nil {
				switch {
				case b > 0:
					r = &llm.Reasoning{Budget: b}
				case b < 0:
					r = &llm.Reasoning{Effort: "medium"}
				}
			}
		case "thinkingLevel":
			var w string
			if json.Unmarshal(v, &w) == nil && w != "" {
				if w = strings.ToLower(w); slices.Contains(efforts, w) {
					r = &llm.Reasoning{Effort: w}
				} else {
					n.add("thinkingLevel " + w)
				}
			}
		default:
			if present(v) != nil && string(v) != "false" {
				n.add("thinkingConfig " + k) // includeThoughts: thoughts in the answer
			}
		}
	}
	if r != nil {
		n.add(needThinkingConfig)
	}
	return r
}

// gmName is a member's name as a need: as it is, or quoted when it is
// empty or holds anything but letters, digits and _.
func gmName(k string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}) {
		return strconv.Quote(k)
	}
	return k
}
