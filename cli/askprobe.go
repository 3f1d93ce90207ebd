package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/router"
)

// askProbe follows `detour ask --no-fallback --probe`: what the health
// store read of the start target's keys before the send, and whether a
// send went out as a probe of them, to say afterwards what came of it.
type askProbe struct {
	hb     *health.Breaker
	t      *router.Target
	before map[string]health.Entry // the keys not closed before the send
	sent   bool                    // a send went out as a probe (router.Attempt.Probe)
}

// newAskProbe reads the parks of t, route's candidate that start names
// (its first when start is empty), from hb.
func newAskProbe(hb *health.Breaker, route *router.Route, start string) *askProbe {
	i := 0
	if start != "" {
		i, _ = route.Candidate(start)
	}
	p := &askProbe{hb: hb, t: &route.Chain[i]}
	p.before = p.parks(time.Now())
	return p
}

// parks returns the keys of p's target that the store reads not closed
// at now.
func (p *askProbe) parks(now time.Time) map[string]health.Entry {
	out := map[string]health.Entry{}
	if p.hb == nil {
		return out
	}
	for _, k := range p.t.HealthKeys() {
		if e := p.hb.Get(k, now); e.State != health.Closed {
			out[k] = e
		}
	}
	return out
}

// seen notes an attempt of the request (router.Router.OnAttempt).
func (p *askProbe) seen(a router.Attempt) {
	if a.Probe {
		p.sent = true
	}
}

// released returns the keys parked before that the store reads closed
// now.
func (p *askProbe) released(now time.Time) []string {
	after := p.parks(now)
	var out []string
	for k := range p.before {
		if _, still := after[k]; !still {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// say writes one line on what the probe found, from what the store
// reads now: answered is whether the target answered.
func (p *askProbe) say(w io.Writer, answered bool) {
	now := time.Now()
	id := p.t.ID()
	switch {
	case len(p.before) == 0:
		fmt.Fprintf(w, "probe: %s was not parked (as the health store read it): sent as usual\n", id)
	case !p.sent:
		fmt.Fprintf(w, "probe: nothing sent to %s: %s\n", id, parksText(p.parks(now), now))
	case answered:
		fmt.Fprintf(w, "probe: %s answered: released %s\n", id, strings.Join(p.released(now), ", "))
	default:
		fmt.Fprintf(w, "probe: %s did not answer: %s\n", id, parksText(p.parks(now), now))
	}
}

// parksText says what the store reads of parks, key by key, in the
// order a walk reads them.
func parksText(parks map[string]health.Entry, now time.Time) string {
	if len(parks) == 0 {
		return "no park holds it now"
	}
	keys := make([]string, 0, len(parks))
	for k := range parks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		e := parks[k]
		switch {
		case !e.ProbeUntil.IsZero() && now.Before(e.ProbeUntil):
			parts = append(parts, fmt.Sprintf("the health store holds a probe of %s out until %s (a half-open request's or "+
				"another probe's lease; it does not say whose: it lapses then unless reported)", k, untilText(e.ProbeUntil, now)))
		case e.State == health.Open:
			part := fmt.Sprintf("%s parked until %s", k, untilText(e.Until, now))
			if e.Reason != "" {
				part += " (" + e.Reason + ")"
			}
			parts = append(parts, part)
		default:
			parts = append(parts, k+" "+string(e.State))
		}
	}
	return strings.Join(parts, "; ")
}
