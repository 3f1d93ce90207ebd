package fit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/google/go-cmp/cmp"
)

const fam = "llama-3.3-70b"

func user(s string) llm.Message      { return llm.Message{Role: llm.RoleUser, Content: s} }
func assistant(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }
func system(s string) llm.Message    { return llm.Message{Role: llm.RoleSystem, Content: s} }
func toolResult(id, s string) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: s}
}
func call(ids ...string) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "lookup", Arguments: `{"q":"` + id + `"}`})
	}
	return m
}

// words is n words of English-like text.
func words(n int) string { return strings.TrimSpace(strings.Repeat("route ", n)) }

// turns returns n turns of a user question and an answer, each about
// size words.
func turns(n, size int) []llm.Message {
	var ms []llm.Message
	for i := range n {
		ms = append(ms, user(fmt.Sprintf("question %d: %s", i, words(size))), assistant(fmt.Sprintf("answer %d: %s", i, words(size))))
	}
	return ms
}

func tokens(req *llm.Request) int { n, _ := Estimate(req, fam); return n }

// need is the window req needs with reserve, as Fits counts it.
func need(req *llm.Request, reserve int) int {
	n, e := Estimate(req, fam)
	return n + Margin(n, e) + reserve
}

// deepCopy copies everything Fit could touch.
func deepCopy(r *llm.Request) *llm.Request {
	c := *r
	c.Messages = nil
	for _, m := range r.Messages {
		m.Parts = slices.Clone(m.Parts)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		c.Messages = append(c.Messages, m)
	}
	c.Tools = slices.Clone(r.Tools)
	c.Stop = slices.Clone(r.Stop)
	c.Needs = slices.Clone(r.Needs)
	if r.Raw != nil {
		raw := *r.Raw
		raw.Body = slices.Clone(raw.Body)
		c.Raw = &raw
	}
	return &c
}

func roles(ms []llm.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteByte(string(m.Role)[0])
	}
	return b.String()
}

