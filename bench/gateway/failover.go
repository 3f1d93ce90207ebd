package main

import (
	"fmt"
	"slices"
	"time"
)

// failoverResult is the failover scenario: the route [fail, up] whose first
// target always answers 429 with a Retry-After of -park.
type failoverResult struct {
	// latency is one connection alternating a request to the failover route
	// and one to the one-target route: labels "failover/failover" (answers
	// that failed over), "failover" (the failing target parked, skipped)
	// and "one".
	latency *loadResult
	park    []parkResult
	// tail is the 32-connection run of the one-target route and of
	// failover-tail, in one detour, by stream mode.
	tail []tailResult
}

// tailResult compares, at many connections, the one-target route with
// failover-tail, whose first target always answers 429 with Retry-After: 1.
type tailResult struct {
	stream      bool
	conns       int
	plain, fail *loadResult
}

// parkResult is a run at many connections against the failover route,
// with what reached the failing target.
type parkResult struct {
	stream bool
	conns  int
	res    *loadResult
	// failovers counts the answers whose x-detour-attempts says the failing
	// target was tried first.
	failovers uint64
	arrivals  parkCount
}

// parkCount sorts the requests that reached the failing target.
type parkCount struct {
	// total requests, the priming one included; probes arrived at least a
	// park after the one before (a half-open probe); between arrived
	// sooner: while the target was parked.
	total, probes, between int
	// minGap is the shortest time between two requests.
	minGap time.Duration
}

// countArrivals sorts the arrival times (Unix ns) at a target that answers
// every request with a Retry-After of park, the first arrival being the
// priming request that parked it. Each 429 parks the target until at least
// park after that request arrived, so two arrivals less than a park apart
// mean a request got through while the target was parked (or two probes ran
// at once). A millisecond of slack absorbs clock granularity.
func countArrivals(arrivals []int64, park time.Duration) parkCount {
	a := slices.Clone(arrivals)
	slices.Sort(a)
	pc := parkCount{total: len(a)}
	for i := 1; i < len(a); i++ {
		gap := time.Duration(a[i] - a[i-1])
		if pc.minGap == 0 || gap < pc.minGap {
			pc.minGap = gap
		}
		if gap >= park-time.Millisecond {
			pc.probes++
		} else {
			pc.between++
		}
	}
	return pc
}

// runFailover runs the failover scenario, each run in a fresh detour.
func (b *bench) runFailover() error {
	f := &failoverResult{}
	det, err := b.startDetour("failover-latency", "-")
	if err != nil {
		return err
	}
	addr, err := hostPort(det.url)
	if err != nil {
		det.stop()
		return err
	}
	const path = "/v1/chat/completions"
	f.latency = runLoad(loadSpec{
		addr: addr, conns: 1, warmup: 300 * time.Millisecond, duration: b.opt.failoverDur,
		requests: []request{
			newRequest("failover", addr, path, chatBody("failover", false, b.opt.promptBytes), false),
			newRequest("one", addr, path, chatBody("bench-model", false, b.opt.promptBytes), false),
		},
	})
	det.stop()
	if f.latency.ok == 0 {
		return fmt.Errorf("failover latency run: no request succeeded: %s; detour's stderr:\n%s", f.latency.errSummary(), tail(det.log))
	}
	h := f.latency.hists
	b.logf("failover 1 conn: %d failovers p50 %s ms, %d skips of the parked target p50 %s ms, one-target route p50 %s ms%s",
		count(h, "failover/failover"), ms(q50(h, "failover/failover")), count(h, "failover"), ms(q50(h, "failover")),
		ms(q50(h, "one")), loadErrNote(f.latency))

	const conns = 32
	for _, stream := range b.opt.streams {
		tag := fmt.Sprintf("failover-park-s%v", stream)
		det, err := b.startDetour(tag, "-")
		if err != nil {
			return err
		}
		if addr, err = hostPort(det.url); err != nil {
			det.stop()
			return err
		}
		if err := b.resetUpstream(); err != nil {
			det.stop()
			return err
		}
		// One request parks the failing target; then the load starts, and
		// every request reaching that target must be a probe.
		prime := newRequest("", addr, path, chatBody("failover", stream, b.opt.promptBytes), stream)
		if err := primePark(addr, &prime); err != nil {
			det.stop()
			return fmt.Errorf("failover: the priming request: %w; detour's stderr:\n%s", err, tail(det.log))
		}
		res := runLoad(loadSpec{
			addr: addr, conns: conns, duration: b.opt.failoverDur,
			requests: []request{newRequest("failover", addr, path, chatBody("failover", stream, b.opt.promptBytes), stream)},
		})
		st, err := b.upstreamStats()
		det.stop()
		if err != nil {
			return err
		}
		if res.ok == 0 {
			return fmt.Errorf("failover park run: no request succeeded: %s; detour's stderr:\n%s", res.errSummary(), tail(det.log))
		}
		pr := parkResult{stream: stream, conns: conns, res: res, arrivals: countArrivals(st.FailArrivals, b.opt.park)}
		if fh := res.hists["failover/failover"]; fh != nil {
			pr.failovers = fh.Count()
		}
		f.park = append(f.park, pr)
		a := pr.arrivals
		b.logf("failover %d conns stream=%v: %d answers (%d failed over); the failing target got %d requests after the one that parked it: %d probes, %d between probes (shortest gap %s)%s",
			conns, stream, res.ok, pr.failovers, a.total-1, a.probes, a.between, a.minGap.Round(time.Microsecond), loadErrNote(res))
	}
	for _, stream := range b.opt.streams {
		tr, err := b.runTail(stream)
		if err != nil {
			return err
		}
		f.tail = append(f.tail, tr)
	}
	b.failover = f
	return nil
}

