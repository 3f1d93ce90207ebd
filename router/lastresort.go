package router

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// The targets that stand for the last resort in a Result and the ledger.
var (
	cacheTarget  = &Target{Provider: "detour", Model: "cache", Family: "detour-last-resort"}
	staticTarget = &Target{Provider: "detour", Model: "static", Family: "detour-last-resort"}
)

// The defaults of Router.KeptAnswers. A kept answer is a last resort
// for a request sent again word for word (keyed by a hash of it), so a
// thousand cover the repeated requests of a busy route (health checks,
// canned prompts); 32 MiB leaves each 32 KiB on average, more than a
// long chat answer's JSON, and is what a small instance can spare. Past
// either, the answers that expire soonest go first: a request whose
// answer was evicted gets the route's static answer, or its failure.
const (
	DefaultKeptAnswers     = 1000
	DefaultKeptAnswerBytes = 32 << 20
)

// keptAnswers returns the ceiling of kept answers.
func (r *Router) keptAnswers() health.Ceiling {
	if r.KeptAnswers != nil {
		return r.KeptAnswers()
	}
	return health.Ceiling{Count: DefaultKeptAnswers, Bytes: DefaultKeptAnswerBytes}
}

// keptAnswer is what the records hold for one request's kept answer.
type keptAnswer struct {
	At       time.Time     `json:"at"`
	Target   string        `json:"target"`
	Response *llm.Response `json:"response"`
}

// records returns where kept answers go: the breaker's store when it keeps
// records (shared by replicas), else this router's memory.
func (r *Router) records() health.Records {
	if rec := r.health().RecordsOf(); rec != nil {
		return rec
	}
	return r.defaultRecords
}

// answerKey is the records key of req's kept answer on the walk's route.
func (w *walk) answerKey(req *llm.Request) (string, bool) {
	d, ok := requestDigest(w.route.Name, req)
	return "answer:" + d, ok
}

// requestDigest is a hash of everything in req that shapes an answer on
// route (not whether it streams, nor the raw body's form).
func requestDigest(route string, req *llm.Request) (string, bool) {
	c := *req
	c.Model, c.Stream, c.Raw, c.Needs, c.Require = "", false, nil, nil, nil
	b, err := json.Marshal(&c)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(append([]byte(route+"\x00"), b...))
	return hex.EncodeToString(sum[:]), true
}

// keepAnswer keeps res's answer for the route's CacheAnswers, within the
// router's ceiling of kept answers (one over it is not kept).
func (w *walk) keepAnswer(req *llm.Request, res *Result) {
	if w.route.CacheAnswers <= 0 || res.Response == nil {
		return
	}
	key, ok := w.answerKey(req)
	if !ok {
		return
	}
	b, err := json.Marshal(keptAnswer{At: w.clk.Now(), Target: res.Target.ID(), Response: res.Response})
	if err == nil {
		// A lost answer costs a last resort, no more.
		if n, _ := w.r.records().Keep(key, b, w.route.CacheAnswers, w.r.keptAnswers()); n > 0 && w.r.OnEvict != nil {
			w.r.OnEvict(n)
		}
	}
}

// lastResort answers a request whose every candidate failed (err wraps
// ErrAllFailed) with a kept answer or the route's static one, recorded in
// the ledger; nil when the route has neither (or err is another failure).
func (w *walk) lastResort(req *llm.Request, err error) *Result {
	if !errors.Is(err, ErrAllFailed) || (w.route.CacheAnswers <= 0 && w.route.StaticAnswer == "") {
		return nil
	}
	if w.route.CacheAnswers > 0 {
		if key, ok := w.answerKey(req); ok {
			if b, found, _ := w.r.records().Get(key); found {
				var k keptAnswer
				if json.Unmarshal(b, &k) == nil && k.Response != nil {
					return w.resort(cacheTarget, k.Response, "every candidate failed: the answer "+k.Target+
						" gave to the same request at "+k.At.UTC().Format(time.RFC3339))
				}
			}
		}
	}
	if w.route.StaticAnswer == "" {
		return nil
	}
	resp := &llm.Response{Model: "static", Message: llm.Message{Role: llm.RoleAssistant, Content: w.route.StaticAnswer},
		FinishReason: llm.FinishStop}
	return w.resort(staticTarget, resp, "every candidate failed: the route's static answer")
}

// resort records the last resort t answering with resp and returns its
// Result: degraded, at no cost.
func (w *walk) resort(t *Target, resp *llm.Response, reason string) *Result {
	w.record(Attempt{Target: t, Hop: w.count.hops, Failover: true, Status: ledger.StatusLastResort,
		Action: policy.Static, Phase: policy.PhaseCommitted, Reason: reason, Model: resp.Model, Degraded: true})
	return &Result{RequestID: w.ask.id, Response: resp, Target: t, Attempts: w.attempts, Degraded: true,
		Phase: policy.PhaseCommitted}
}