func TestFit(t *testing.T) {
	const reserve = 512
	long := system("You are a careful assistant. " + words(600))
	short := "Be careful."
	twenty := append([]llm.Message{system("Be brief.")}, turns(20, 60)...)
	twenty = append(twenty, user("and now?"))
	// A tool call whose result comes after a user's interjection: the cut
	// that drops the fewest turns (at q1) would split them, so Fit cuts at
	// q2, dropping two turns.
	split := []llm.Message{system("Be brief."),
		user("q0 " + words(300)), call("c1"), user("q1 (while the tool runs) " + words(20)),
		toolResult("c1", "result "+words(30)), assistant("a1 " + words(20)),
		user("q2 " + words(20)), assistant("a2 " + words(20)), user("q3")}
	tools := []llm.Message{system("Use tools."),
		user("find a " + words(10)), call("t1"), toolResult("t1", "old result "+words(800)), assistant("found a"),
		user("find b " + words(10)), call("t2", "t3"), toolResult("t2", "old result "+words(800)), toolResult("t3", "old result "+words(800)), assistant("found b"),
		user("find c " + words(10)), call("t4"), toolResult("t4", "recent result "+words(800)), assistant("found c"),
		user("and?")}

	for _, tc := range []struct {
		name     string
		msgs     []llm.Message
		window   func(req *llm.Request) int
		a        *Adaptation
		ok       bool
		did      []string
		roles    string // of out, when checked
		same     bool   // out == req
		checkOut func(t *testing.T, req, out *llm.Request)
	}{
		{name: "fits as is", msgs: twenty, window: func(r *llm.Request) int { return need(r, reserve) },
			a: &Adaptation{KeepLastTurns: 1}, ok: true, same: true},
		{name: "fits as is, no adaptation", msgs: twenty, window: func(r *llm.Request) int { return need(r, reserve) }, ok: true, same: true},
		{name: "a token short, no adaptation", msgs: twenty, window: func(r *llm.Request) int { return need(r, reserve) - 1 }, ok: false, same: true},
		{name: "keep last turns: drops the fewest",
			msgs: twenty, window: func(r *llm.Request) int { return need(r, reserve) * 2 / 5 },
			a: &Adaptation{KeepLastTurns: 2}, ok: true,
			checkOut: func(t *testing.T, req, out *llm.Request) {
				if !cmp.Equal(out.Messages[0], req.Messages[0]) || out.Messages[1].Role != llm.RoleUser {
					t.Errorf("out starts %q, want the system prompt then a user message", roles(out.Messages[:2]))
				}
				// One turn fewer dropped would not fit.
				dropped := (len(req.Messages) - len(out.Messages)) / 2
				more := &llm.Request{Messages: append([]llm.Message{req.Messages[0]}, req.Messages[1+2*(dropped-1):]...)}
				if Fits(more, need(req, reserve)*2/5, reserve, fam) {
					t.Errorf("dropped %d turns; %d would fit", dropped, dropped-1)
				}
			}},
		{name: "keep last turns: floor reached", msgs: twenty, window: func(r *llm.Request) int { return need(r, reserve) / 10 },
			a: &Adaptation{KeepLastTurns: 5}, ok: false, did: []string{"dropped 16 of 21 turns"}, roles: "s" + strings.Repeat("ua", 4) + "u"},
		{name: "too small for anything", msgs: twenty, window: func(*llm.Request) int { return 100 },
			a: &Adaptation{KeepLastTurns: 1, ShortSystem: "x", DropToolResults: 1}, ok: false},
		{name: "short system prompt", msgs: []llm.Message{long, user("hi " + words(50))},
			window: func(r *llm.Request) int { return need(r, reserve) / 2 },
			a:      &Adaptation{ShortSystem: short, KeepLastTurns: 1}, ok: true, did: []string{"shorter system prompt"}, roles: "su",
			checkOut: func(t *testing.T, req, out *llm.Request) {
				if out.Messages[0].Content != short || !cmp.Equal(out.Messages[1], req.Messages[1]) {
					t.Errorf("out = %+v", out.Messages)
				}
			}},
		{name: "short system prompt restored when dropping turns suffices",
			msgs:   append([]llm.Message{system("Be brief, be kind. " + words(40))}, append(turns(10, 200), user("last"))...),
			window: func(r *llm.Request) int { return need(r, reserve) / 2 },
			a:      &Adaptation{ShortSystem: "Be brief.", KeepLastTurns: 1}, ok: true, did: []string{"dropped 6 of 11 turns"}},
		{name: "old tool results elided, recent kept", msgs: tools,
			window: func(r *llm.Request) int { return need(r, reserve) * 2 / 3 },
			a:      &Adaptation{DropToolResults: 2}, ok: true, did: []string{"2 old tool results elided"},
			checkOut: func(t *testing.T, req, out *llm.Request) {
				if len(out.Messages) != len(req.Messages) {
					t.Fatalf("%d messages, want %d", len(out.Messages), len(req.Messages))
				}
				for i, m := range out.Messages {
					elided := m.Content == Placeholder
					if want := i == 3 || i == 7; elided != want {
						t.Errorf("message %d (%s %.20q): elided %v, want %v", i, m.Role, m.Content, elided, want)
					}
					if elided && m.ToolCallID != req.Messages[i].ToolCallID {
						t.Errorf("message %d lost its tool call id", i)
					}
				}
			}},
		{name: "tool results elided only as far as the last K turns", msgs: tools,
			window: func(r *llm.Request) int { return need(r, reserve) / 3 },
			a:      &Adaptation{DropToolResults: 2}, ok: false, did: []string{"3 old tool results elided"}},
		{name: "tool results elided, then turns dropped", msgs: tools,
			window: func(r *llm.Request) int { return need(r, reserve) / 3 },
			a:      &Adaptation{DropToolResults: 2, KeepLastTurns: 1}, ok: true, did: []string{"dropped 2 of 4 turns"},
			roles: "suatau"},
		{name: "a tool call stays with its result at the cut", msgs: split,
			// The window the naive cut (at q1) would fit exactly.
			window: func(r *llm.Request) int {
				return need(&llm.Request{Messages: append([]llm.Message{r.Messages[0]}, r.Messages[3:]...), MaxTokens: 100}, reserve)
			},
			a: &Adaptation{KeepLastTurns: 1}, ok: true, did: []string{"dropped 2 of 4 turns"}, roles: "suau"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &llm.Request{Messages: tc.msgs, MaxTokens: 100, Raw: &llm.Raw{Dialect: "openai", Body: []byte(`{}`)}}
			before := deepCopy(req)
			window := tc.window(req)
			out, did, ok := Fit(req, window, reserve, fam, tc.a)
			if diff := cmp.Diff(before, req); diff != "" {
				t.Fatalf("Fit changed its input (-before +after):\n%s", diff)
			}
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v (did %q; %d tokens in %d, window %d)", ok, tc.ok, did, tokens(out), tokens(req), window)
			}
			if tc.did != nil && !slices.Equal(did, tc.did) {
				t.Errorf("did = %q, want %q", did, tc.did)
			}
			if tc.same != (out == req) {
				t.Errorf("out == req: %v, want %v", out == req, tc.same)
			}
			if tc.same && len(did) != 0 {
				t.Errorf("did = %q for an unchanged request", did)
			}
			if out != req && out.Raw != nil {
				t.Errorf("an adapted request keeps the client's raw body")
			}
			if ok && !Fits(out, window, reserve, fam) {
				t.Errorf("ok, but out does not fit: needs %d, window %d", need(out, reserve), window)
			}
			if ok && out != req && len(did) == 0 {
				t.Errorf("out changed, did says nothing")
			}
			if tc.roles != "" && roles(out.Messages) != tc.roles {
				t.Errorf("roles %q, want %q", roles(out.Messages), tc.roles)
			}
			checkShape(t, req, out)
			if tc.checkOut != nil {
				tc.checkOut(t, req, out)
			}
		})
	}
}