// runTail runs the one-target route, then failover-tail, each at 32
// connections for the failover duration after a second of warm-up, in one
// fresh detour: the tail a failover adds once the failing target's breaker
// has opened.
func (b *bench) runTail(stream bool) (tailResult, error) {
	const conns = 32
	tr := tailResult{stream: stream, conns: conns}
	det, err := b.startDetour(fmt.Sprintf("failover-tail-s%v", stream), "-")
	if err != nil {
		return tr, err
	}
	defer det.stop()
	addr, err := hostPort(det.url)
	if err != nil {
		return tr, err
	}
	const path = "/v1/chat/completions"
	for _, r := range []struct {
		route string
		out   **loadResult
	}{{"bench-model", &tr.plain}, {"failover-tail", &tr.fail}} {
		res := runLoad(loadSpec{addr: addr, conns: conns, warmup: time.Second, duration: b.opt.failoverDur,
			requests: []request{newRequest(r.route, addr, path, chatBody(r.route, stream, b.opt.promptBytes), stream)}})
		if res.ok == 0 {
			return tr, fmt.Errorf("failover tail run %s: no request succeeded: %s; detour's stderr:\n%s", r.route, res.errSummary(), tail(det.log))
		}
		*r.out = res
	}
	b.logf("failover tail %d conns stream=%v: one-target p99 %s ms, failover-tail p99 %s ms (%d of %d failed over)%s%s",
		conns, stream, ms(tr.plain.all().Quantile(0.99)), ms(tr.fail.all().Quantile(0.99)),
		count(tr.fail.hists, "failover-tail/failover"), tr.fail.ok, loadErrNote(tr.plain), loadErrNote(tr.fail))
	return tr, nil
}

// primePark sends req once and checks that it failed over: the failing
// target is parked from then on.
func primePark(addr string, req *request) error {
	c, err := dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		return err
	}
	defer c.close()
	resp, err := c.roundTrip(req)
	if err != nil {
		return err
	}
	if resp.attempts != 2 {
		return fmt.Errorf("x-detour-attempts %d, want 2 (a 429, then the second target)", resp.attempts)
	}
	return nil
}

func count(h map[string]*Histogram, label string) uint64 {
	if x := h[label]; x != nil {
		return x.Count()
	}
	return 0
}

func q50(h map[string]*Histogram, label string) time.Duration {
	if x := h[label]; x != nil {
		return x.Quantile(0.5)
	}
	return 0
}

func q99(h map[string]*Histogram, label string) time.Duration {
	if x := h[label]; x != nil {
		return x.Quantile(0.99)
	}
	return 0
}

