// Package scenario is the fault-scenario suite of the failover issue: one
// table of real faults, each with the outcome detour must reach, run by
// two runners that share it: the router's, in memory under a fake clock
// (router/scenario_test.go), and the gateway's, end to end over real HTTP
// at a tenth of the time (gateway/scenario_test.go). Every row runs twice:
// with the fallback at the same provider as the failing target (another
// model there) and at another provider.
//
// A row describes a route [A, B]: A is the target that meets the fault,
// B the fallback, and between them the row's Middle candidates, if any.
// Times are given at full scale; a runner multiplies every duration
// (faults, route limits, expected bounds) by its scale, unless the row
// is RealTime.
package scenario

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// Mode is how a row's request is sent.
type Mode string

// The modes of a request.
const (
	// Complete is a non-streamed request.
	Complete Mode = "complete"
	// Stream is a streamed request that reaches the caller as it comes.
	Stream Mode = "stream"
	// Buffered is a streamed request on a route with buffered: true.
	Buffered Mode = "buffered"
)

// Placement says where the fallback B is served.
type Placement string

// The two placements every row runs in.
const (
	// SameProvider serves B as another model of A's provider:
	// chain [p/model-a, p/model-b].
	SameProvider Placement = "same-provider"
	// OtherProvider serves B at another provider: chain [p/model-a,
	// q/model-b].
	OtherProvider Placement = "other-provider"
)

// Placements are both placements, in the order the runners use.
var Placements = []Placement{SameProvider, OtherProvider}

// The models and providers of a row's chain.
const (
	ProviderA = "p"
	ModelA    = "model-a"
	ModelB    = "model-b"
)

// maxMiddle is the most Middle candidates a row may have.
const maxMiddle = 8

// MiddleModel is the model of the row's i-th Middle candidate (from 0),
// served by ProviderA in both placements.
func MiddleModel(i int) string { return fmt.Sprintf("model-m%d", i+1) }

// QuotaSourceA is where a row's QuotaA is declared: A's limits: in a
// config file, and the words a skip for them names.
const QuotaSourceA = "targets." + ProviderA + "/" + ModelA + ".limits"

// ProviderB is the provider that serves B in placement pl.
func ProviderB(pl Placement) string {
	if pl == SameProvider {
		return ProviderA
	}
	return "q"
}

// Limits are the route's time limits and budget in a row (full scale).
type Limits struct {
	HeaderTimeout, FirstToken, IdleTimeout, MaxDuration time.Duration
	Deadline, Reserve                                   time.Duration
}

// DefaultLimits are the limits every row uses unless it says otherwise:
// short enough that the timing bounds of the rows are tight.
var DefaultLimits = Limits{HeaderTimeout: 10 * time.Second, FirstToken: 15 * time.Second,
	IdleTimeout: 5 * time.Second, Deadline: 60 * time.Second, Reserve: 10 * time.Second}

// Outcome is how a row's request ends.
type Outcome string

// The outcomes a row expects.
const (
	// Answered: a complete answer from Want.Answer.
	Answered Outcome = "answered"
	// Cut: a stream that started with A's output ends with an explicit
	// error (Want.Status says which), never another model's text.
	Cut Outcome = "cut"
	// FailedClosed: the request fails closed (invalid, policy): no
	// fallback is asked.
	FailedClosed Outcome = "failed_closed"
	// AllFailed: every candidate failed.
	AllFailed Outcome = "all_failed"
)

// Row is one fault and what detour must make of it.
type Row struct {
	Name string
	Mode Mode
	// A scripts the sends to A in order; after it, A answers OK. Every,
	// when set, is served on every send to A instead.
	A     []sim.Fault
	Every *sim.Fault
	// B scripts the sends to B in order; after it, B answers OK.
	B []sim.Fault
	// Middle are candidates between A and B (MiddleModel(i) at
	// ProviderA), each served its fault on every send; 8 at most.
	Middle []sim.Fault
	// Requests is how many requests are sent one after the other (0:
	// one); each must reach Want (its outcome, its answer: Answer or its
	// place in By, the time bounds), and the sends count them all.
	Requests int
	// ReasoningA declares A a reasoning model (offers: [reasoning]).
	ReasoningA bool
	// RealTime asks a runner that scales time to run the row at full
	// scale: it tests a built-in default, which a runner cannot scale.
	RealTime bool
	// NoPrefill makes B's provider refuse a conversation that ends with
	// an assistant message (Anthropic's Opus 4.6 400).
	NoPrefill bool
	// ContextA and ContextB are the targets' context windows (0: unknown).
	ContextA, ContextB int
	// QuotaA are A's declared quotas (targets.p/model-a.limits: rpm, ...;
	// zero: none), counted under A's own key (Source QuotaSourceA). They
	// are not scaled: a row's requests all fall in one window.
	QuotaA router.Limits
	// Limits replace DefaultLimits when not zero.
	Limits Limits
	Want   Want
	// WantSame, when set, replaces Want in the SameProvider placement: for
	// a failure whose scope reaches B there.
	WantSame *Want
}