// checkShape holds out to what Fit promises whatever it did: the last
// user message kept; no tool call apart from its results; after the
// system prompt, a user message first when turns were dropped.
func checkShape(t *testing.T, req, out *llm.Request) {
	t.Helper()
	lastUser := func(ms []llm.Message) *llm.Message {
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Role == llm.RoleUser {
				return &ms[i]
			}
		}
		return nil
	}
	if u := lastUser(req.Messages); u != nil {
		if v := lastUser(out.Messages); v == nil || !cmp.Equal(*u, *v) {
			t.Errorf("the last user message was not kept")
		}
	}
	// Every call: as many messages name it in out as in req, or none. A
	// tool message that names no call of its request belongs to the last
	// call before it.
	names := func(r *llm.Request) map[string]int {
		calls := map[string]bool{}
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
		}
		n := map[string]int{}
		caller := "none"
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				n[c.ID]++
			}
			if len(m.ToolCalls) > 0 {
				caller = m.ToolCalls[0].ID
			}
			if m.Role == llm.RoleTool {
				if calls[m.ToolCallID] {
					n[m.ToolCallID]++
				} else {
					n[caller]++
				}
			}
		}
		return n
	}
	in, kept := names(req), names(out)
	for id, n := range kept {
		if n != in[id] {
			t.Errorf("tool call %s: %d of its %d messages kept", id, n, in[id])
		}
	}
	i := 0
	for i < len(out.Messages) && out.Messages[i].Role == llm.RoleSystem {
		i++
	}
	if i < len(out.Messages) && len(out.Messages) < len(req.Messages) && out.Messages[i].Role != llm.RoleUser {
		t.Errorf("after dropping turns, out starts with %s", out.Messages[i].Role)
	}
}

func TestFit_NilAndUnknownWindow(t *testing.T) {
	if out, did, ok := Fit(nil, 10, 0, fam, nil); out != nil || did != nil || !ok {
		t.Errorf("Fit(nil) = %v, %v, %v", out, did, ok)
	}
	req := &llm.Request{Messages: turns(50, 100)}
	if out, _, ok := Fit(req, 0, 1000, fam, nil); !ok || out != req {
		t.Errorf("an unknown window (0) should take anything as it is")
	}
	if !Fits(req, 0, 0, fam) || Fits(req, 10, 0, fam) {
		t.Errorf("Fits: window 0 is unknown, 10 too small")
	}
}
