package policy

import (
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	next := Next{Exists: true, SameFamily: true}
	other := Next{Exists: true}
	tests := []struct {
		name string
		in   Input
		want Decision
	}{
		{
			name: "rate limit retries the same target after the server's wait",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 2 * time.Second, Until: t0.Add(2 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Retry, Wait: 2 * time.Second},
		},
		{
			name: "rate limit moves on once the target had its sends",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: time.Second},
				Attempts: 2, TargetAttempts: 2, Next: next},
			want: Decision{Action: Failover},
		},
		{
			name: "402 moves on with zero wait and parks",
			in:   Input{Failure: classify.Failure{Kind: classify.Wall}, Attempts: 1, TargetAttempts: 1, Next: other},
			want: Decision{Action: Fallback, Park: true},
		},
		{
			name: "wall with a reset parks until it",
			in: Input{Failure: classify.Failure{Kind: classify.Wall, RetryAfter: 7 * time.Minute, Until: t0.Add(7 * time.Minute)},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover, Park: true, ParkUntil: t0.Add(7 * time.Minute)},
		},
		{
			name: "server wait over the cap parks and moves on",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 90 * time.Second, Until: t0.Add(90 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover, Park: true, ParkUntil: t0.Add(90 * time.Second)},
		},
		{
			name: "server wait that eats the fallback reserve parks and moves on",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 55 * time.Second, Until: t0.Add(55 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover, Park: true, ParkUntil: t0.Add(55 * time.Second)},
		},
		{
			name: "the last candidate may use the reserve",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 55 * time.Second, Until: t0.Add(55 * time.Second)},
				Attempts: 1, TargetAttempts: 1},
			want: Decision{Action: Retry, Wait: 55 * time.Second},
		},
		{
			name: "a server wait over max_retry_wait parks until its reset and moves on while a candidate remains",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 30 * time.Second, Until: t0.Add(30 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover, Park: true, ParkUntil: t0.Add(30 * time.Second)},
		},
		{
			name: "a server wait over max_retry_wait falls back to another model at once",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 6 * time.Second, Until: t0.Add(6 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: other},
			want: Decision{Action: Fallback, Park: true, ParkUntil: t0.Add(6 * time.Second)},
		},
		{
			name: "a server wait of max_retry_wait exactly is a retry",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 5 * time.Second, Until: t0.Add(5 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Retry, Wait: 5 * time.Second},
		},
		{
			name: "with no candidate left a server wait over max_retry_wait is waited within the deadline",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 30 * time.Second, Until: t0.Add(30 * time.Second)},
				Attempts: 1, TargetAttempts: 1},
			want: Decision{Action: Retry, Wait: 30 * time.Second},
		},
		{
			name: "a candidate of another model the route forbids is not one to move to: the wait is a retry",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 30 * time.Second, Until: t0.Add(30 * time.Second)},
				Attempts: 1, TargetAttempts: 1, Next: other, NoFallback: true},
			want: Decision{Action: Retry, Wait: 30 * time.Second},
		},
		{
			name: "a candidate over the extra-cost ceiling is not one to move to: the wait is a retry",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 30 * time.Second, Until: t0.Add(30 * time.Second)},
				Budget: Budget{MaxExtraCost: 0.01}, Attempts: 1, TargetAttempts: 1, Next: Next{Exists: true, ExtraCost: 0.02}},
			want: Decision{Action: Retry, Wait: 30 * time.Second},
		},
		{
			name: "batch waits a server wait up to max_server_wait while a candidate remains",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 30 * time.Second, Until: t0.Add(30 * time.Second)},
				Budget: Batch(), Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Retry, Wait: 30 * time.Second},
		},
		{
			name: "a route's own max_retry_wait wins",
			in: Input{Failure: classify.Failure{Kind: classify.Transient, RetryAfter: 30 * time.Second, Until: t0.Add(30 * time.Second)},
				Budget: Budget{MaxRetryWait: 40 * time.Second}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Retry, Wait: 30 * time.Second},
		},
		{
			name: "a backoff over max_retry_wait moves on, parking nothing: no reset was named",
			in: Input{Failure: classify.Failure{Kind: classify.Transient}, Budget: Budget{BaseBackoff: 6 * time.Second},
				Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover},
		},
		{
			name: "with no candidate left a backoff over max_retry_wait is waited",
			in: Input{Failure: classify.Failure{Kind: classify.Transient}, Budget: Budget{BaseBackoff: 6 * time.Second},
				Attempts: 1, TargetAttempts: 1},
			want: Decision{Action: Retry, Wait: 6 * time.Second},
		},
		{
			name: "x-should-retry false moves on without waiting",
			in:   Input{Failure: classify.Failure{Kind: classify.Transient, ShouldRetry: -1}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover},
		},
		{
			name: "backoff without a server wait",
			in:   Input{Failure: classify.Failure{Kind: classify.Transient}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Retry, Wait: 500 * time.Millisecond},
		},
		{
			name: "invalid fails closed even with candidates left",
			in:   Input{Failure: classify.Failure{Kind: classify.Invalid}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Fail},
		},
		{
			name: "policy refusal is never routed around",
			in:   Input{Failure: classify.Failure{Kind: classify.Policy}, Attempts: 1, TargetAttempts: 1, Next: other},
			want: Decision{Action: Fail},
		},
		{
			name: "a route may fail closed on a wall",
			in: Input{Failure: classify.Failure{Kind: classify.Wall}, Attempts: 1, TargetAttempts: 1, Next: next,
				FailClosedOn: []classify.Kind{classify.Wall}},
			want: Decision{Action: Fail},
		},
		{
			name: "context overflow fails without a larger target",
			in:   Input{Failure: classify.Failure{Kind: classify.ContextOverflow}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Fail},
		},
		{
			name: "context overflow moves to a larger context",
			in: Input{Failure: classify.Failure{Kind: classify.ContextOverflow}, Attempts: 1, TargetAttempts: 1,
				Next: Next{Exists: true, LargerContext: true}},
			want: Decision{Action: Fallback},
		},
		{
			name: "unknown hops once",
			in:   Input{Failure: classify.Failure{Kind: classify.Unknown}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Failover},
		},
		{
			name: "unknown never hops twice",
			in:   Input{Failure: classify.Failure{Kind: classify.Unknown}, Attempts: 2, TargetAttempts: 1, UnknownHops: 1, Next: next},
			want: Decision{Action: Fail},
		},
		{
			name: "no fallback to another family when the route forbids it",
			in:   Input{Failure: classify.Failure{Kind: classify.Wall}, Attempts: 1, TargetAttempts: 1, Next: other, NoFallback: true},
			want: Decision{Action: Fail, Park: true},
		},
		{
			name: "attempt budget spent",
			in:   Input{Failure: classify.Failure{Kind: classify.Transient}, Attempts: 6, TargetAttempts: 1, Next: next},
			want: Decision{Action: Fail},
		},
		{
			name: "deadline reached",
			in:   Input{Failure: classify.Failure{Kind: classify.Transient}, Attempts: 1, TargetAttempts: 1, Next: next, Now: t0.Add(61 * time.Second)},
			want: Decision{Action: Fail},
		},
		{
			name: "output started: never replayed",
			in:   Input{Failure: classify.Failure{Kind: classify.Transient}, Phase: PhaseOutputStarted, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Fail},
		},
		{
			name: "caller cancel fails",
			in:   Input{Failure: classify.Failure{Kind: classify.Canceled}, Attempts: 1, TargetAttempts: 1, Next: next},
			want: Decision{Action: Fail},
		},
		{
			name: "batch queues for the earliest reset when nothing is left",
			in: Input{Failure: classify.Failure{Kind: classify.Wall}, Budget: Batch(), Attempts: 1, TargetAttempts: 1,
				EarliestReset: t0.Add(7 * time.Minute)},
			want: Decision{Action: Queue, Wait: 7 * time.Minute, Park: true},
		},
		{
			name: "interactive never queues",
			in: Input{Failure: classify.Failure{Kind: classify.Wall}, Attempts: 1, TargetAttempts: 1,
				EarliestReset: t0.Add(7 * time.Second)},
			want: Decision{Action: Fail, Park: true},
		},
		{
			name: "extra-cost ceiling stops a dear fallback",
			in: Input{Failure: classify.Failure{Kind: classify.Wall}, Budget: Budget{MaxExtraCost: 0.01}, Attempts: 1, TargetAttempts: 1,
				Next: Next{Exists: true, ExtraCost: 0.02}},
			want: Decision{Action: Fail, Park: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if in.Now.IsZero() {
				in.Now = t0
			}
			in.Started = t0
			got := Decide(in)
			got.Why = ""
			if got != tt.want {
				t.Errorf("Decide() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBackoff_GrowsAndCaps(t *testing.T) {
	b := Interactive()
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := Backoff(b, i+1, 0); got != w {
			t.Errorf("Backoff(n=%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := Backoff(b, 1, 0.999); got <= 375*time.Millisecond-time.Millisecond || got >= 500*time.Millisecond {
		t.Errorf("jittered Backoff = %s, want within (375ms, 500ms)", got)
	}
}

// TestDecide_NeverExceedsBudget walks random failure mixes and checks the
// attempt budget and deadline hold (DESIGN rule 9).
func TestDecide_NeverExceedsBudget(t *testing.T) {
	kinds := []classify.Kind{classify.Transient, classify.Wall, classify.Unknown, classify.Transient}
	for seed := 0; seed < 500; seed++ {
		b := Interactive()
		now := t0
		sends, onTarget, targets := 0, 0, 5
		for targets > 0 {
			sends++
			onTarget++
			k := kinds[(seed*7+sends*3)%len(kinds)]
			ra := time.Duration((seed*13+sends)%5) * time.Second
			d := Decide(Input{Failure: classify.Failure{Kind: k, RetryAfter: ra, Until: now.Add(ra)}, Budget: b, Now: now, Started: t0,
				Attempts: sends, TargetAttempts: onTarget, Next: Next{Exists: targets > 1, SameFamily: true}, Jitter: 0.5})
			if d.Action == Fail {
				break
			}
			now = now.Add(d.Wait + 100*time.Millisecond)
			if d.Action != Retry {
				targets--
				onTarget = 0
			}
		}
		if sends > b.MaxAttempts {
			t.Fatalf("seed %d: %d sends, budget %d", seed, sends, b.MaxAttempts)
		}
		if now.Sub(t0) > b.Deadline {
			t.Fatalf("seed %d: took %s, deadline %s", seed, now.Sub(t0), b.Deadline)
		}
	}
}

func TestQueueWait(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	b := Batch()
	b.Deadline = time.Hour
	tests := []struct {
		name      string
		queue     bool
		now       time.Time
		earliest  time.Time
		wantWait  time.Duration
		wantQueue bool
	}{
		{"reset ahead, inside the deadline", true, start, start.Add(10 * time.Minute), 10 * time.Minute, true},
		{"reset already passed: go at once", true, start.Add(time.Minute), start, 0, true},
		{"queueing off", false, start, start.Add(time.Minute), 0, false},
		{"nothing parked", true, start, time.Time{}, 0, false},
		{"reset after the deadline", true, start, start.Add(2 * time.Hour), 0, false},
		{"reset exactly at the deadline", true, start, start.Add(time.Hour), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.Queue = tt.queue
			wait, ok := QueueWait(b, tt.now, start, tt.earliest)
			if wait != tt.wantWait || ok != tt.wantQueue {
				t.Errorf("QueueWait = %v, %v; want %v, %v", wait, ok, tt.wantWait, tt.wantQueue)
			}
		})
	}
}

// A request with side effects whose outcome is unknown after the send is
// never sent again, to any target; an idempotent one, or one whose phase
// says the provider answered, still retries and fails over. Every phase
// past the first output fails, idempotent or not.
func TestDecide_UnknownOutcomeOfANonIdempotentRequestFailsClosed(t *testing.T) {
	silent := classify.Failure{Kind: classify.Transient, Status: classify.StatusHeaderTimeout, Silent: true}
	reset := classify.Failure{Kind: classify.Transient, Status: classify.StatusReset}
	next := Next{Exists: true, SameFamily: true}
	tests := []struct {
		name          string
		failure       classify.Failure
		phase         Phase
		nonIdempotent bool
		next          Next
		want          Action
		why           string
	}{
		{"timeout, unknown, not idempotent: fail closed", silent, PhaseUnknown, true, next, Fail,
			"outcome unknown after the send; the request is not idempotent"},
		{"reset, unknown, not idempotent, last candidate: no retry", reset, PhaseUnknown, true, Next{}, Fail,
			"outcome unknown after the send; the request is not idempotent"},
		{"timeout, unknown, idempotent: fails over", silent, PhaseUnknown, false, next, Failover, ""},
		{"reset, unknown, idempotent: retries", reset, PhaseUnknown, false, next, Retry, ""},
		{"reset, sent, not idempotent: retries (a response said what happened)", reset, PhaseSent, true, next, Retry, ""},
		{"reset, none, not idempotent: retries (nothing went out)", reset, PhaseNone, true, next, Retry, ""},
		{"output started, idempotent: fails", reset, PhaseOutputStarted, false, next, Fail, "not replayable after output_started"},
		{"tool started, idempotent: fails", reset, PhaseToolStarted, false, next, Fail, "not replayable after tool_started"},
		{"committed, idempotent: fails", reset, PhaseCommitted, false, next, Fail, "not replayable after committed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Failure: tt.failure, Phase: tt.phase, NonIdempotent: tt.nonIdempotent,
				Now: t0, Started: t0, Attempts: 1, TargetAttempts: 1, Next: tt.next})
			if got.Action != tt.want || (tt.why != "" && got.Why != tt.why) {
				t.Errorf("Decide() = %s (%q), want %s (%q)", got.Action, got.Why, tt.want, tt.why)
			}
		})
	}
}

func TestPhase_Replayable(t *testing.T) {
	for p, want := range map[Phase]bool{"": true, PhaseNone: true, PhaseSent: true, PhaseUnknown: true,
		PhaseOutputStarted: false, PhaseToolStarted: false, PhaseCommitted: false} {
		if got := p.Replayable(); got != want {
			t.Errorf("%q.Replayable() = %v, want %v", p, got, want)
		}
	}
}