// Expect returns what the row expects in placement pl.
func (r Row) Expect(pl Placement) Want {
	if pl == SameProvider && r.WantSame != nil {
		return *r.WantSame
	}
	return r.Want
}

// Want is a row's expected outcome.
type Want struct {
	Outcome Outcome
	// Answer is "a" or "b": the target that answers (Answered, Cut), the
	// last request's when By is set.
	Answer string
	// By, when set, is who answers each of the row's requests in order,
	// space-separated ("a a a b b b"): for rows whose first requests
	// teach the router something the later ones must heed. Empty: every
	// request is answered by Answer.
	By string
	// Text, when set, is the (last) answer's text, exactly: nothing left
	// out and nothing twice.
	Text string
	// Dropped, when set, is what the answer must be marked as having
	// gone without ("1 malformed event"): the caller sees it degraded,
	// naming Dropped among what was dropped (router.Result; the gateway's
	// x-detour-degraded and x-detour-dropped, as trailers on a stream),
	// and so does the answering ledger line (degraded, dropped).
	Dropped string
	// LastA, when set, is the ledger status of A's last line, skips
	// included: skipped_quota when the last request passed A over for a
	// wall seen coming. ReasonA, when set, is a text that line's reason
	// must contain (the header, or the quota, that made the skip).
	LastA, ReasonA string
	// Status is the ledger status of the failure that ends a Cut stream,
	// or of A's last attempt when not empty otherwise.
	Status string
	// SendsA and SendsB are the sends each target receives, SendsM those
	// the Middle candidates receive together.
	SendsA, SendsB, SendsM int
	// MinTime and MaxTime bound the time until the request is answered
	// (for streams, until their end); 0 means no bound.
	MinTime, MaxTime time.Duration
	// Usage requires the answer to report its token usage.
	Usage bool
	// HTTPStatus is what a gateway answers when every candidate failed
	// (AllFailed): 429 when they were rate limited or out of quota, 503
	// for outages and rejected keys, 504 when they all stayed silent.
	HTTPStatus int
}

