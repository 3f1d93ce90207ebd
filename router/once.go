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

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// ErrIdempotencyReused means an idempotency key came back with another
// request than the one it was first used with.
var ErrIdempotencyReused = errors.New("idempotency key first used with another request")

const (
	// onceInFlight bounds a claim whose request never finished (a crash):
	// after it the key is served afresh.
	onceInFlight = 15 * time.Minute
	// onceKeep is how long the answer to a key is kept unless
	// Options.IdempotencyTTL says otherwise.
	onceKeep = 24 * time.Hour
	// oncePoll is how often a repeat waiting on its first looks again.
	oncePoll = 20 * time.Millisecond
)

// onceRecord is what the records hold for one idempotency key.
type onceRecord struct {
	Request  string        `json:"request"`
	Done     bool          `json:"done,omitempty"`
	Target   string        `json:"target,omitempty"`
	Response *llm.Response `json:"response,omitempty"`
}

// completeOnce is Complete under Options.IdempotencyKey: the first request
// with the key is sent and its answer kept (onceKeep) in the health
// store's records; a repeat with the same request gets that answer with
// no send (Result.Replayed), waits for it while the first is in flight,
// and fails with ErrIdempotencyReused for another request. A failed first
// request lets the key go.
func (r *Router) completeOnce(ctx context.Context, route *Route, req *llm.Request, opts Options) (*Result, error) {
	fp, ok := requestDigest(route.Name, req)
	if !ok {
		return r.complete(ctx, route, req, opts)
	}
	sum := sha256.Sum256([]byte(route.Name + "\x00" + opts.IdempotencyKey))
	key := "once:" + hex.EncodeToString(sum[:])
	recs := r.records()
	pending, _ := json.Marshal(onceRecord{Request: fp})
	for {
		held, claimed, err := recs.Claim(key, pending, onceInFlight)
		if err != nil {
			return r.complete(ctx, route, req, opts) // the records are advisory, as health is
		}
		if claimed {
			res, err := r.complete(ctx, route, req, opts)
			if err != nil {
				_ = recs.Delete(key)
				return nil, err
			}
			keep := opts.IdempotencyTTL
			if keep <= 0 {
				keep = onceKeep
			}
			if b, err := json.Marshal(onceRecord{Request: fp, Done: true, Target: res.Target.ID(), Response: res.Response}); err == nil {
				_ = recs.Put(key, b, keep)
			}
			return res, nil
		}
		var rec onceRecord
		switch {
		case json.Unmarshal(held, &rec) != nil:
			_ = recs.Delete(key) // unreadable: serve afresh
			continue
		case rec.Request != fp:
			return nil, fmt.Errorf("router: idempotency key %q: %w: use a new key for a new request", opts.IdempotencyKey, ErrIdempotencyReused)
		case rec.Done && rec.Response != nil:
			return &Result{RequestID: opts.RequestID, Response: rec.Response, Target: targetOf(route, rec.Target),
				Replayed: true, Phase: policy.PhaseCommitted}, nil
		}
		// Waiting on another caller, not a delay of policy: real time,
		// so a fake clock's sleeps do not run the claim out.
		t := time.NewTimer(oncePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %w", ErrCanceled, ctx.Err())
		case <-t.C:
		}
	}
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
