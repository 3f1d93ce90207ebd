package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/router"
)

// exhausted is the answer to a request whose every candidate failed or
// was skipped (router.ErrAllFailed). Its status says what left no
// candidate (re.Exhaustion):
//
//	router.RateLimited  429  rate_limit_error (both surfaces), code all_candidates_rate_limited
//	router.TimedOut     504  server_error (Anthropic: timeout_error), code all_candidates_timed_out
//	router.Unavailable  503  server_error (Anthropic: overloaded_error), code all_candidates_failed
//
// Every one says x-should-retry: false: the gateway has already tried the
// whole chain, and the official SDKs would otherwise send the request twice
// more (CLIENTS.md §1). Retry-After and retry-after-ms carry the wait when
// one is known; a 429 always carries them (1 s when no provider named a
// wait), so apps that slow down on 429 know how long.
func (s *Server) exhausted(re *router.Error, route *router.Route) *apiError {
	e := &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "all_candidates_failed",
		NoRetry: true, Message: s.summary(re)}
	switch re.Exhaustion {
	case router.RateLimited:
		e.Status, e.Type, e.Code = http.StatusTooManyRequests, "rate_limit_error", "all_candidates_rate_limited"
	case router.TimedOut:
		e.Status, e.Code = http.StatusGatewayTimeout, "all_candidates_timed_out"
	}
	now := s.clk.Now()
	wait := re.RetryAt.Sub(now)
	if re.RetryAt.IsZero() || wait <= 0 {
		wait = s.parkedWait(route, now)
	}
	if wait <= 0 && e.Status == http.StatusTooManyRequests {
		wait = time.Second
	}
	e.setWait(wait)
	return e
}

// setWait sends d as Retry-After (whole seconds, rounded up) and
// retry-after-ms, both capped at maxRetryAfter; nothing when d <= 0.
func (e *apiError) setWait(d time.Duration) {
	if d <= 0 {
		return
	}
	d = min(d, maxRetryAfter*time.Second)
	e.RetryAfter = max(1, int(math.Ceil(d.Seconds())))
	e.RetryAfterMS = max(1, int(math.Ceil(float64(d)/float64(time.Millisecond))))
}

// parkedWait is the time from now until the earliest parked candidate of
// route may be tried again (the latest end among its own, its account's
// and its endpoint's parks); 0 when no candidate is parked.
func (s *Server) parkedWait(route *router.Route, now time.Time) time.Duration {
	var earliest time.Time
	for i := range route.Chain {
		t := &route.Chain[i]
		var until time.Time
		for _, key := range t.HealthKeys() {
			if e := s.health.Get(key, now); e.State == health.Open && e.Until.After(until) {
				until = e.Until
			}
		}
		if until.After(now) && (earliest.IsZero() || until.Before(earliest)) {
			earliest = until
		}
	}
	if earliest.IsZero() {
		return 0
	}
	return earliest.Sub(now)
}

// maxReasonRunes cuts a candidate's reason in a client's message.
const maxReasonRunes = 300

// summary is re's message for the client, on one line: its headline, then
// every candidate in chain order with what happened to it and its reason,
// said once: "1. p/a: failed (2 sends): ...; 2. p/b: skipped: ...;
// 3. p/c: not tried: ...". Keys are scrubbed.
func (s *Server) summary(re *router.Error) string {
	var b strings.Builder
	b.WriteString("detour: ")
	b.WriteString(re.Headline())
	for i, c := range re.Candidates {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d. %s: %s", sep, i+1, c.Target, fate(c))
	}
	return s.scrub(b.String())
}

// fate says what happened to candidate c, and why.
func fate(c router.Candidate) string {
	reason := strings.ReplaceAll(c.Reason, "\n", " ")
	if r := []rune(reason); len(r) > maxReasonRunes {
		reason = string(r[:maxReasonRunes-1]) + "…"
	}
	switch {
	case c.Status == "":
		// Never reached: the router's reason already says "not tried".
		return "not tried: " + strings.TrimPrefix(reason, "not tried: ")
	case c.Skipped():
		return "skipped: " + reason
	case strings.HasPrefix(c.Status, "skipped"):
		// Sent to, then refused a further send (a park it caused).
		return "failed (" + plural(c.Sends, "send") + "), then skipped: " + reason
	}
	return "failed (" + plural(c.Sends, "send") + "): " + reason
}

// plural returns "1 send", "2 sends".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
