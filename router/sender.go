package router

import (
	"context"
	"fmt"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// A sender makes a walk's sends of one kind: whole answers (plainSender,
// for Complete), streams (streamSender, for Stream) or vectors
// (embedSender, for Embed). All that differs between the three is here,
// so that the walk never asks which kind of request it carries.
type sender interface {
	// shape returns the request t would be sent (nil: the walk's own, as
	// it came) and what t would go without, or why t cannot honour the
	// request at all (it is then skipped, skipped_contract).
	shape(w *walk, t *Target) (req *llm.Request, dropped []string, why string)
	// usage is what a send of req to t would bill, by estimate, for the
	// cost ceilings.
	usage(req *llm.Request, t *Target) llm.Usage
	// send makes one send of req to t under lim. resp is the answer when
	// it came whole, nil when the sender keeps what came (a stream open
	// to its first output); headers reports that the response's status
	// came.
	send(ctx context.Context, w *walk, t *Target, req *llm.Request, lim limits) (resp *llm.Response, headers bool, err error)
	// phase is how far a failed send got (see failedPhase).
	phase(err error, f classify.Failure, headers bool) policy.Phase
	// answered completes res, the Result of the send a (its permits p)
	// that answered (resp, when whole), and records the attempt: now, or
	// when its stream ends.
	answered(w *walk, a Attempt, p permits, resp *llm.Response, res *Result) *Result
}

// chatRequests are the shape and cost of a chat request, whole or
// streamed: the contract (contract, fitted) and estimate.
type chatRequests struct{}

func (chatRequests) shape(w *walk, t *Target) (*llm.Request, []string, string) {
	req := w.ask.req
	missing, dropped := contract(t, req, w.route)
	if len(missing) > 0 {
		return nil, nil, contractReason(t, missing)
	}
	out, did, ok := fitted(req, t, w.route)
	switch {
	case !ok:
		in, _ := fit.Estimate(req, t.ModelFamily())
		return nil, nil, contractReason(t, []string{fmt.Sprintf("about %d input tokens even adapted by routes.%s.adapt (its context is %d)",
			in, w.route.Name, t.Context)})
	case out != req:
		// The adapted request goes by its fields: the client's raw body
		// still holds the whole history.
		out.Raw = nil
		return out, append(dropped, did...), ""
	}
	return nil, dropped, ""
}

func (chatRequests) usage(req *llm.Request, t *Target) llm.Usage { return estimate(req, t) }

// plainSender sends for Complete: each send is answered whole.
type plainSender struct{ chatRequests }

// send sends one non-streamed attempt under its limits.
func (*plainSender) send(ctx context.Context, _ *walk, t *Target, req *llm.Request, lim limits) (*llm.Response, bool, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wt := newWatch(cancel, lim, false)
	resp, err := t.Client.Complete(llm.WithProgress(actx, wt), req)
	wt.stop()
	return resp, wt.heard(), wt.explain(err)
}

func (*plainSender) phase(err error, f classify.Failure, headers bool) policy.Phase {
	return failedPhase(err, f, false, headers)
}

func (*plainSender) answered(w *walk, a Attempt, p permits, resp *llm.Response, res *Result) *Result {
	return w.whole(a, p, resp, res)
}

// streamSender sends for Stream: each send opens a stream, read to its
// first output (see openStream); the one that got there is the caller's.
type streamSender struct {
	chatRequests
	// stream is the stream that reached its first output, once one did.
	stream *routedStream
}

// send opens t's stream under lim and the route's first-token limit for t.
func (s *streamSender) send(ctx context.Context, w *walk, t *Target, req *llm.Request, lim limits) (*llm.Response, bool, error) {
	lim.firstToken = w.route.FirstTokenFor(t)
	st, headers, err := w.openStream(ctx, t, req, lim)
	if err == nil {
		s.stream = st
	}
	return nil, headers, err
}

func (*streamSender) phase(err error, f classify.Failure, headers bool) policy.Phase {
	return failedPhase(err, f, true, headers)
}

// answered hands the stream its attempt: its record is written when it
// ends.
func (s *streamSender) answered(w *walk, a Attempt, p permits, _ *llm.Response, res *Result) *Result {
	st := s.stream
	st.attempt, st.permits, st.start, st.res = a, p, a.Start, res
	w.held = nil // the stream settles what the send holds, as it ends
	st.dropped = res.Dropped
	st.noteSkipped()
	// What the headers said is known now, before the stream ends: the
	// next request weighs it at once. A park it makes leaves the stream's
	// permits stale, so the stream's success does not undo it.
	w.heed(a.Target, llm.RateLimitOf(st.inner), a.Start.Add(a.Duration))
	res.Phase = policy.PhaseSent // until output reaches the caller
	res.Attempts = w.attempts
	return res
}

// embedSender sends for Embed: each send asks for the vectors of the
// request's input, kept once one answers.
type embedSender struct {
	req *llm.EmbedRequest
	// family is the model family of the walk's first candidate: the only
	// family the request may be answered by.
	family string
	// vectors are the answer, once a target gave one.
	vectors *llm.EmbedResponse
}

func (s *embedSender) shape(w *walk, t *Target) (*llm.Request, []string, string) {
	if missing := s.missing(w, t); len(missing) > 0 {
		return nil, nil, embedReason(t, missing)
	}
	return nil, nil, ""
}

// usage is estimate's: an embeddings request has no output.
func (*embedSender) usage(req *llm.Request, t *Target) llm.Usage {
	u := estimate(req, t)
	u.OutputTokens = 0
	return u
}

func (s *embedSender) send(ctx context.Context, w *walk, t *Target, _ *llm.Request, lim limits) (*llm.Response, bool, error) {
	return s.embed(ctx, t, lim)
}

func (*embedSender) phase(err error, f classify.Failure, headers bool) policy.Phase {
	return failedPhase(err, f, false, headers)
}

func (*embedSender) answered(w *walk, a Attempt, p permits, resp *llm.Response, res *Result) *Result {
	return w.whole(a, p, resp, res)
}

// whole records the send a (its permits p) that answered with resp, a
// whole answer, and completes res with it.
func (w *walk) whole(a Attempt, p permits, resp *llm.Response, res *Result) *Result {
	t := a.Target
	end := a.Start.Add(a.Duration)
	w.done(t, p, "", health.Outcome{}, end)
	w.used(p, resp.Usage)
	w.heed(t, resp.RateLimit, end) // after done: a park it makes is not undone by the success
	a.Status, a.Action, a.Phase, a.Usage = ledger.StatusOK, policy.Return, policy.PhaseCommitted, resp.Usage
	a.RateLimit, a.ProviderRequestID = resp.RateLimit, resp.ProviderRequestID
	a.Cost = t.Cost(resp.Usage)
	if resp.Model == "" {
		resp.Model = t.Model
	}
	a.Model = resp.Model
	skippedWhole(&a, res, resp)
	w.record(a)
	res.Response, res.Attempts = resp, w.attempts
	return res
}
