package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	sim "github.com/detourhq/detour/simulate"
)

// A buffered route with over_buffer: fail_over, seen by the official SDK:
// a runaway answer past max_buffer never reaches the client, the next
// candidate's whole answer does, at the same provider and at another, and
// the ledger names max_buffer.
func TestBuffered_PastMaxBufferFailsOverWhenConfigured(t *testing.T) {
	for _, tc := range []struct{ name, chain, answer string }{
		{"same provider", "[p1/m, p1/n]", "Hello from p1/n."},
		{"other provider", "[p1/m, p2/m]", "Hello from p2/m."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, setup{
				p1: []sim.Fault{{Kind: sim.OK, Pieces: 2000}},
				routes: `  buf:
    chain: ` + tc.chain + `
    buffered: true
    max_buffer: 8KiB
    over_buffer: fail_over
`})
			params := userHi()
			params.Model = "buf"
			stream := f.openai().Chat.Completions.NewStreaming(ctx(t), params)
			var text strings.Builder
			for stream.Next() {
				if cs := stream.Current().Choices; len(cs) > 0 {
					text.WriteString(cs[0].Delta.Content)
				}
			}
			if err := stream.Err(); err != nil || text.String() != tc.answer {
				t.Fatalf("text %q err %v, want only %q", text.String(), err, tc.answer)
			}
			recs := f.ledger.Records()
			if len(recs) != 2 || recs[0].Status != "max_buffer" || recs[0].Model != "m" || recs[1].Status != "ok" {
				t.Fatalf("ledger %+v, want max_buffer on p1/m then ok", recs)
			}
			if !strings.Contains(recs[0].Reason, "max_buffer") {
				t.Errorf("reason %q does not name the setting", recs[0].Reason)
			}
		})
	}
}

// An answer dropped past max_buffer is detour's own limit, not the
// target's failure: a run of them never parks the target, so a route that
// does not buffer keeps sending to it. (On b98ee14 five dropped answers
// parked p1/m and the plain route skipped it for all its requests.)
func TestBuffered_DroppedAnswersNeverParkTheTarget(t *testing.T) {
	const runaways, plain = 8, 5
	var script []sim.Fault
	for range runaways {
		script = append(script, sim.Fault{Kind: sim.OK, Pieces: 2000})
	}
	hb := health.New(health.Settings{})
	f := newFixture(t, setup{p1: script, health: hb, routes: `  buf:
    chain: [p1/m, p2/m]
    buffered: true
    max_buffer: 8KiB
    over_buffer: fail_over
  plain:
    chain: [p1/m, p2/m]
`})
	client := f.openai()
	for i := range runaways + plain {
		params := userHi()
		params.Model = "buf"
		if i >= runaways {
			params.Model = "plain"
		}
		stream := client.Chat.Completions.NewStreaming(ctx(t), params)
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("request %d (%s): %v", i, params.Model, err)
		}
	}
	if n := f.sim.Stats().Requests("p1", "m"); n != runaways+plain {
		t.Errorf("p1/m got %d requests, want %d: every dropped answer's target stays eligible", n, runaways+plain)
	}
	for _, r := range f.ledger.Records() {
		if r.Status == "skipped" || r.Action == "skip" {
			t.Fatalf("p1/m was skipped after dropped answers: %+v", r)
		}
	}
	if e := hb.Get("p1/m", time.Now()); e.State != health.Closed {
		t.Errorf("p1/m's health is %s after %d dropped answers, want closed", e.State, runaways)
	}
}