func loadErrNote(r *loadResult) string {
	if r.fail == 0 {
		return ""
	}
	return fmt.Sprintf("  ERRORS %d: %s", r.fail, r.errSummary())
}

// reportFailover writes the failover scenario.
func (b *bench) reportFailover(p func(string, ...any)) {
	f := b.failover
	if f == nil {
		return
	}
	park := b.opt.park
	p("### Failover: first target always answers 429 (Retry-After %s), second answers\n\n", park)
	p("Route `failover` = [fail/bench-model, up/bench-model] with `max_server_wait: %s`, so each 429 parks the failing "+
		"target for its Retry-After and the request moves on at once; the upstream answers the 429 at once too, so what "+
		"is measured is detour's own cost of a failover (a real 429 adds its ~130 ms round trip).\n\n", durationYAML(park/4))
	h := f.latency.hists
	one := q50(h, "one")
	p("One connection, %s, alternating a request to `failover` and one to the one-target route `bench-model`:\n\n", b.opt.failoverDur)
	p("| requests | count | p50 ms | p99 ms | p50 added vs one-target route |\n|---|---:|---:|---:|---:|\n")
	for _, row := range []struct{ label, name string }{
		{"one", "one-target route (`bench-model`)"},
		{"failover/failover", "`failover`, failed over (429, park, then the second target)"},
		{"failover", "`failover`, first target parked and skipped"},
	} {
		added := "—"
		if row.label != "one" && count(h, row.label) > 0 {
			added = fmt.Sprintf("%+.3f ms", msf(float64(q50(h, row.label)-one)))
		}
		p("| %s | %d | %s | %s | %s |\n", row.name, count(h, row.label), ms(q50(h, row.label)), ms(q99(h, row.label)), added)
	}
	p("\n%d connections against `failover` for %s, each run in a fresh detour after one request that parked the failing "+
		"target; requests reaching the failing target from the upstream's own log:\n\n", 32, b.opt.failoverDur)
	p("| stream | answers | failed over | requests to the parked target | probes (≥ %s apart) | between probes | shortest gap | errors |\n", park)
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range f.park {
		a := r.arrivals
		p("| %v | %d | %d | %d | %d | %d | %s | %d |\n", r.stream, r.res.ok, r.failovers, a.total-1, a.probes,
			a.between, a.minGap.Round(time.Microsecond), r.res.fail)
	}
	p("\nA parked target should see one probe per park (at most %.0f in %s: each probe's 429 parks it again) and nothing "+
		"between them; \"failed over\" counts the answers whose x-detour-attempts is 2, which should equal the probes.\n\n",
		float64(b.opt.failoverDur)/float64(park), b.opt.failoverDur)
	if len(f.tail) > 0 {
		p("Failover tail: route `failover-tail` = [slow429/bench-model, %s/bench-model] under the default budget, its first "+
			"target always answering 429 with `Retry-After: 1` (a wait detour obeys until the breaker opens after 3 failures; "+
			"then `open_for: 1s`, so a probe goes to it every second, fails, and its request moves on at once), against the "+
			"one-target route; %d connections, %s each after 1 s of warm-up, in one detour. \"failed over\" counts the "+
			"answers that carried a failed probe:\n\n", b.upstreamProvider(), 32, b.opt.failoverDur)
		p("| stream | route | answers | failed over | p50 ms | p99 ms | max ms | errors |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range f.tail {
			for _, r := range []struct {
				name string
				res  *loadResult
			}{{"one-target", t.plain}, {"failover-tail", t.fail}} {
				all := r.res.all()
				p("| %v | %s | %d | %d | %s | %s | %s | %d |\n", t.stream, r.name, r.res.ok, count(r.res.hists, "failover-tail/failover"),
					ms(all.Quantile(0.5)), ms(all.Quantile(0.99)), ms(all.Max()), r.res.fail)
			}
		}
		p("\n")
	}
}

// tailRatios returns, per stream mode run, failover-tail's p99 over the
// one-target route's.
func (f *failoverResult) tailRatios() []float64 {
	var out []float64
	for _, t := range f.tail {
		if plain := t.plain.all().Quantile(0.99); plain > 0 {
			out = append(out, float64(t.fail.all().Quantile(0.99))/float64(plain))
		}
	}
	return out
}
