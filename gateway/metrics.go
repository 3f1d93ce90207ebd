package gateway

import (
	"strings"
	"sync"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/prom"
	"github.com/detourhq/detour/router"
)

// The outcomes of a request, the outcome label of detour_requests_total.
// They are derived from router.Result.Attempts.
const (
	// OutcomePrimarySuccess: the first candidate answered at its first send.
	OutcomePrimarySuccess = "primary_success"
	// OutcomeRetryRecovery: the first candidate answered after a retry.
	OutcomeRetryRecovery = "retry_recovery"
	// OutcomeFailoverRecovery: another target of the first candidate's
	// model family answered.
	OutcomeFailoverRecovery = "failover_recovery"
	// OutcomeFallbackRecovery: a target of another model family answered.
	OutcomeFallbackRecovery = "fallback_recovery"
	// OutcomeDegraded: the route answered with a lesser result it allows
	// (policy.Degrade).
	OutcomeDegraded = "degraded"
	// OutcomeStatic: the route's zero-cost last resort answered
	// (policy.Static).
	OutcomeStatic = "static"
	// OutcomeFailClosed: a fail-closed failure (invalid, policy, ...) ended
	// the request; the provider's error was passed through.
	OutcomeFailClosed = "fail_closed"
	// OutcomeAllFailed: every candidate failed or was skipped (429 when
	// all were rate limited or out of quota, 504 when all timed out, else
	// 503).
	OutcomeAllFailed = "all_failed"
	// OutcomeInterrupted: a stream failed after its first output; the
	// client got an error event.
	OutcomeInterrupted = "interrupted"
	// OutcomeCanceled: the client went away (or the gateway stopped) first.
	OutcomeCanceled = "canceled"
	// OutcomeError: the gateway itself failed.
	OutcomeError = "error"
	// OutcomeRejected: refused before routing (a key, a limit, a bad
	// request). Only in the log line; detour_rejected_requests_total counts
	// these, not detour_requests_total.
	OutcomeRejected = "rejected"
)

// The store label values of detour_records_evicted_total.
const (
	evictedIdempotency = "idempotency"
	evictedAnswers     = "answers"
)

// latencyBuckets cover a fast local model to a slow long answer, in seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// parkBuckets cover a short rate-limit park to a daily quota, in seconds.
var parkBuckets = []float64{1, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600}

// metrics holds the gateway's Prometheus metrics, on a registry of its own
// (never a global one). Safe for concurrent use.
type metrics struct {
	reg *prom.Registry

	requests        *prom.CounterVec
	rejected        *prom.CounterVec
	attempts        *prom.CounterVec
	picks           *prom.CounterVec // group members' sends, by why they came where they did
	skips           *prom.CounterVec
	cost            *prom.CounterVec
	probes          *prom.CounterVec
	parkDuration    *prom.Histogram
	ttft            *prom.HistogramVec
	latency         *prom.HistogramVec
	recoveryLatency *prom.Histogram
	recoveryCost    *prom.Counter
	inflight        *prom.Gauge
	evicted         *prom.CounterVec

	// parked maps a health key (a target's "provider/model", or an
	// "account:" or "endpoint:" key) parked by an attempt seen here to the
	// end of its park, so the next send through that key is known to be
	// its probe.
	parked sync.Map // string -> time.Time
}

