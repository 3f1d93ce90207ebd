package gateway_test

import (
	"strings"
	"testing"

	sim "github.com/detourhq/detour/simulate"
)

// One unreadable event mid-stream is left out: the client gets the whole
// answer, marked degraded where it can still be told: in trailers when the
// headers went out before it (streamed), in the headers of a buffered
// answer; and in the ledger line and the log line either way.
func TestStream_MalformedEventMarksTheAnswerDegraded(t *testing.T) {
	for _, route := range []string{"solo", "buf"} {
		t.Run(route, func(t *testing.T) {
			f := newFixture(t, setup{p1: []sim.Fault{{Kind: sim.StreamMalformedEvent, Chunks: 3}},
				routes: "  buf:\n    chain: [p1/m]\n    buffered: true\n"})
			resp, body := f.post("/v1/chat/completions",
				`{"model":"`+route+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			var text strings.Builder
			for _, line := range strings.Split(body, "\n") {
				if i := strings.Index(line, `"content":"`); i >= 0 {
					text.WriteString(strings.SplitN(line[i+len(`"content":"`):], `"`, 2)[0])
				}
			}
			if resp.StatusCode != 200 || text.String() != p1Answer || !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Fatalf("status %d, text %q: want p1's whole answer\n%s", resp.StatusCode, text.String(), body)
			}
			told := resp.Trailer
			if route == "buf" {
				told = resp.Header
			} else if resp.Header.Get("X-Detour-Degraded") != "false" {
				t.Errorf("headers x-detour-degraded %q, want false: the event came after them", resp.Header.Get("X-Detour-Degraded"))
			}
			if told.Get("X-Detour-Degraded") != "true" || told.Get("X-Detour-Dropped") != "1 malformed event" {
				t.Errorf("degraded %q, dropped %q (headers %v, trailers %v); want true, 1 malformed event",
					told.Get("X-Detour-Degraded"), told.Get("X-Detour-Dropped"), resp.Header, resp.Trailer)
			}
			recs := f.ledger.Records()
			if len(recs) != 1 || !recs[0].Degraded || strings.Join(recs[0].Dropped, ",") != "1 malformed event" {
				t.Errorf("ledger %+v, want one line degraded, dropped 1 malformed event", recs)
			}
			if !strings.Contains(f.logs.String(), `dropped="1 malformed event"`) {
				t.Errorf("the log line does not name what was dropped:\n%s", f.logs)
			}
		})
	}
}