// Faults returns n copies of f: a fault on every send.
func Faults(f sim.Fault, n int) []sim.Fault {
	out := make([]sim.Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func fault(k sim.Kind) *sim.Fault { return &sim.Fault{Kind: k} }

// backstop is DefaultLimits with a max_duration of 30s: a row whose fault
// would hold an answer forever fails at it instead of hanging the suite.
var backstop = func() Limits {
	l := DefaultLimits
	l.MaxDuration = 30 * time.Second
	return l
}()

// Rows is the suite. The limits are DefaultLimits: header_timeout 10 s,
// first_token 15 s, idle_timeout 5 s, deadline 60 s, reserve 10 s; the
// budget is otherwise interactive (2 sends a target, backoff from 500 ms).
func Rows() []Row {
	return []Row{
		{Name: "429 with Retry-After 2s: one retry after the wait, the same target answers", Mode: Complete,
			A:    []sim.Fault{{Kind: sim.RateLimit, RetryAfter: 2 * time.Second}},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 2, MinTime: 2 * time.Second, MaxTime: 2500 * time.Millisecond}},
		{Name: "429 with no Retry-After on every try: at most 4 sends in 3s, the fallback answers", Mode: Complete,
			Every: fault(sim.RateLimit),
			Want:  Want{Outcome: Answered, Answer: "b", SendsA: 2, SendsB: 1, MaxTime: 3 * time.Second}},
		{Name: "500 once: the same target answers", Mode: Complete,
			A:    []sim.Fault{{Kind: sim.ServerError}},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 2, MaxTime: time.Second}},
		{Name: "503 on every try: the fallback answers within the budget", Mode: Complete,
			Every: fault(sim.Unavailable),
			Want:  Want{Outcome: Answered, Answer: "b", SendsA: 2, SendsB: 1, MaxTime: time.Second}},
		{Name: "503 on every try, streamed: the fallback answers", Mode: Stream,
			Every: fault(sim.Unavailable),
			Want:  Want{Outcome: Answered, Answer: "b", SendsA: 2, SendsB: 1, MaxTime: time.Second}},
		{Name: "reset before headers once: the same target answers", Mode: Complete,
			A:    []sim.Fault{{Kind: sim.Reset}},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 2, MaxTime: time.Second}},
		{Name: "no response at all: the fallback answers within header_timeout", Mode: Complete,
			Every: fault(sim.Hang),
			Want: Want{Outcome: Answered, Answer: "b", Status: "header_timeout", SendsA: 1, SendsB: 1,
				MinTime: 10 * time.Second, MaxTime: 10500 * time.Millisecond}},
		{Name: "no response at all, streamed: the fallback answers within header_timeout", Mode: Stream,
			Every: fault(sim.Hang),
			Want: Want{Outcome: Answered, Answer: "b", Status: "header_timeout", SendsA: 1, SendsB: 1,
				MinTime: 10 * time.Second, MaxTime: 10500 * time.Millisecond}},
		{Name: "first token after 20s: the fallback answers within first_token", Mode: Stream,
			Every: &sim.Fault{Kind: sim.LateFirstToken, Delay: 20 * time.Second},
			Want: Want{Outcome: Answered, Answer: "b", Status: "first_token_timeout", SendsA: 1, SendsB: 1,
				MinTime: 15 * time.Second, MaxTime: 15500 * time.Millisecond}},
		{Name: "first token after 20s, buffered: the fallback answers within first_token", Mode: Buffered,
			Every: &sim.Fault{Kind: sim.LateFirstToken, Delay: 20 * time.Second},
			Want: Want{Outcome: Answered, Answer: "b", Status: "first_token_timeout", SendsA: 1, SendsB: 1,
				MinTime: 15 * time.Second, MaxTime: 15500 * time.Millisecond}},
		{Name: "answer after 20s, not streamed: the fallback answers within header_timeout", Mode: Complete,
			Every: &sim.Fault{Kind: sim.SlowFirstToken, Delay: 20 * time.Second},
			Want: Want{Outcome: Answered, Answer: "b", Status: "header_timeout", SendsA: 1, SendsB: 1,
				MinTime: 10 * time.Second, MaxTime: 10500 * time.Millisecond}},
		{Name: "cut after 3 chunks, streamed: an explicit error, never spliced text", Mode: Stream,
			Every: &sim.Fault{Kind: sim.StreamCut, Chunks: 3},
			Want:  Want{Outcome: Cut, Answer: "a", Status: "net_truncated", SendsA: 1, MaxTime: time.Second}},
		{Name: "cut after 3 chunks on every try, buffered: the fallback's complete answer", Mode: Buffered,
			Every: &sim.Fault{Kind: sim.StreamCut, Chunks: 3},
			Want:  Want{Outcome: Answered, Answer: "b", SendsA: 2, SendsB: 1, MaxTime: time.Second}},
		{Name: "stall mid-stream: an error within idle_timeout", Mode: Stream,
			Every: &sim.Fault{Kind: sim.StreamStall, Chunks: 3},
			Want: Want{Outcome: Cut, Answer: "a", Status: "idle_timeout", SendsA: 1,
				MinTime: 5 * time.Second, MaxTime: 5500 * time.Millisecond}},
		{Name: "stall mid-stream, buffered: the fallback answers within idle_timeout", Mode: Buffered,
			Every: &sim.Fault{Kind: sim.StreamStall, Chunks: 3},
			Want: Want{Outcome: Answered, Answer: "b", Status: "idle_timeout", SendsA: 1, SendsB: 1,
				MinTime: 5 * time.Second, MaxTime: 5500 * time.Millisecond}},
		{Name: "body stalls after the headers, not streamed: the fallback answers within idle_timeout", Mode: Complete,
			Every: &sim.Fault{Kind: sim.StreamStall},
			Want: Want{Outcome: Answered, Answer: "b", Status: "idle_timeout", SendsA: 1, SendsB: 1,
				MinTime: 5 * time.Second, MaxTime: 5500 * time.Millisecond}},
		{Name: "malformed chunk mid-stream: an explicit error", Mode: Stream,
			Every: &sim.Fault{Kind: sim.StreamMalformed, Chunks: 3},
			Want:  Want{Outcome: Cut, Answer: "a", SendsA: 1, MaxTime: time.Second}},
		{Name: "malformed chunk then the end mid-stream, buffered: a cut, retried once, then the fallback answers", Mode: Buffered,
			Every: &sim.Fault{Kind: sim.StreamMalformed, Chunks: 3},
			Want:  Want{Outcome: Answered, Answer: "b", SendsA: 2, SendsB: 1, MaxTime: time.Second}},
		{Name: "stream with no [DONE]: the answer counts as complete", Mode: Stream,
			A:    []sim.Fault{{Kind: sim.NoDone}},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 1, MaxTime: time.Second, Usage: true}},
		{Name: "context overflow with a larger-context fallback: the fallback answers", Mode: Complete,
			Every: fault(sim.ContextOverflow), ContextA: 8192, ContextB: 131072,
			Want: Want{Outcome: Answered, Answer: "b", Status: "http_400", SendsA: 1, SendsB: 1, MaxTime: time.Second}},
		{Name: "content-filter refusal: fails closed, the fallback is never called", Mode: Complete,
			Every: fault(sim.ContentFilter),
			Want:  Want{Outcome: FailedClosed, SendsA: 1, MaxTime: time.Second}},
		{Name: "content-filter refusal, streamed: fails closed, the fallback is never called", Mode: Stream,
			Every: fault(sim.ContentFilter),
			Want:  Want{Outcome: FailedClosed, SendsA: 1, MaxTime: time.Second}},
		{Name: "cut where the fallback refuses a prefill, buffered: the fallback gets the request as asked", Mode: Buffered,
			Every: &sim.Fault{Kind: sim.StreamCut, Chunks: 3}, NoPrefill: true,
			Want: Want{Outcome: Answered, Answer: "b", SendsA: 2, SendsB: 1, MaxTime: time.Second}},
		{Name: "cut where the fallback refuses a prefill, streamed: an error, nothing sent on", Mode: Stream,
			Every: &sim.Fault{Kind: sim.StreamCut, Chunks: 3}, NoPrefill: true,
			Want: Want{Outcome: Cut, Answer: "a", Status: "net_truncated", SendsA: 1, MaxTime: time.Second}},
		{Name: "healthy long answer, 70 chunks 1s apart: never cut by the 60s deadline", Mode: Stream,
			A: []sim.Fault{{Kind: sim.OK, Pieces: 70, Gap: time.Second}},
			// The idle limit is not what this row tests: 15 gaps of room, so
			// a busy machine never makes a slow chunk look like a stall.
			Limits: Limits{HeaderTimeout: 10 * time.Second, FirstToken: 15 * time.Second, IdleTimeout: 15 * time.Second,
				Deadline: 60 * time.Second, Reserve: 10 * time.Second},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 1, MinTime: 69 * time.Second, MaxTime: 75 * time.Second, Usage: true}},
		{Name: "usage reported on a failed-over answer", Mode: Stream,
			Every: fault(sim.NoCredits),
			Want:  Want{Outcome: Answered, Answer: "b", Status: "http_402", SendsA: 1, SendsB: 1, MaxTime: time.Second, Usage: true}},
		{Name: "usage reported on a failed-over answer, not streamed", Mode: Complete,
			Every: fault(sim.NoCredits),
			Want:  Want{Outcome: Answered, Answer: "b", Status: "http_402", SendsA: 1, SendsB: 1, MaxTime: time.Second, Usage: true}},
		{Name: "every candidate rate limited: all failed after one retry each", Mode: Complete,
			Every: &sim.Fault{Kind: sim.RateLimit, RetryAfter: 2 * time.Second},
			B:     Faults(sim.Fault{Kind: sim.RateLimit, RetryAfter: 2 * time.Second}, 4),
			Want: Want{Outcome: AllFailed, HTTPStatus: 429, SendsA: 2, SendsB: 2,
				MinTime: 4 * time.Second, MaxTime: 4500 * time.Millisecond}},
		{Name: "every candidate silent: all failed as timed out", Mode: Complete,
			Every: fault(sim.Hang), B: Faults(sim.Fault{Kind: sim.Hang}, 2),
			Want: Want{Outcome: AllFailed, HTTPStatus: 504, Status: "header_timeout", SendsA: 1, SendsB: 1,
				MinTime: 20 * time.Second, MaxTime: 20500 * time.Millisecond}},
		{Name: "a rejected key: the account is parked, another provider answers", Mode: Complete,
			Every:    fault(sim.Unauthorized),
			Want:     Want{Outcome: Answered, Answer: "b", Status: "http_401", SendsA: 1, SendsB: 1, MaxTime: time.Second},
			WantSame: &Want{Outcome: AllFailed, HTTPStatus: 503, Status: "http_401", SendsA: 1, MaxTime: time.Second}},

		// Move on, don't wait (issue 31): a long wait while a candidate
		// remains is not a retry, and no upstream holds a request past
		// its limits.
		{Name: "429 with Retry-After 30s: parked, the next candidate answers at once, the next request skips it", Mode: Complete,
			A: []sim.Fault{{Kind: sim.RateLimit, RetryAfter: 30 * time.Second}}, Requests: 2,
			Want: Want{Outcome: Answered, Answer: "b", Status: "http_429", SendsA: 1, SendsB: 2, MaxTime: 500 * time.Millisecond}},
		{Name: "429 with Retry-After 30s, streamed: parked, the next candidate answers at once, the next request skips it", Mode: Stream,
			A: []sim.Fault{{Kind: sim.RateLimit, RetryAfter: 30 * time.Second}}, Requests: 2,
			Want: Want{Outcome: Answered, Answer: "b", Status: "http_429", SendsA: 1, SendsB: 2, MaxTime: 500 * time.Millisecond}},
		{Name: "first token after 20s from a model not known to reason: the fallback answers at the default 15s", Mode: Stream,
			Every: &sim.Fault{Kind: sim.LateFirstToken, Delay: 20 * time.Second}, RealTime: true,
			Limits: Limits{HeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second, Deadline: 60 * time.Second, Reserve: 10 * time.Second},
			Want: Want{Outcome: Answered, Answer: "b", Status: "first_token_timeout", SendsA: 1, SendsB: 1,
				MinTime: 15 * time.Second, MaxTime: 15500 * time.Millisecond}},
		{Name: "first token after 20s from a reasoning model: waited on by default", Mode: Stream,
			Every: &sim.Fault{Kind: sim.LateFirstToken, Delay: 20 * time.Second}, ReasoningA: true,
			Limits: Limits{HeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second, Deadline: 60 * time.Second, Reserve: 10 * time.Second},
			Want:   Want{Outcome: Answered, Answer: "a", SendsA: 1, MinTime: 20 * time.Second, MaxTime: 20500 * time.Millisecond}},
		{Name: "[hang, hang, hang, ok]: ok answers within the deadline", Mode: Complete,
			Every: fault(sim.Hang), Middle: []sim.Fault{{Kind: sim.Hang}, {Kind: sim.Hang}},
			// header_timeout at its default: the first silent target has
			// 30s, the second the 20s left less the reserve, the third
			// half the 10s reserve, ok the other half.
			Limits: Limits{HeaderTimeout: 30 * time.Second, FirstToken: 15 * time.Second, IdleTimeout: 5 * time.Second,
				Deadline: 60 * time.Second, Reserve: 10 * time.Second},
			Want: Want{Outcome: Answered, Answer: "b", Status: "header_timeout", SendsA: 1, SendsM: 2, SendsB: 1,
				MinTime: 55 * time.Second, MaxTime: 55500 * time.Millisecond}},
		{Name: "empty deltas forever before any output, streamed: the fallback answers at first_token", Mode: Stream,
			Every: &sim.Fault{Kind: sim.EmptyDeltas, Chunks: 1, Gap: time.Second},
			Want: Want{Outcome: Answered, Answer: "b", Status: "first_token_timeout", SendsA: 1, SendsB: 1,
				MinTime: 15 * time.Second, MaxTime: 15500 * time.Millisecond}},
		{Name: "empty deltas forever after the first words, buffered: the fallback answers at idle_timeout", Mode: Buffered,
			// Output at 1s and 2s, then an empty delta every second. The
			// 30s max_duration is a backstop: a stream held by the empty
			// deltas ends there, late, rather than never.
			Every:  &sim.Fault{Kind: sim.EmptyDeltas, Chunks: 3, Gap: time.Second},
			Limits: backstop,
			Want: Want{Outcome: Answered, Answer: "b", Status: "idle_timeout", SendsA: 1, SendsB: 1,
				MinTime: 7 * time.Second, MaxTime: 7500 * time.Millisecond}},
		{Name: "empty deltas forever after the first words, streamed: an error at idle_timeout", Mode: Stream,
			Every:  &sim.Fault{Kind: sim.EmptyDeltas, Chunks: 3, Gap: time.Second},
			Limits: backstop,
			Want: Want{Outcome: Cut, Answer: "a", Status: "idle_timeout", SendsA: 1,
				MinTime: 7 * time.Second, MaxTime: 7500 * time.Millisecond}},
		{Name: "body trickling one byte every 500ms, not streamed: the fallback answers at the deadline less the reserve", Mode: Complete,
			Every: &sim.Fault{Kind: sim.Trickle, Gap: 500 * time.Millisecond},
			Want: Want{Outcome: Answered, Answer: "b", Status: "deadline", SendsA: 1, SendsB: 1,
				MinTime: 50 * time.Second, MaxTime: 50500 * time.Millisecond}},

		// See the wall before you hit it (issue 31): what a provider's
		// rate-limit headers say, and what the config declares, keep a
		// request from a target that must refuse it; it goes to the next
		// candidate at once, and the skip is on A's ledger line.
		{Name: "200 with requests left 0: parked until the reset, the next request goes to the next candidate, no send to A", Mode: Complete,
			A: []sim.Fault{{Kind: sim.OK, Header: requestsLeftZero}}, Requests: 2,
			Want: Want{Outcome: Answered, By: "a b", Answer: "b", SendsA: 1, SendsB: 1, MaxTime: 500 * time.Millisecond,
				LastA: ledger.StatusSkippedQuota, ReasonA: "x-ratelimit-remaining-requests: 0"}},
		{Name: "200 with requests left 0, streamed: parked until the reset, the next request goes to the next candidate, no send to A", Mode: Stream,
			A: []sim.Fault{{Kind: sim.OK, Header: requestsLeftZero}}, Requests: 2,
			Want: Want{Outcome: Answered, By: "a b", Answer: "b", SendsA: 1, SendsB: 1, MaxTime: 500 * time.Millisecond,
				LastA: ledger.StatusSkippedQuota, ReasonA: "x-ratelimit-remaining-requests: 0"}},
		{Name: "fewer tokens left than the next request needs: A skipped for it, the next candidate answers", Mode: Complete,
			A: []sim.Fault{{Kind: sim.OK, Header: tokensLeftFew}}, Requests: 2,
			Want: Want{Outcome: Answered, By: "a b", Answer: "b", SendsA: 1, SendsB: 1, MaxTime: 500 * time.Millisecond,
				LastA: ledger.StatusSkippedQuota, ReasonA: "x-ratelimit-remaining-tokens: 20"}},
		{Name: "rpm 3 declared, six requests in a row: three sends to A, no 429, the next candidate answers the rest", Mode: Complete,
			// A enforces its rpm as a real provider would: a fourth send in
			// the minute would meet a 429 (and show as A's last status).
			QuotaA: router.Limits{RPM: 3}, Requests: 6,
			A: append(Faults(sim.Fault{Kind: sim.OK}, 3), Faults(sim.Fault{Kind: sim.RateLimit, RetryAfter: time.Minute}, 3)...),
			Want: Want{Outcome: Answered, By: "a a a b b b", Answer: "b", Status: ledger.StatusOK, SendsA: 3, SendsB: 3,
				MaxTime: 500 * time.Millisecond, LastA: ledger.StatusSkippedQuota, ReasonA: QuotaSourceA + " rpm 3 of 3 requests used"}},
		{Name: "context overflow, the fallback declares no window: the fallback answers", Mode: Complete,
			Every: fault(sim.ContextOverflow), ContextA: 8192,
			Want: Want{Outcome: Answered, Answer: "b", Status: "http_400", SendsA: 1, SendsB: 1, MaxTime: time.Second}},
		{Name: "one malformed event mid-stream, streamed: left out, the answer complete and marked degraded", Mode: Stream,
			Every: &sim.Fault{Kind: sim.StreamMalformedEvent, Chunks: 3},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 1, MaxTime: time.Second, Usage: true,
				Text: answerA, Dropped: "1 malformed event"}},
		{Name: "one malformed event mid-stream, buffered: left out, the answer complete and marked degraded", Mode: Buffered,
			Every: &sim.Fault{Kind: sim.StreamMalformedEvent, Chunks: 3},
			Want: Want{Outcome: Answered, Answer: "a", SendsA: 1, MaxTime: time.Second, Usage: true,
				Text: answerA, Dropped: "1 malformed event"}},
	}
}

