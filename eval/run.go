package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/time/rate"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/grade"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// ErrGraders means a grader of the suite passes one of its task's
// known-bad answers or fails a known-good one: the run did not start.
var ErrGraders = errors.New("the suite's graders disagree with their known answers")

// GraderError is the refusal to measure with graders that are wrong: each
// Problem names the task, the answer and what the grader said.
type GraderError struct {
	Problems []grade.Problem
}

func (e *GraderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d grader problem(s); fix the suite before measuring:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrGraders) hold.
func (e *GraderError) Unwrap() error { return ErrGraders }

// Runner measures targets on a suite: every target x task x repetition,
// each target through the router as itself (no fallback; the router's
// retries on the target stay), every call in the ledger and one line in
// the results file. A call the file already holds is not made again.
type Runner struct {
	// Router sends the calls; its ledger records every attempt.
	Router *router.Router
	// Suite is what is measured.
	Suite *grade.Suite
	// Targets are one route per target, each of one target
	// (config.TargetRoute).
	Targets []*router.Route
	// Reps is the repetitions of each task per target; 0 means 1.
	Reps int
	// Concurrency is the calls in flight at once; 0 means 4.
	Concurrency int
	// RPM caps the calls a minute per provider name; absent or 0: none.
	RPM map[string]float64
	// Env is what graders need (a judge route).
	Env grade.Env
	// Clock tells the time calls are timed by; nil means the wall clock.
	Clock clock.Clock
	// Progress, when set, is called after each call with the counts so
	// far (from one goroutine at a time).
	Progress func(Progress)
}

// Progress is how far a run is.
type Progress struct {
	// Total is the calls of the run, Done those made (Skipped of them were
	// in the results file already and not made again).
	Total, Done, Skipped int
	// Errors counts calls that got no answer; Ungraded answers a grader
	// could not grade (not written: a rerun makes them again).
	Errors, Ungraded int
	// Warning is the last grader failure, when Ungraded > 0.
	Warning string
}

// job is one call to make.
type job struct {
	route *router.Route
	task  *grade.Task
	rep   int
}

// Check runs every grader of the suite on its known answers; a
// *GraderError when one disagrees. Run calls it first.
func (r *Runner) Check(ctx context.Context) error {
	if probs := r.Suite.Check(ctx, r.Env); len(probs) > 0 {
		return &GraderError{Problems: probs}
	}
	return nil
}

// Run checks the graders, then makes every call out does not hold yet,
// appending each result as it comes. It returns when every call is made
// or ctx ends (the calls in flight then go unwritten).
func (r *Runner) Run(ctx context.Context, out *evalresults.File) (Progress, error) {
	if err := r.Check(ctx); err != nil {
		return Progress{}, err
	}
	for _, rt := range r.Targets {
		if len(rt.Chain) != 1 {
			return Progress{}, fmt.Errorf("eval: route %q has %d targets; measure one target per route", rt.Name, len(rt.Chain))
		}
	}
	r.Router.Init() // before the workers share it
	reps := max(r.Reps, 1)
	digest := r.Suite.Digest()
	var jobs []job
	p := Progress{}
	// Repetition, then task, then target: providers take turns, and an
	// early stop leaves every target measured on the same tasks.
	for rep := 1; rep <= reps; rep++ {
		for _, task := range r.Suite.Tasks {
			for _, rt := range r.Targets {
				p.Total++
				if out.Has(digest, rt.Chain[0].ID(), task.ID, rep) {
					p.Done++
					p.Skipped++
					continue
				}
				jobs = append(jobs, job{route: rt, task: task, rep: rep})
			}
		}
	}
	if r.Progress != nil {
		r.Progress(p)
	}
	limits := r.limiters()
	ch := make(chan job)
	var mu sync.Mutex // guards p, firstErr and the calls of Progress
	var firstErr error
	var wg sync.WaitGroup
	n := r.Concurrency
	if n <= 0 {
		n = 4
	}
	for range n {
		wg.Go(func() {
			for j := range ch {
				rec, graded, err := r.call(ctx, limits, digest, j)
				if err == nil && graded {
					err = out.Append(rec)
				}
				mu.Lock()
				switch {
				case err != nil && firstErr == nil && ctx.Err() == nil:
					firstErr = err
				case err == nil && !graded:
					p.Ungraded++
					p.Warning = rec.Why
				case err == nil:
					p.Done++
					if rec.Outcome == evalresults.Error {
						p.Errors++
					}
				}
				if r.Progress != nil && err == nil {
					r.Progress(p)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, j := range jobs {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		select {
		case ch <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if firstErr != nil {
		return p, firstErr
	}
	return p, ctx.Err()
}

// limiters makes one limiter per provider with a rate.
func (r *Runner) limiters() map[string]*rate.Limiter {
	m := map[string]*rate.Limiter{}
	for p, rpm := range r.RPM {
		if rpm > 0 {
			m[p] = rate.NewLimiter(rate.Limit(rpm/60), 1)
		}
	}
	return m
}

// call makes one call and grades its answer. graded is false when the
// answer could not be graded (a judge that failed): nothing is written.
// err is an error of the run (a cancelled context), not of the call.
func (r *Runner) call(ctx context.Context, limits map[string]*rate.Limiter, digest string, j job) (rec evalresults.Record, graded bool, err error) {
	t := &j.route.Chain[0]
	if l := limits[t.Provider]; l != nil {
		if err := l.Wait(ctx); err != nil {
			return rec, false, err
		}
	}
	clk := clock.Or(r.Clock)
	rec = evalresults.Record{Suite: r.Suite.Name, Digest: digest, Target: t.ID(), Task: j.task.ID, Rep: j.rep, Time: clk.Now().UTC()}
	req := &llm.Request{MaxTokens: j.task.MaxTokens}
	if j.task.System != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: j.task.System})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: j.task.Prompt})
	res, cerr := r.Router.Complete(ctx, j.route, req, router.Options{NoFallback: true})
	rec.MS = clk.Now().Sub(rec.Time).Milliseconds()
	if ctx.Err() != nil {
		return rec, false, ctx.Err()
	}
	if res != nil {
		rec.RequestID = res.RequestID
	}
	if cerr != nil {
		rec.Outcome, rec.Why = evalresults.Error, oneLine(cerr.Error(), 300)
		var re *router.Error
		if errors.As(cerr, &re) {
			rec.RequestID = re.RequestID
			rec.Kind = string(re.Kind)
		}
		return rec, true, nil
	}
	resp := res.Response
	rec.Model, rec.TokensIn, rec.TokensOut = resp.Model, resp.Usage.InputTokens, resp.Usage.OutputTokens
	rec.Cost = t.Cost(resp.Usage)
	rec.Answer = cut(resp.Message.Content, evalresults.MaxAnswer)
	if resp.FinishReason == llm.FinishLength {
		rec.Outcome = evalresults.Truncated
		return rec, true, nil
	}
	v, gerr := j.task.Grade(ctx, r.Env, resp.Message.Content)
	if gerr != nil {
		rec.Why = fmt.Sprintf("%s on %s: could not grade: %s", t.ID(), j.task.ID, oneLine(gerr.Error(), 200))
		return rec, false, nil
	}
	rec.Outcome = evalresults.Wrong
	if v.Pass {
		rec.Outcome = evalresults.Correct
	}
	rec.Why = v.Why
	return rec, true, nil
}

// oneLine returns s on one line, cut to n bytes.
func oneLine(s string, n int) string {
	return cut(strings.Join(strings.Fields(s), " "), n)
}

// cut returns s cut to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
