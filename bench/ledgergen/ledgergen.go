// Package ledgergen writes large synthetic ledgers for `detour report`'s
// scale tests and `make bench-report`: lines written by ledger.Record's own
// writer, as `detour serve` writes them, for a week of traffic on two routes
// with retries, failovers, walls, skips and probes, with a number of one-off
// targets mixed in (requests naming a model that does not exist, the
// hostile case of issue 30: 200,000 distinct targets in 91 MB).
//
//	n, err := ledgergen.Write(w, ledgergen.Options{Lines: 300_000, OneOff: 200_000})
//
// The same Options give the same bytes.
package ledgergen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/detourhq/detour/ledger"
)

// Options say what Write writes. The zero value writes nothing.
type Options struct {
	// Lines is how many lines to write.
	Lines int
	// OneOff is how many of them name a target of their own, seen on no
	// other line (provider one of the chains', model "ghost-N"), spread
	// evenly through the file; at most Lines.
	OneOff int
	// Start is the first line's time; zero means 2025-06-01 00:00 UTC.
	Start time.Time
	// Span is the time from the first line to the last; zero means a week.
	Span time.Duration
	// Seed picks the traffic; the same seed gives the same lines.
	Seed uint64
}

// chain is a route's targets in order, with how each tends to fail.
type hopSpec struct {
	provider, model string
	okPct           int     // percent answered
	wallPct         int     // percent of the rest that is a wall (else transient)
	parkPct         int     // percent skipped as parked, before any send
	latency         float64 // typical seconds of an answer
	price           float64 // USD per answer
}

var routes = []struct {
	name  string
	chain []hopSpec
}{
	{"default", []hopSpec{
		{"groq", "llama-3.3-70b-versatile", 62, 30, 8, 0.4, 0},
		{"openrouter", "meta-llama/llama-3.3-70b-instruct", 85, 50, 2, 1.1, 0.00012},
		{"gemini", "gemini-2.5-flash", 80, 60, 5, 0.9, 0},
		{"deepseek", "deepseek-chat", 99, 0, 0, 2.2, 0.00031},
	}},
	{"batch", []hopSpec{
		{"gemini", "gemini-2.5-flash", 70, 70, 10, 1.5, 0},
		{"deepseek", "deepseek-chat", 99, 0, 0, 3.1, 0.00052},
		{"local", "qwen2.5:7b", 100, 0, 0, 6.0, 0},
	}},
}

// Write writes o.Lines ledger lines to w and returns the bytes written.
func Write(w io.Writer, o Options) (int64, error) {
	if o.Start.IsZero() {
		o.Start = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Span <= 0 {
		o.Span = 7 * 24 * time.Hour
	}
	o.OneOff = min(o.OneOff, o.Lines)
	g := gen{o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x6c656467)), bw: bufio.NewWriterSize(w, 256<<10)}
	for g.i < o.Lines && g.err == nil {
		if g.oneOffDue() {
			g.oneOff()
			continue
		}
		g.request()
	}
	if g.err == nil {
		g.err = g.bw.Flush()
	}
	return g.n, g.err
}

type gen struct {
	o      Options
	rng    *rand.Rand
	bw     *bufio.Writer
	buf    []byte
	i      int // lines written
	ghosts int // one-off lines written
	reqs   int // requests begun
	n      int64
	err    error
}

// oneOffDue reports whether the next line is one of the OneOff lines,
// spread evenly: when fewer were written than (i+1)*OneOff/Lines, or when
// the lines left are no more than the one-offs still owed (a request
// writes several lines at once), so that exactly OneOff are written.
func (g *gen) oneOffDue() bool {
	o := g.o
	owed := o.OneOff - g.ghosts
	return owed > 0 && (g.ghosts < (g.i+1)*o.OneOff/o.Lines || o.Lines-g.i <= owed)
}

// now is line i's time: the span spread evenly over the lines.
func (g *gen) now() time.Time {
	return g.o.Start.Add(time.Duration(float64(g.o.Span) * float64(g.i) / float64(max(1, g.o.Lines-1))))
}