// answerA is A's whole answer, as the simulator writes it.
const answerA = "Hello from " + ProviderA + "/" + ModelA + "."

// requestsLeftZero are the headers of an answer after which no request
// is left until a reset 30 s away; tokensLeftFew those of one after which
// 20 tokens are left, fewer than any request of the suite needs (its
// max_tokens is 64).
var (
	requestsLeftZero = http.Header{"X-Ratelimit-Limit-Requests": {"30"}, "X-Ratelimit-Remaining-Requests": {"0"},
		"X-Ratelimit-Reset-Requests": {"30s"}}
	tokensLeftFew = http.Header{"X-Ratelimit-Limit-Tokens": {"6000"}, "X-Ratelimit-Remaining-Tokens": {"20"},
		"X-Ratelimit-Reset-Tokens": {"20s"}}
)

// Outage is the flapping scenario: A answers Unavailable on every send
// from the start until Down has passed, then OK; one request every Every,
// Requests in all. Every request must be answered, and A gets at most one
// send per open window of its breaker (OpenFor): the first request may
// retry it once and the next trips the breaker, then only probes reach it.
type Outage struct {
	Down, Every time.Duration
	Requests    int
	// OpenFor and FailureThreshold are the breaker's settings.
	OpenFor          time.Duration
	FailureThreshold int
}