func newMetrics(s *Server) *metrics {
	reg := prom.NewRegistry()
	m := &metrics{reg: reg}
	m.requests = reg.Counter("detour_requests_total",
		"Requests answered or failed, by surface (openai, anthropic, responses, gemini), route and outcome.",
		"surface", "route", "outcome")
	m.rejected = reg.Counter("detour_rejected_requests_total",
		"Requests refused before routing, by surface and reason (unauthorized, forbidden, not_found, too_large, rate_limited, concurrency, bad_request, malformed_http: not valid HTTP, answered before any handler).",
		"surface", "reason")
	m.attempts = reg.Counter("detour_attempts_total",
		"Sends to upstream targets, by target (provider/model) and ledger status (ok, http_429, net_timeout, canceled, ...).",
		"target", "status")
	m.picks = reg.Counter("detour_group_picks_total",
		"Sends to members of a group of equals, by target and why the group put it where it was (weighted, least_busy, most_room, affinity).",
		"target", "pick")
	m.skips = reg.Counter("detour_skips_total",
		"Candidates skipped without a send, by target and reason (skipped_parked, skipped_no_key, skipped_disabled, skipped_tried, skipped by contract).",
		"target", "reason")
	m.cost = reg.Counter("detour_upstream_cost_usd_total",
		"Upstream cost in USD at the targets' list prices, failed attempts included, by target.",
		"target")
	m.probes = reg.Counter("detour_probes_total",
		"Half-open probes of parked targets, by target and result (success, failure).",
		"target", "result")
	m.parkDuration = reg.Histogram("detour_park_duration_seconds",
		"How long a target, account or endpoint was parked for, observed when it was parked.", parkBuckets).With()
	m.ttft = reg.Histogram("detour_time_to_first_token_seconds",
		"Streams: time from the request's arrival to its first output sent.", latencyBuckets,
		"surface")
	m.latency = reg.Histogram("detour_request_duration_seconds",
		"Total time of each routed request, by surface and whether it streamed.", latencyBuckets,
		"surface", "stream")
	m.recoveryLatency = reg.Histogram("detour_recovery_added_seconds",
		"Recovered requests: time spent on failed attempts, skips and waits before the answering send.",
		latencyBuckets).With()
	m.recoveryCost = reg.Counter("detour_recovery_added_cost_usd_total",
		"USD that recovery added: failed attempts' cost plus what the answering target cost over the first candidate.").With()
	m.inflight = reg.Gauge("detour_inflight_requests", "Requests being served now.")
	m.evicted = reg.Counter("detour_records_evicted_total",
		"Kept records evicted to stay within their ceiling, by store: idempotency (Idempotency-Key answers, "+
			"gateway.idempotency_max_records/_bytes: a repeat of an evicted key is served afresh) and answers "+
			"(cache_answers, gateway.cache_max_answers/_bytes). The ones that expire soonest go first.",
		"store")
	m.evicted.With(evictedIdempotency)
	m.evicted.With(evictedAnswers)
	reg.GaugeFunc("detour_buffered_bytes",
		"Bytes the streams of buffered routes hold now, all together (gateway.buffered_max_bytes caps them).", nil,
		func(emit func(float64, ...string)) { emit(float64(s.router.Buffers.Held())) })
	reg.CounterFunc("detour_buffer_bypassed_total",
		"Buffered streams that stopped waiting to be whole because every buffered stream together held "+
			"gateway.buffered_max_bytes: what they held went out and the rest streamed (a cut then ends "+
			"with an error event, no longer a failover).", nil,
		func(emit func(float64, ...string)) { emit(float64(s.router.Buffers.Bypassed())) })
	reg.GaugeFunc("detour_health_store_up",
		"1 while the health store (kind: memory, sqlite, redis) is in use; 0 while a shared store cannot be "+
			"reached and this process parks and probes on its own memory (synced when the store returns).",
		[]string{"kind"},
		func(emit func(float64, ...string)) {
			st := s.health.StoreStatus()
			up := 0.0
			if st.Up {
				up = 1
			}
			emit(up, st.Kind)
		})
	reg.GaugeFunc("detour_parked_targets",
		"Targets (provider/model) parked now (breaker open): they get no traffic until their reset. "+
			"Parked accounts and endpoints are counted in detour_parked_scopes, not here.", nil,
		func(emit func(float64, ...string)) {
			n := 0
			s.eachParked(func(scope classify.Scope, _ string, _ time.Duration) {
				if scope == classify.ScopeTarget {
					n++
				}
			})
			emit(float64(n))
		})
	reg.GaugeFunc("detour_parked_scopes",
		"Accounts (a provider's key, parked by a 402, a quota or a rejected key) and endpoints (a host, "+
			"parked by refused connections) parked now, by scope (account, endpoint): every target billed to "+
			"or served by one is skipped until its reset. Not counted in detour_parked_targets.", []string{"scope"},
		func(emit func(float64, ...string)) {
			var accounts, endpoints int
			s.eachParked(func(scope classify.Scope, _ string, _ time.Duration) {
				switch scope {
				case classify.ScopeAccount:
					accounts++
				case classify.ScopeEndpoint:
					endpoints++
				}
			})
			emit(float64(accounts), string(classify.ScopeAccount))
			emit(float64(endpoints), string(classify.ScopeEndpoint))
		})
	reg.GaugeFunc("detour_target_parked_seconds",
		"Seconds until a parked target may be probed, by target (provider/model, as configured); absent when "+
			"not parked. A target skipped only for its account's or endpoint's park is absent too.", []string{"target"},
		func(emit func(float64, ...string)) {
			s.eachParked(func(scope classify.Scope, key string, left time.Duration) {
				if scope == classify.ScopeTarget && s.v().knownTargets[key] {
					emit(left.Seconds(), key)
				}
			})
		})
	// What operators expect of any Go service, named as client_golang
	// names it: go_goroutines, go_memstats_*, process_resident_memory_bytes,
	// process_cpu_seconds_total, process_open_fds, ...
	reg.RegisterGo()
	reg.RegisterProcess()
	// Every outcome of every route shows, at 0, from the first scrape.
	for _, route := range s.v().routeNames {
		for _, o := range []string{OutcomePrimarySuccess, OutcomeRetryRecovery, OutcomeFailoverRecovery,
			OutcomeFallbackRecovery, OutcomeDegraded, OutcomeStatic, OutcomeFailClosed, OutcomeAllFailed} {
			for _, sf := range []string{"openai", "anthropic", "gemini"} {
				m.requests.With(sf, route, o)
			}
		}
	}
	return m
}

