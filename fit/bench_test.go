package fit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

// conversation returns a request of n messages after a system prompt:
// user questions (some in Japanese), assistant answers, and every fifth
// turn a tool call and its result, with two tools defined. Messages are
// 200 to 1,500 characters.
func conversation(n int) *llm.Request {
	en := "The router sends each request down an ordered chain of candidates, tells a passing hiccup from a wall, " +
		"retries only what can recover (HTTP 429, 503), and writes one ledger line per attempt. "
	ja := "長い会話は主モデルのコンテキストに収まっても、より小さいフォールバックでは失敗します。"
	req := &llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: strings.Repeat(en, 4)}},
		Tools: []llm.Tool{
			{Name: "search_docs", Description: "Search the documentation.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"]}`)},
			{Name: "get_attempts", Description: "Read ledger records of a request.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"request_id":{"type":"string"}}}`)},
		},
	}
	for i := 0; len(req.Messages) < n+1; i++ {
		q := strings.Repeat(en, 1+i%3)
		if i%4 == 1 {
			q = strings.Repeat(ja, 2+i%3)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: q})
		if i%5 == 4 {
			id := fmt.Sprintf("call_%03d", i)
			req.Messages = append(req.Messages,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "get_attempts", Arguments: `{"request_id":"req_9e4c2a7b1f30"}`}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: `{"attempts":[{"target":"groq/llama-3.3-70b-versatile","status":429,"latency_ms":131}]}`})
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat(en, 2+i%5)})
	}
	req.Messages = req.Messages[:n+1]
	return req
}

// BenchmarkEstimate: a 50-message conversation with tools.
func BenchmarkEstimate(b *testing.B) {
	req := conversation(50)
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	b.SetBytes(int64(chars))
	b.ReportAllocs()
	for b.Loop() {
		Estimate(req, "llama-3.3-70b")
	}
}

// BenchmarkFits is the cheap check on the same conversation.
func BenchmarkFits(b *testing.B) {
	req := conversation(50)
	b.ReportAllocs()
	for b.Loop() {
		Fits(req, 8192, 1024, "llama-3.3-70b")
	}
}

// BenchmarkFit adapts the same conversation to an 8K window.
func BenchmarkFit(b *testing.B) {
	req := conversation(50)
	a := &Adaptation{KeepLastTurns: 2, DropToolResults: 2}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := Fit(req, 8192, 1024, "llama-3.3-70b", a); !ok {
			b.Fatal("does not fit")
		}
	}
}