// DefaultOutage is A down for 60 s with a request every 4 s.
var DefaultOutage = Outage{Down: 60 * time.Second, Every: 4 * time.Second, Requests: 20,
	OpenFor: 10 * time.Second, FailureThreshold: 3}

// Observed is what a runner saw of one row's request.
type Observed struct {
	Outcome Outcome
	// Answer is "a" or "b" when a target answered (or started a cut
	// stream), Text the answer's text as it reached the caller.
	Answer, Text string
	// By is who answered each request in order (Combine fills it).
	By []string
	// Degraded and Dropped are what the caller was told of the answer:
	// degraded, and what it went without.
	Degraded bool
	Dropped  []string
	// LedgerDegraded and LedgerDropped are what the last answer's ledger
	// line (status ok) says of it.
	LedgerDegraded bool
	LedgerDropped  []string
	// Usage is set when the answer reported tokens in and out.
	Usage bool
	// Took is the time until the answer ended (or the error came).
	Took time.Duration
	// HTTPStatus is the status a gateway client got for a request that
	// got no answer; a router runner gives the one its Exhaustion stands
	// for.
	HTTPStatus int
	// SendsA and SendsB are the sends each target received, SendsM those
	// the Middle candidates received together.
	SendsA, SendsB, SendsM int
	// StatusA is the ledger status of A's last send.
	StatusA string
	// LastA and ReasonA are the status and reason of A's last ledger
	// line, skips included.
	LastA, ReasonA string
	// LastRoles are the roles the providers' requests ended with.
	LastRoles []string
}