func (g *gen) write(r *ledger.Record) {
	if g.err != nil || g.i >= g.o.Lines {
		return
	}
	b, err := r.MarshalJSON()
	if err != nil {
		g.err = err
		return
	}
	b = append(b, '\n')
	n, err := g.bw.Write(b)
	g.n += int64(n)
	g.err = err
	g.i++
}

// oneOff writes a request naming a target directly, a model of its own
// seen on no other line: every other one is answered (a permissive
// upstream, as the simulator is), the rest fail with 404 (kind invalid).
func (g *gen) oneOff() {
	g.reqs++
	prov := routes[0].chain[g.ghosts%len(routes[0].chain)].provider
	model := fmt.Sprintf("ghost-%07d", g.ghosts)
	g.ghosts++
	r := ledger.Record{Time: g.now(), RequestID: g.reqID(), Route: prov + "/" + model, Provider: prov, Model: model,
		Attempt: 1, Status: ledger.StatusOK, Action: "return", Phase: "committed", TokensIn: 10 + g.rng.IntN(90),
		TokensOut: 1 + g.rng.IntN(20), Seconds: ledger.Seconds(time.Duration((0.2 + g.rng.Float64()) * float64(time.Second))),
		Cost: 0.000002}
	if g.ghosts%2 == 0 {
		r.Status, r.Kind, r.Scope, r.Action, r.Phase = "http_404", "invalid", "target", "fail", "sent"
		r.TokensIn, r.TokensOut, r.Cost = 0, 0, 0
		r.Reason = "404 model " + model + " does not exist"
	}
	g.write(&r)
}

func (g *gen) reqID() string { return fmt.Sprintf("req-%09d", g.reqs) }

// request writes one request's walk down its route's chain, one line an
// attempt: skips, retries of transient failures, walls that move on, and
// the answer.
func (g *gen) request() {
	g.reqs++
	rt := routes[0]
	if g.rng.IntN(4) == 0 {
		rt = routes[1]
	}
	id, t := g.reqID(), g.now()
	if g.reqs%500 == 0 {
		// `detour probe` checks the first target now and then.
		h := rt.chain[0]
		g.write(&ledger.Record{Time: t, Provider: h.provider, Model: h.model, Attempt: 1,
			Status: ledger.StatusProbeOK, Action: "probe", Phase: "committed", Seconds: 0.2})
		return
	}
	for hop, h := range rt.chain {
		base := ledger.Record{Time: t, RequestID: id, Route: rt.name, Provider: h.provider, Model: h.model,
			Hop: hop, Failover: hop > 0}
		if g.rng.IntN(100) < h.parkPct {
			r := base
			r.Status, r.Action, r.Phase, r.Reason = ledger.StatusSkippedParked, "skip", "none", "parked until the provider's reset"
			g.write(&r)
			continue
		}
		for attempt := 1; attempt <= 2; attempt++ {
			r := base
			r.Attempt = attempt
			r.TokensIn = 200 + g.rng.IntN(1800)
			if g.rng.IntN(100) < h.okPct {
				r.Status, r.Action, r.Phase = ledger.StatusOK, "return", "committed"
				r.TokensOut = 20 + g.rng.IntN(600)
				r.Seconds = ledger.Seconds(time.Duration(h.latency * (0.5 + g.rng.ExpFloat64()) * float64(time.Second)))
				r.Cost = h.price
				r.Degraded = hop > 0 && rt.name == "default" && hop >= 3
				g.write(&r)
				return
			}
			r.TokensIn = 0
			r.Seconds = ledger.Seconds(time.Duration((0.1 + g.rng.Float64()*0.3) * float64(time.Second)))
			if g.rng.IntN(100) < h.wallPct {
				r.Status, r.Kind, r.Scope, r.Action, r.Phase = "http_429", "wall", "account", "failover", "sent"
				r.Reason = "429 insufficient_quota: you exceeded your current quota"
				g.write(&r)
				break
			}
			r.Status, r.Kind, r.Scope, r.Phase = "http_503", "transient", "target", "sent"
			r.Reason = "503 service unavailable"
			r.Action = "retry"
			if attempt == 2 {
				r.Action = "failover"
			} else {
				r.WaitSeconds = 0.5
			}
			g.write(&r)
		}
		t = t.Add(300 * time.Millisecond)
	}
}
