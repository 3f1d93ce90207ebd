package fit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/google/go-cmp/cmp"
)

// randomConversation builds a conversation from seed: maybe a system
// prompt, then turns of a user message followed by assistant answers and
// tool calls with their results (in any order, some after a user's
// interjection, some with no id), texts of random length in English,
// Japanese and JSON.
func randomConversation(seed uint64, nTurns int) *llm.Request {
	r := rand.New(rand.NewPCG(seed, seed>>7|1))
	text := func() string {
		n := r.IntN(400)
		switch r.IntN(4) {
		case 0:
			return strings.Repeat("会話の文脈", n/5+1)
		case 1:
			return strings.Repeat(`{"k":12,"v":"x"} `, n/10+1)
		case 2:
			return ""
		}
		return strings.Repeat("word ", n+1)
	}
	req := &llm.Request{MaxTokens: r.IntN(2000)}
	for range r.IntN(3) {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: text()})
	}
	id := 0
	var pending []string // calls not answered yet
	for range nTurns {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: text()})
		// Results left over from the last turn come after the user's
		// interjection.
		for _, p := range pending {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: p, Content: text()})
		}
		pending = nil
		for range r.IntN(3) {
			switch r.IntN(3) {
			case 0:
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: text()})
			default:
				m := llm.Message{Role: llm.RoleAssistant, Content: text()}
				var ids []string
				for range 1 + r.IntN(3) {
					id++
					ids = append(ids, fmt.Sprintf("call_%d", id))
					m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: ids[len(ids)-1], Name: "f", Arguments: text()})
				}
				req.Messages = append(req.Messages, m)
				r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				for i, c := range ids {
					switch {
					case i > 0 && r.IntN(4) == 0:
						pending = append(pending, c) // answered after the next user message
					case r.IntN(8) == 0:
						req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, Content: text()}) // no id
					default:
						req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c, Content: text()})
					}
				}
			}
		}
	}
	return req
}

// FuzzFit: for random conversations, windows and adaptations, Fit never
// panics, never changes its input, and when ok its output fits with the
// margin, keeps the last user message and every tool call with all its
// results.
func FuzzFit(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint16(2000), uint16(256), uint8(2), uint8(1), true)
	f.Add(uint64(7), uint8(40), uint16(9000), uint16(1024), uint8(1), uint8(0), false)
	f.Add(uint64(42), uint8(3), uint16(300), uint16(0), uint8(0), uint8(3), true)
	f.Add(uint64(99), uint8(0), uint16(50), uint16(10), uint8(1), uint8(1), true)
	f.Fuzz(checkFit)
}

// TestFit_RandomConversations runs FuzzFit's checks over a fixed set of
// random conversations, windows and adaptations.
func TestFit_RandomConversations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for seed := range uint64(200) {
		checkFit(t, seed, uint8(r.IntN(40)), uint16(r.IntN(20000)), uint16(r.IntN(2000)),
			uint8(r.IntN(5)), uint8(r.IntN(4)), r.IntN(2) == 0)
	}
}

func checkFit(t *testing.T, seed uint64, nTurns uint8, window, reserve uint16, keep, drop uint8, short bool) {
	t.Helper()
	req := randomConversation(seed, int(nTurns%60))
	before := deepCopy(req)
	var a *Adaptation
	if keep > 0 || drop > 0 || short {
		a = &Adaptation{KeepLastTurns: int(keep % 8), DropToolResults: int(drop % 8)}
		if short {
			a.ShortSystem = "Be brief."
		}
	}
	family := []string{"llama-3.3-70b", "gpt-4o", "claude-sonnet-4", "gemini-2.5-flash", ""}[seed%5]
	out, did, ok := Fit(req, int(window), int(reserve), family, a)
	if diff := cmp.Diff(before, req); diff != "" {
		t.Fatalf("seed %d: Fit changed its input:\n%s", seed, diff)
	}
	if ok != Fits(out, int(window), int(reserve), family) {
		t.Fatalf("seed %d: ok = %v, but Fits(out) = %v (did %q)", seed, ok, !ok, did)
	}
	if ok && window > 0 { // 0: an unknown window, that anything fits
		n, e := Estimate(out, family)
		if n+Margin(n, e)+int(reserve) > int(window) {
			t.Fatalf("seed %d: ok, but %d tokens ±%.0f%% + %d reserve > window %d", seed, n, 100*e, reserve, window)
		}
	}
	if out == req && len(did) > 0 || out != req && len(did) == 0 {
		t.Fatalf("seed %d: out == req is %v, did %q", seed, out == req, did)
	}
	checkShape(t, req, out)
	checkSubsequence(t, req, out)
}

// checkSubsequence: out's messages are req's in order, some dropped, a
// tool result maybe replaced by Placeholder, the system prompt maybe
// replaced by one shorter message.
func checkSubsequence(t *testing.T, req, out *llm.Request) {
	t.Helper()
	i, j := 0, 0
	if len(out.Messages) > 0 && out.Messages[0].Role == llm.RoleSystem && out.Messages[0].Content == "Be brief." {
		for i < len(req.Messages) && req.Messages[i].Role == llm.RoleSystem {
			i++
		}
		j = 1
	}
	for ; j < len(out.Messages); j++ {
		o := out.Messages[j]
		for i < len(req.Messages) && !sameOrElided(req.Messages[i], o) {
			i++
		}
		if i == len(req.Messages) {
			t.Fatalf("out message %d (%s) is not one of req's, in order", j, o.Role)
		}
		i++
	}
}

func sameOrElided(m, o llm.Message) bool {
	if cmp.Equal(m, o) {
		return true
	}
	m.Content, m.Parts = Placeholder, nil
	return m.Role == llm.RoleTool && cmp.Equal(m, o)
}