// Check returns how o differs from w, one line each; none when it holds.
// Time bounds are multiplied by scale, and slack is added to the upper
// one (what real HTTP and busy cores may add).
func (w Want) Check(o Observed, scale float64, slack time.Duration) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if o.Outcome != w.Outcome {
		add("outcome %q (answer %q), want %q", o.Outcome, o.Answer, w.Outcome)
		return bad
	}
	if w.Outcome == Answered || w.Outcome == Cut {
		if o.Answer != w.Answer {
			add("answered by %q, want %q", o.Answer, w.Answer)
		}
		want := w.By
		if want == "" {
			want = strings.TrimSuffix(strings.Repeat(w.Answer+" ", len(o.By)), " ")
		}
		if got := strings.Join(o.By, " "); got != want {
			add("the requests were answered by %q in turn, want %q", got, want)
		}
	}
	if w.Text != "" && o.Text != w.Text {
		add("answer %q, want exactly %q", o.Text, w.Text)
	}
	if w.Dropped != "" {
		if !o.Degraded || !slices.Contains(o.Dropped, w.Dropped) {
			add("the caller was told degraded %v, dropped %q; want degraded, dropped naming %q", o.Degraded, o.Dropped, w.Dropped)
		}
		if !o.LedgerDegraded || !slices.Contains(o.LedgerDropped, w.Dropped) {
			add("the answer's ledger line says degraded %v, dropped %q; want degraded, dropped naming %q",
				o.LedgerDegraded, o.LedgerDropped, w.Dropped)
		}
	}
	if w.LastA != "" && o.LastA != w.LastA {
		add("A's last ledger line %q (%s), want %q", o.LastA, o.ReasonA, w.LastA)
	}
	if w.ReasonA != "" && !strings.Contains(o.ReasonA, w.ReasonA) {
		add("A's last ledger line's reason %q does not name %q", o.ReasonA, w.ReasonA)
	}
	if o.SendsA != w.SendsA || o.SendsB != w.SendsB || o.SendsM != w.SendsM {
		add("sends A %d, B %d, middle %d; want %d, %d, %d", o.SendsA, o.SendsB, o.SendsM, w.SendsA, w.SendsB, w.SendsM)
	}
	at := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	if w.MinTime > 0 && o.Took < at(w.MinTime)-at(10*time.Millisecond) {
		add("took %s, want at least %s", o.Took, at(w.MinTime))
	}
	if w.MaxTime > 0 && o.Took > at(w.MaxTime)+slack {
		add("took %s, want at most %s", o.Took, at(w.MaxTime)+slack)
	}
	if w.Status != "" && o.StatusA != w.Status {
		add("A's last status %q, want %q", o.StatusA, w.Status)
	}
	if w.HTTPStatus != 0 && o.HTTPStatus != w.HTTPStatus {
		add("HTTP status %d, want %d", o.HTTPStatus, w.HTTPStatus)
	}
	if w.Usage && !o.Usage {
		add("the answer reports no usage")
	}
	switch o.Outcome {
	case Answered:
		if want := map[string]string{"a": ModelA, "b": ModelB}[o.Answer]; !strings.Contains(o.Text, want) {
			add("answer %q does not come from %s", o.Text, want)
		}
	case Cut:
		if strings.Contains(o.Text, ModelB) {
			add("a cut stream carries B's text: %q", o.Text)
		}
	}
	for _, r := range o.LastRoles {
		if r != "" && r != "user" {
			add("a provider received a conversation ending with %q: partial text sent on as a prefill", r)
		}
	}
	return bad
}

