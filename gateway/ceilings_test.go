package gateway_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sim "github.com/detourhq/detour/simulate"
)

// chatAbout is a chat request to route whose one message is text.
func chatAbout(route, text string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, route, stream, text)
}

// Idempotency-Key answers are kept within gateway.idempotency_max_records
// and _bytes: past either the soonest to expire is evicted and counted,
// a repeat of an evicted key is served afresh, a repeat of a kept one is
// replayed. (On b98ee14 every answer was kept for a day: 400 keys of
// 512 KiB took the heap from 61 to 440 MiB.)
func TestIdempotency_KeptAnswersHaveACeiling(t *testing.T) {
	for _, tc := range []struct {
		name, gateway string
		pieces        int
		kept          int
	}{
		{"by count", "  idempotency_max_records: 3\n", 0, 3},
		// An answer of 400 pieces is 2.2 KiB, its record 3.3 KiB (its
		// JSON, the answer in base64, the key): two fit in 8 KiB, not
		// three.
		{"by bytes", "  idempotency_max_bytes: 8KiB\n", 400, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := make([]sim.Fault, 10)
			for i := range script {
				script[i] = sim.Fault{Kind: sim.OK, Pieces: tc.pieces}
			}
			f := newFixture(t, withMetricsKey(setup{gateway: defaultGateway + tc.gateway, p1: script}))
			const keys = 6
			for i := range keys {
				if r, b := f.post("/v1/chat/completions", chatHi, "Idempotency-Key", fmt.Sprint("op-", i)); r.StatusCode != 200 {
					t.Fatalf("op-%d: %d %s", i, r.StatusCode, b)
				}
			}
			m, _ := scrape(t, f)
			if got, want := m[`detour_records_evicted_total{store="idempotency"}`], float64(keys-tc.kept); got != want {
				t.Fatalf("idempotency evictions counted %v, want %v", got, want)
			}
			if v, ok := m[`detour_records_evicted_total{store="answers"}`]; !ok || v != 0 {
				t.Errorf("answers evictions %v (present %v), want 0 from the first scrape", v, ok)
			}
			r, _ := f.post("/v1/chat/completions", chatHi, "Idempotency-Key", fmt.Sprint("op-", keys-1))
			if r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatal("the latest key was not replayed")
			}
			r, _ = f.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-0")
			if r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("an evicted key: %d, replayed %q; want it served afresh", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
			}
			if n := f.sim.Stats().Requests("p1", ""); n != keys+1 {
				t.Fatalf("p1 got %d requests, want %d: one per key, and the evicted key again", n, keys+1)
			}
		})
	}
}

// Answers kept for cache_answers stay within gateway.cache_max_answers:
// the evicted one is counted, and when every candidate fails the kept
// ones still answer while the evicted one's request fails. (On b98ee14,
// 200 answers of 1 MiB grew the heap by 376 MiB.)
func TestCacheAnswers_HaveACeiling(t *testing.T) {
	wall := sim.Fault{Kind: sim.NoCredits}
	f := newFixture(t, withMetricsKey(setup{
		gateway: defaultGateway + "  cache_max_answers: 2\n",
		p1:      []sim.Fault{{}, {}, {}, wall},
		routes:  "  cached:\n    chain: [p1/m]\n    cache_answers: 1h\n"}))
	for i := range 3 {
		if r, b := f.post("/v1/chat/completions", chatAbout("cached", fmt.Sprint("question ", i), false)); r.StatusCode != 200 {
			t.Fatalf("question %d: %d %s", i, r.StatusCode, b)
		}
	}
	m, _ := scrape(t, f)
	if got := m[`detour_records_evicted_total{store="answers"}`]; got != 1 {
		t.Fatalf("answers evictions counted %v, want 1", got)
	}
	// p1 is walled (then parked): the last resort answers what it kept.
	r, _ := f.post("/v1/chat/completions", chatAbout("cached", "question 2", false))
	if r.StatusCode != 200 || r.Header.Get("X-Detour-Model") != "cache" {
		t.Fatalf("a kept answer's request, every candidate failing: %d from %q", r.StatusCode, r.Header.Get("X-Detour-Model"))
	}
	if r, _ := f.post("/v1/chat/completions", chatAbout("cached", "question 0", false)); r.StatusCode == 200 {
		t.Fatalf("the evicted answer's request got 200 from %q, want the failure", r.Header.Get("X-Detour-Model"))
	}
}

// Buffered streams at once hold no more than gateway.buffered_max_bytes
// together: 24 concurrent buffered streams through the gateway, each
// larger than a third of the budget, all reach the client whole while the
// bytes held never pass the budget, the streams past it counted as
// bypassed, and every byte is given back at the end. (On b98ee14 24
// buffered streams held 188 MiB, bounded by max_buffer alone.)
func TestBuffered_StreamsTogetherStayWithinTheGatewayBudget(t *testing.T) {
	const streams, pieces, budget = 24, 60, 32 << 10
	script := make([]sim.Fault, streams)
	for i := range script {
		script[i] = sim.Fault{Kind: sim.OK, Pieces: pieces, Gap: 4 * time.Millisecond}
	}
	f := newFixture(t, withMetricsKey(setup{
		gateway: defaultGateway + "  buffered_max_bytes: 32KiB\n",
		p1:      script,
		routes:  "  buf:\n    chain: [p1/m]\n    buffered: true\n"}))
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the gauge, sampled while the streams run
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			m, _ := scrape(t, f)
			if v := int64(m["detour_buffered_bytes"]); v > peak.Load() {
				peak.Store(v)
			}
		}
	}()
	want := "Hello from p1/m."
	for i := 6; i <= pieces; i++ {
		want += fmt.Sprint(" ", i)
	}
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			r, body := f.post("/v1/chat/completions", chatAbout("buf", "hi", true))
			if r.StatusCode != 200 || !strings.Contains(body, "data: [DONE]") {
				t.Errorf("stream %d: %d %q", i, r.StatusCode, body)
				return
			}
			if got := sseText(body); got != want {
				t.Errorf("stream %d reached the client as %q", i, got)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	m, _ := scrape(t, f)
	if m["detour_buffer_bypassed_total"] == 0 {
		t.Fatal("no stream was bypassed: 24 streams of about 11 KiB each fit a 32 KiB budget?")
	}
	if p := peak.Load(); p > budget || p == 0 {
		t.Fatalf("the streams held %d bytes at the peak seen, over the budget of %d (or none)", p, budget)
	}
	if v := m["detour_buffered_bytes"]; v != 0 {
		t.Fatalf("%v bytes still counted as held after every stream ended", v)
	}
	if n := f.sim.Stats().Requests("p1", ""); n != streams {
		t.Fatalf("p1 got %d requests, want %d: a bypassed stream is not sent again", n, streams)
	}
}

// sseText joins the content deltas of an OpenAI chat stream's body.
func sseText(body string) string {
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		if i := strings.Index(data, `"content":"`); i >= 0 {
			rest := data[i+len(`"content":"`):]
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				b.WriteString(rest[:j])
			}
		}
	}
	return b.String()
}
