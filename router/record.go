package router

import (
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
)

// begin tells a ledger that journals (ledger.Journal) that tn's send
// starts now, so that it is in the ledger even if the process dies before
// the send ends.
func (w *walk) begin(tn *turn) {
	if j, ok := w.r.Ledger.(ledger.Journal); ok {
		_ = j.Begin(ledger.Record{Time: tn.start, RequestID: w.ask.id, Route: w.route.Name, // like record's Write
			Provider: tn.t.Provider, Model: tn.t.Model, Hop: w.count.hops, Attempt: tn.n, Failover: tn.idx > 0})
	}
}

// attempt returns the record of tn's send, begun at tn.start and ended
// (or answered) at tn.end.
func (w *walk) attempt(tn *turn) Attempt {
	return Attempt{Target: tn.t, Hop: w.count.hops, N: tn.n, Failover: tn.idx > 0, Start: tn.start,
		Duration: tn.end.Sub(tn.start), ProviderRequestID: tn.rid, Probe: w.probe(tn.t, tn.p)}
}

// skip records t's skip at hop, decided at now, as v says: a park is
// kept for the final error and its end for the queue.
func (w *walk) skip(t *Target, v verdict, now time.Time, hop int) {
	st := w.chain.state(t)
	switch v.status {
	case ledger.StatusSkippedParked:
		st.parked = v.parked
		w.chain.resets.parked(v.parked.Until, now)
	case ledger.StatusSkippedQuota:
		if !v.frees.IsZero() {
			// A spent quota is waited for as a park is, by a budget that
			// queues; and the final error's RetryAt names it.
			w.chain.resets.parked(v.frees, now)
		}
	}
	st.last, st.has = Candidate{Status: v.status, Reason: v.reason}, true
	w.record(Attempt{Target: t, Hop: hop, Failover: t != w.chain.cands[0], Status: v.status, Action: policy.Skip,
		Phase: policy.PhaseNone, Reason: v.reason})
}

// record writes the attempt to the ledger before anything else happens.
func (w *walk) record(a Attempt) {
	now := w.clk.Now()
	if a.Start.IsZero() {
		a.Start = now // a skip or a last resort: no time passes
	}
	a.RequestID = w.ask.id
	if a.Pick == "" && a.Target.Group != nil {
		a.Pick = w.chain.state(a.Target).pick
	}
	w.attempts = append(w.attempts, a)
	rec := ledger.Record{
		Time: a.Start, RequestID: w.ask.id, Route: w.route.Name,
		Provider: a.Target.Provider, Model: a.Target.Model,
		Hop: a.Hop, Attempt: a.N, Failover: a.Failover,
		Status: a.Status, Kind: string(a.Kind), Action: string(a.Action), Phase: string(a.Phase),
		TokensIn: a.Usage.InputTokens, TokensOut: a.Usage.OutputTokens,
		TokensCacheRead: a.Usage.CacheReadTokens, TokensCacheWrite: a.Usage.CacheWriteTokens,
		Seconds: a.Duration.Seconds(), WaitSeconds: a.Wait.Seconds(),
		Cost: a.Cost, Reason: a.Reason, Dropped: a.Dropped, ProviderRequestID: a.ProviderRequestID, Pick: a.Pick,
		Degraded: a.Degraded && (a.Status == ledger.StatusOK || a.Status == ledger.StatusLastResort),
	}
	if a.Probe {
		// A probe of a park, as `detour probe` records its own.
		rec.Status, rec.Action = ledger.StatusProbeFailed, "probe"
		if a.Status == ledger.StatusOK {
			rec.Status = ledger.StatusProbeOK
		}
	}
	if a.Failure != nil {
		rec.Scope = string(a.Failure.Scope)
		if a.Failure.RetryAfter > 0 {
			rec.RetryAfterS = a.Failure.RetryAfter.Seconds()
		}
	}
	if w.r.Ledger != nil {
		// A ledger that cannot be written must not turn an answer into a
		// failure; the sink reports its own errors.
		_ = w.r.Ledger.Write(rec)
	}
	if w.r.OnAttempt != nil {
		w.r.OnAttempt(a)
	}
	if w.span != nil {
		w.span.Attempt(a)
	}
}

// lastKind is the kind of the last failure recorded, or "".
func (w *walk) lastKind() classify.Kind {
	for i := len(w.attempts) - 1; i >= 0; i-- {
		if k := w.attempts[i].Kind; k != "" {
			return k
		}
	}
	return ""
}
