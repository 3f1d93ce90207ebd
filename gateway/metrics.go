package gateway

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
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
	// OutcomeAllFailed: every candidate failed or was skipped (503).
	OutcomeAllFailed = "all_failed"
	// OutcomeInterrupted: a stream failed after its first output; the
	// client got an error event.
	OutcomeInterrupted = "interrupted"
	// OutcomeCanceled: the client went away (or the gateway stopped) first.
	OutcomeCanceled = "canceled"
	// OutcomeError: the gateway itself failed.
	OutcomeError = "error"
)

// latencyBuckets cover a fast local model to a slow long answer, in seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// parkBuckets cover a short rate-limit park to a daily quota, in seconds.
var parkBuckets = []float64{1, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600}

// metrics holds the gateway's Prometheus metrics, on a registry of its own
// (never the global default). Safe for concurrent use.
type metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	rejected        *prometheus.CounterVec
	attempts        *prometheus.CounterVec
	skips           *prometheus.CounterVec
	cost            *prometheus.CounterVec
	probes          *prometheus.CounterVec
	parkDuration    prometheus.Histogram
	ttft            *prometheus.HistogramVec
	latency         *prometheus.HistogramVec
	recoveryLatency prometheus.Histogram
	recoveryCost    prometheus.Counter
	inflight        prometheus.Gauge

	// parked maps a target parked by an attempt seen here to the end of its
	// park, so the target's next send is known to be its probe.
	parked sync.Map // string -> time.Time
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "detour_requests_total",
		Help: "Requests answered or failed, by surface (openai, anthropic), route and outcome."},
		[]string{"surface", "route", "outcome"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "detour_rejected_requests_total",
		Help: "Requests refused before routing, by surface and reason (unauthorized, forbidden, not_found, too_large, rate_limited, concurrency, bad_request)."},
		[]string{"surface", "reason"})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "detour_attempts_total",
		Help: "Sends to upstream targets, by target (provider/model) and ledger status (ok, http_429, net_timeout, canceled, ...)."},
		[]string{"target", "status"})
	m.skips = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "detour_skips_total",
		Help: "Candidates skipped without a send, by target and reason (skipped_parked, skipped_no_key, skipped_tried, skipped by contract)."},
		[]string{"target", "reason"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "detour_upstream_cost_usd_total",
		Help: "Upstream cost in USD at the targets' list prices, failed attempts included, by target."},
		[]string{"target"})
	m.probes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "detour_probes_total",
		Help: "Half-open probes of parked targets, by target and result (success, failure)."},
		[]string{"target", "result"})
	m.parkDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "detour_park_duration_seconds",
		Help: "How long a target was parked for, observed when it was parked.", Buckets: parkBuckets})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "detour_time_to_first_token_seconds",
		Help: "Streams: time from the request's arrival to its first output sent.", Buckets: latencyBuckets},
		[]string{"surface"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "detour_request_duration_seconds",
		Help: "Total time of each routed request, by surface and whether it streamed.", Buckets: latencyBuckets},
		[]string{"surface", "stream"})
	m.recoveryLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "detour_recovery_added_seconds",
		Help:    "Recovered requests: time spent on failed attempts, skips and waits before the answering send.",
		Buckets: latencyBuckets})
	m.recoveryCost = prometheus.NewCounter(prometheus.CounterOpts{Name: "detour_recovery_added_cost_usd_total",
		Help: "USD that recovery added: failed attempts' cost plus what the answering target cost over the first candidate."})
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "detour_inflight_requests",
		Help: "Requests being served now."})
	m.reg.MustRegister(m.requests, m.rejected, m.attempts, m.skips, m.cost, m.probes, m.parkDuration,
		m.ttft, m.latency, m.recoveryLatency, m.recoveryCost, m.inflight, &parkedCollector{s: s})
	// Every outcome of every route shows, at 0, from the first scrape.
	for _, route := range s.routeNames {
		for _, o := range []string{OutcomePrimarySuccess, OutcomeRetryRecovery, OutcomeFailoverRecovery,
			OutcomeFallbackRecovery, OutcomeDegraded, OutcomeStatic, OutcomeFailClosed, OutcomeAllFailed} {
			for _, sf := range []string{"openai", "anthropic"} {
				m.requests.WithLabelValues(sf, route, o)
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
	if a.Action == "skip" {
		m.skips.WithLabelValues(label, a.Status).Inc()
		return
	}
	m.attempts.WithLabelValues(label, a.Status).Inc()
	if a.Cost > 0 {
		m.cost.WithLabelValues(label).Add(a.Cost)
	}
	id := a.Target.ID()
	now := s.clk.Now()
	canceled := a.Failure != nil && a.Failure.Kind == classify.Canceled
	if v, ok := m.parked.Load(id); ok && !now.Before(v.(time.Time)) && !canceled {
		m.parked.Delete(id)
		result := "success"
		if a.Status != ledger.StatusOK {
			result = "failure"
		}
		m.probes.WithLabelValues(label, result).Inc()
	}
	if a.Failure == nil || canceled {
		return
	}
	e := s.health.Get(id, now)
	if e.State != health.Open || !e.Until.After(now) {
		return
	}
	if prev, ok := m.parked.Load(id); ok && prev.(time.Time).Equal(e.Until) {
		return
	}
	m.parked.Store(id, e.Until)
	m.parkDuration.Observe(e.Until.Sub(now).Seconds())
}

// targetLabel returns t's metrics label: "provider/model" for a target the
// config names, else "provider/_other", so a client naming models cannot
// grow the series without bound.
func (s *Server) targetLabel(t *router.Target) string {
	id := t.ID()
	if s.knownTargets[id] {
		return id
	}
	return t.Provider + "/_other"
}

// outcome reads how a request was answered from the attempts before the
// answering send (pre) and the target that answered.
func outcome(pre []router.Attempt, answered *router.Target) string {
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

// parkedCollector reports the parked targets at scrape time from the
// breaker's snapshot.
type parkedCollector struct{ s *Server }

var (
	parkedDesc = prometheus.NewDesc("detour_parked_targets",
		"Targets parked now (breaker open): they get no traffic until their reset.", nil, nil)
	parkedForDesc = prometheus.NewDesc("detour_target_parked_seconds",
		"Seconds until a parked target may be probed, by target; absent when not parked.", []string{"target"}, nil)
)

func (c *parkedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- parkedDesc
	ch <- parkedForDesc
}

func (c *parkedCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.s.clk.Now()
	n := 0
	for _, e := range c.s.health.Snapshot(now) {
		if e.State != health.Open || !e.Until.After(now) {
			continue
		}
		n++
		if c.s.knownTargets[e.Key] {
			ch <- prometheus.MustNewConstMetric(parkedForDesc, prometheus.GaugeValue, e.Until.Sub(now).Seconds(), e.Key)
		}
	}
	ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(n))
}