// Lines writes a ledger, one line a record, for a failed row's log.
func Lines(recs []ledger.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, fmt.Sprintf("ledger: %s/%s #%d %s %s %s %s wait %.3fs: %s", r.Provider, r.Model, r.Attempt,
			r.Status, r.Kind, r.Scope, r.Action, r.WaitSeconds, r.Reason))
	}
	return out
}

// Combine returns what a runner saw of a row's requests, obs in order,
// as one Observed: the outcome they share (an outcome that names the
// first request that differs, when one does), who answered each (By;
// Want.Check compares them), the longest time, and the rest from the
// last request.
func Combine(obs []Observed) Observed {
	o, mixed := obs[len(obs)-1], false
	o.By = nil
	for i, x := range obs {
		o.Took = max(o.Took, x.Took)
		o.By = append(o.By, x.Answer)
		if !mixed && x.Outcome != obs[0].Outcome {
			o.Outcome, mixed = Outcome(fmt.Sprintf("mixed: request 1 %s by %q, request %d %s by %q",
				obs[0].Outcome, obs[0].Answer, i+1, x.Outcome, x.Answer)), true
		}
	}
	return o
}

// Observe fills o's sends, A's last status and line, the last answer's
// ledger line and the last roles from what the providers received and
// the ledger, in placement pl.
func Observe(o *Observed, st sim.Stats, recs []ledger.Record, pl Placement) {
	o.SendsA = st.Requests(ProviderA, ModelA)
	o.SendsB = st.Requests(ProviderB(pl), ModelB)
	for i := range maxMiddle {
		o.SendsM += st.Requests(ProviderA, MiddleModel(i))
	}
	for _, r := range recs {
		if r.Model == ModelA && r.Action != string(policy.Skip) {
			o.StatusA = r.Status
		}
		if r.Provider == ProviderA && r.Model == ModelA {
			o.LastA, o.ReasonA = r.Status, r.Reason
		}
		if r.Status == ledger.StatusOK {
			o.LedgerDegraded, o.LedgerDropped = r.Degraded, r.Dropped
		}
	}
	for _, r := range st.Records {
		o.LastRoles = append(o.LastRoles, r.LastRole)
	}
}
