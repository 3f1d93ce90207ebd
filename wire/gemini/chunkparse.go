package gemini

import (
	"encoding/json"

	"github.com/detourhq/detour/internal/jsonscan"
)

// parseResponseFast fills r, a zero generateResponse, from data as
// json.Unmarshal would, when data has the common shape of a streamed
// chunk: candidates whose parts are text, thoughts and function calls,
// usage, model version and response id. Anything else (an error, a
// prompt block, inline data, a repeated or case-folded key, a number
// encoding/json reads differently) reports false, and the caller leaves
// data to encoding/json. Strings are substrings of data.
// FuzzResponseFastMatchesJSON holds it to encoding/json.
func parseResponseFast(data string, r *generateResponse) bool {
	p := &jsonscan.Scanner{S: data}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "candidates":
			return seen.First(1) && jsonscan.List(p, &r.Candidates, 1, func(c *candidate) bool { return parseCandidate(p, c) })
		case "usageMetadata":
			return seen.First(2) && jsonscan.Ptr(p, &r.UsageMetadata, func(u *usageMetadata) bool { return parseUsage(p, u) })
		case "modelVersion":
			return seen.First(4) && p.NullableString(&r.ModelVersion)
		case "responseId":
			return seen.First(8) && p.NullableString(&r.ResponseID)
		}
		return p.SkipUnknown(key, "candidates", "promptFeedback", "usageMetadata", "modelVersion", "responseId", "error")
	}) && p.End()
}

// parseCandidate reads one candidate object.
func parseCandidate(p *jsonscan.Scanner, c *candidate) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "content":
			return seen.First(1) && jsonscan.Ptr(p, &c.Content, func(ct *content) bool { return parseContent(p, ct) })
		case "finishReason":
			return seen.First(2) && p.NullableString(&c.FinishReason)
		case "finishMessage":
			return seen.First(4) && p.NullableString(&c.FinishMessage)
		case "index":
			return seen.First(8) && (p.Null() || p.Int(&c.Index))
		}
		return p.SkipUnknown(key, "content", "finishReason", "finishMessage", "index")
	})
}

// parseContent reads a candidate's content: its role and parts.
func parseContent(p *jsonscan.Scanner, ct *content) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "role":
			return seen.First(1) && p.NullableString(&ct.Role)
		case "parts":
			return seen.First(2) && jsonscan.List(p, &ct.Parts, 1, func(pt *part) bool { return parsePart(p, pt) })
		}
		return p.SkipUnknown(key, "role", "parts")
	})
}

// parsePart reads a part of text, a thought or a function call; any other
// kind is left to encoding/json.
func parsePart(p *jsonscan.Scanner, pt *part) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "text":
			return seen.First(1) && p.NullableString(&pt.Text)
		case "thought":
			return seen.First(2) && (p.Null() || p.Bool(&pt.Thought))
		case "thoughtSignature":
			return seen.First(4) && p.NullableString(&pt.ThoughtSignature)
		case "functionCall":
			return seen.First(8) && jsonscan.Ptr(p, &pt.FunctionCall, func(fc *functionCall) bool { return parseCall(p, fc) })
		}
		return p.SkipUnknown(key, "text", "thought", "inlineData", "fileData", "functionCall", "functionResponse", "thoughtSignature")
	})
}

// parseCall reads a function call; its args as they stand (a
// json.RawMessage, copied as encoding/json copies it).
func parseCall(p *jsonscan.Scanner, fc *functionCall) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "id":
			return seen.First(1) && p.NullableString(&fc.ID)
		case "name":
			return seen.First(2) && p.NullableString(&fc.Name)
		case "args":
			raw, ok := p.Raw()
			if ok {
				fc.Args = json.RawMessage(raw)
			}
			return seen.First(4) && ok
		}
		return p.SkipUnknown(key, "id", "name", "args")
	})
}

// parseUsage reads usageMetadata's counts; its other keys (the per
// modality details) are skipped.
func parseUsage(p *jsonscan.Scanner, u *usageMetadata) bool {
	var seen jsonscan.Seen
	count := func(bit uint, dst *int) bool { return seen.First(bit) && (p.Null() || p.Int(dst)) }
	return p.Object(func(key string) bool {
		switch key {
		case "promptTokenCount":
			return count(1, &u.PromptTokenCount)
		case "candidatesTokenCount":
			return count(2, &u.CandidatesTokenCount)
		case "thoughtsTokenCount":
			return count(4, &u.ThoughtsTokenCount)
		case "toolUsePromptTokenCount":
			return count(8, &u.ToolUsePromptTokenCount)
		case "cachedContentTokenCount":
			return count(16, &u.CachedContentTokenCount)
		}
		return p.SkipUnknown(key, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
			"toolUsePromptTokenCount", "cachedContentTokenCount")
	})
}
