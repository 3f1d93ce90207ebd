package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// ErrIdempotencyReused means an idempotency key came back with another
// request than the one it was first used with.
var ErrIdempotencyReused = errors.New("idempotency key first used with another request")

// onceKeep is how long the answer to a key is kept unless
// Options.IdempotencyTTL says otherwise.
const onceKeep = 24 * time.Hour

// onceAnswer is the value kept for one idempotency key.
type onceAnswer struct {
	Target   string        `json:"target,omitempty"`
	Response *llm.Response `json:"response,omitempty"`
}

// completeOnce is Complete under Options.IdempotencyKey (health.Once over
// the health store's records): the first request with the key is sent and
// its answer kept (onceKeep); a repeat with the same request gets that
// answer with no send (Result.Replayed), waits for it while the first is
// in flight, and fails with ErrIdempotencyReused for another request. A
// failed first request lets the key go.
func (r *Router) completeOnce(ctx context.Context, route *Route, req *llm.Request, opts Options) (*Result, error) {
	fp, ok := requestDigest(route.Name, req)
	if !ok {
		return r.complete(ctx, route, req, opts)
	}
	key := onceKey(route.Name, opts.IdempotencyKey)
	for {
		claim, kept, err := health.Once{Records: r.records()}.Begin(ctx, key, fp, true)
		switch {
		case errors.Is(err, health.ErrOnceReused):
			return nil, fmt.Errorf("router: idempotency key %q: %w: use a new key for a new request", opts.IdempotencyKey, ErrIdempotencyReused)
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %w", ErrCanceled, ctx.Err())
		case err != nil:
			return r.complete(ctx, route, req, opts) // the records are advisory, as health is
		case claim != nil:
			res, err := r.complete(ctx, route, req, opts)
			if err != nil {
				claim.Abandon()
				return nil, err
			}
			keep := opts.IdempotencyTTL
			if keep <= 0 {
				keep = onceKeep
			}
			_ = claim.Finish(onceAnswer{Target: res.Target.ID(), Response: res.Response}, keep)
			return res, nil
		}
		var a onceAnswer
		if json.Unmarshal(kept, &a) != nil || a.Response == nil {
			// A kept value nobody can read: let it go and serve afresh.
			_ = r.records().Delete(key)
			continue
		}
		return &Result{RequestID: opts.RequestID, Response: a.Response, Target: targetOf(route, a.Target),
			Replayed: true, Phase: policy.PhaseCommitted}, nil
	}
}

// onceKey is the records key of idempotency key on route.
func onceKey(route, key string) string {
	sum := sha256.Sum256([]byte(route + "\x00" + key))
	return "once:" + hex.EncodeToString(sum[:])
}

// ReleaseIdempotency drops the claim a Complete with Options.IdempotencyKey
// key on route left in flight when its process died, so the next Complete
// with the key sends at once instead of waiting for the claim to expire
// (15 minutes); it reports whether an answer is kept under key instead
// (the next Complete replays it). Call it only when no live caller can
// hold the key: a batch run that owns its results file, say.
func (r *Router) ReleaseIdempotency(route *Route, key string) (kept bool, err error) {
	return health.Once{Records: r.records()}.Release(onceKey(route.Name, key))
}

// targetOf returns route's target id, or one made from it.
func targetOf(route *Route, id string) *Target {
	for i := range route.Chain {
		if route.Chain[i].ID() == id {
			return &route.Chain[i]
		}
	}
	prov, model, _ := strings.Cut(id, "/")
	return &Target{Provider: prov, Model: model}
}
