package router

import (
	"context"
	"errors"
	"strings"

	"github.com/detourhq/detour/llm"
)

// EmbedResult is an answered embeddings request: the walk's Result (the
// target that answered, every attempt and skip, whether it was degraded)
// and the vectors. Result.Response holds the answer's model and usage,
// and no message.
type EmbedResult struct {
	*Result
	// Embeddings are the vectors, one per input, from Result.Target.
	Embeddings *llm.EmbedResponse
}

// Embed sends req down route's chain as Complete does, with the same
// classification, retries, parks, budget, ledger (one record per attempt
// and skip) and errors, and returns the first target's vectors that
// answered. Vectors of different models do not mix: the request fails
// over only to targets of the model family of its first candidate (the
// chain's head, or Options.Start's), whatever the route allows; a target
// of another family is skipped (skipped_contract, its reason naming both
// families), and so is a target whose client cannot embed (no
// llm.Embedder: "cannot embed"). A route with StaticAnswer or
// CacheAnswers gets no last resort for embeddings, and
// Options.IdempotencyKey is refused: an embeddings request is safe to
// send again.
func (r *Router) Embed(ctx context.Context, route *Route, req *llm.EmbedRequest, opts Options) (*EmbedResult, error) {
	if opts.IdempotencyKey != "" {
		return nil, errors.New("router: an idempotency key is for Complete: embeddings are safe to send again")
	}
	if req == nil || len(req.Input) == 0 {
		return nil, llm.ErrNoInput
	}
	es := &embedSender{req: req}
	w, err := r.newWalk(route, opts, es)
	if err != nil {
		return nil, err
	}
	es.family = w.chain.cands[0].ModelFamily()
	stand := embedStandIn(req)
	w.startTrace(ctx, stand, TraceRequest{Embed: true})
	res, err := w.run(ctx, stand)
	if err != nil {
		w.endTrace(nil, err)
		return nil, err
	}
	w.endTrace(res, nil)
	return &EmbedResult{Result: res, Embeddings: es.vectors}, nil
}

// embedStandIn is the chat-shaped stand-in of req the walk's cost
// estimates and trace read: one user message per input, so that the
// input's size is counted as a prompt's is.
func embedStandIn(req *llm.EmbedRequest) *llm.Request {
	out := &llm.Request{Model: req.Model, Messages: make([]llm.Message, len(req.Input))}
	for i, s := range req.Input {
		out.Messages[i] = llm.Message{Role: llm.RoleUser, Content: s}
	}
	return out
}

// missing is why t may not answer the walk's embeddings request: its
// client cannot embed, it is of another model family than the first
// candidate, or it does not offer what the route requires.
func (s *embedSender) missing(w *walk, t *Target) []string {
	var out []string
	if _, ok := t.Client.(llm.Embedder); !ok && t.Client != nil {
		out = append(out, "cannot embed")
	}
	if f := t.ModelFamily(); f != s.family {
		out = append(out, "model family "+f+" is not "+s.family+
			", the first candidate's: vectors of different models do not mix")
	}
	for _, r := range w.route.Requires {
		if !t.states(r) {
			out = append(out, "cannot honour "+r)
		}
	}
	return out
}

// embedReason is the skip reason of a target that may not answer an
// embeddings request for what is missing.
func embedReason(t *Target, missing []string) string {
	return strings.Join(missing, "; ") + " (" + t.ID() + ")"
}

// embed sends one embeddings attempt to t under its limits, keeps the
// vectors it answered with, and returns the answer's model and usage as
// a Response, for the walk's record; headers reports that the response's
// status came.
func (s *embedSender) embed(ctx context.Context, t *Target, lim limits) (*llm.Response, bool, error) {
	e, ok := t.Client.(llm.Embedder)
	if !ok {
		return nil, false, errors.New("router: " + t.ID() + " cannot embed") // admit skips it first
	}
	req := s.req.Clone()
	req.Model = t.Model
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wt := newWatch(cancel, lim, false)
	resp, err := e.Embed(llm.WithProgress(actx, wt), req)
	wt.stop()
	if err = wt.explain(err); err != nil {
		return nil, wt.heard(), err
	}
	if resp.Model == "" {
		resp.Model = t.Model
	}
	s.vectors = resp
	return &llm.Response{Model: resp.Model, Usage: resp.Usage, RateLimit: resp.RateLimit,
		ProviderRequestID: resp.ProviderRequestID, FinishReason: llm.FinishStop}, wt.heard(), nil
}