// onAttempt is the router's OnAttempt hook: attempts, skips, cost, parks
// and probes. It runs after the ledger record is written.
func (s *Server) onAttempt(a router.Attempt) {
	m := s.metrics
	label := s.targetLabel(a.Target)
	if a.Action == policy.Skip {
		m.skips.With(label, a.Status).Inc()
		return
	}
	m.attempts.With(label, a.Status).Inc()
	if a.Pick != "" {
		how, _, _ := strings.Cut(a.Pick, ":")
		m.picks.With(label, how).Inc()
	}
	if a.Cost > 0 {
		m.cost.With(label).Add(a.Cost)
	}
	now := s.clk.Now()
	canceled := a.Failure != nil && a.Failure.Kind == classify.Canceled
	if !canceled && m.probed(a.Target, now) {
		result := "success"
		if a.Status != ledger.StatusOK {
			result = "failure"
		}
		m.probes.With(label, result).Inc()
	}
	if a.Failure == nil || canceled {
		return
	}
	// The failure counts under the key its scope names (as the router
	// reports it): a 402 parks the account, not the target.
	key := healthKey(a.Target, a.Failure.Scope)
	e := s.health.Get(key, now)
	if e.State != health.Open || !e.Until.After(now) {
		return
	}
	if prev, ok := m.parked.Load(key); ok && prev.(time.Time).Equal(e.Until) {
		return
	}
	m.parked.Store(key, e.Until)
	m.parkDuration.Observe(e.Until.Sub(now).Seconds())
}

// probed reports whether a send to t at now is the probe of a park seen
// here, t's own or its account's or endpoint's, that has ended, and
// forgets those parks. Skips never reach it: a target skipped for its
// account's park leaves that park waiting for the send that probes it.
func (m *metrics) probed(t *router.Target, now time.Time) bool {
	probe := false
	for _, key := range t.HealthKeys() {
		if v, ok := m.parked.Load(key); ok && !now.Before(v.(time.Time)) && m.parked.CompareAndDelete(key, v) {
			probe = true
		}
	}
	return probe
}

// healthKey is the health key a failure of scope sc counts under for t,
// as the router keeps it.
func healthKey(t *router.Target, sc classify.Scope) string {
	switch sc {
	case classify.ScopeAccount:
		return t.AccountKey()
	case classify.ScopeEndpoint:
		return t.EndpointKey()
	}
	return t.ID()
}

// keyScope is the scope of health key key: account ("account:NAME"),
// endpoint ("endpoint:HOST:PORT") or target ("provider/model").
func keyScope(key string) classify.Scope {
	switch {
	case strings.HasPrefix(key, "account:"):
		return classify.ScopeAccount
	case strings.HasPrefix(key, "endpoint:"):
		return classify.ScopeEndpoint
	}
	return classify.ScopeTarget
}

// targetLabel returns t's metrics label: "provider/model" for a target the
// config names, else "provider/_other", so a client naming models cannot
// grow the series without bound.
func (s *Server) targetLabel(t *router.Target) string {
	id := t.ID()
	if s.v().knownTargets[id] {
		return id
	}
	return t.Provider + "/_other"
}

// lastResort reports whether the route answered itself (policy.Static):
// its record is the last of as.
func lastResort(as []router.Attempt) bool {
	n := len(as)
	return n > 0 && as[n-1].Action == policy.Static
}

// outcome reads how a request was answered from the attempts before the
// answering send (pre; a last resort's record ends them) and the target
// that answered.
func outcome(pre []router.Attempt, answered *router.Target) string {
	if lastResort(pre) {
		return OutcomeStatic
	}
	if len(pre) == 0 {
		return OutcomePrimarySuccess
	}
	sameTarget := true
	for _, a := range pre {
		switch a.Action {
		case policy.Static:
			return OutcomeStatic
		case policy.Degrade:
			return OutcomeDegraded
		}
		if a.Target.ID() != answered.ID() {
			sameTarget = false
		}
	}
	switch {
	case sameTarget:
		return OutcomeRetryRecovery
	case pre[0].Target.ModelFamily() == answered.ModelFamily():
		return OutcomeFailoverRecovery
	}
	return OutcomeFallbackRecovery
}

// observeRecovery records what recovery added to a request answered by
// answered after the attempts pre: their time (durations and waits) and
// cost, plus what the answer cost over the first candidate for its usage.
func (m *metrics) observeRecovery(pre []router.Attempt, answered *router.Target, usage llm.Usage) {
	if len(pre) == 0 {
		return
	}
	var d time.Duration
	cost := 0.0
	for _, a := range pre {
		d += a.Duration + a.Wait
		cost += a.Cost
	}
	if first := pre[0].Target; first.ID() != answered.ID() {
		cost += max(0, answered.Cost(usage)-first.Cost(usage))
	}
	m.recoveryLatency.Observe(d.Seconds())
	if cost > 0 {
		m.recoveryCost.Add(cost)
	}
}

// eachParked calls f with each health key parked now (breaker open), read
// from the breaker's snapshot at scrape time: its scope (target, account or
// endpoint), the key and the time left on its park.
func (s *Server) eachParked(f func(scope classify.Scope, key string, left time.Duration)) {
	now := s.clk.Now()
	for _, e := range s.health.Snapshot(now) {
		if e.State == health.Open && e.Until.After(now) {
			f(keyScope(e.Key), e.Key, e.Until.Sub(now))
		}
	}
}
