package detour

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// Item is one request of a Batch.
type Item struct {
	// ID names the item in its Outcome; Batch does not require it to be
	// unique unless the item is idempotent (see Idempotent).
	ID string
	// Route is the route (or "provider/model" target) for this item; ""
	// means the route Batch was given.
	Route string
	// Request is what to send. Batch does not change it.
	Request *llm.Request
	// Idempotent sends the item under an idempotency key made from ID
	// (BatchKey's prefix, then ID): a repeat of the item, in this batch or
	// a later one sharing the health store (SQLite across processes, Redis
	// across machines), gets the kept answer with no send, for a day. The
	// ID must then be set and unique to the request: the same key with
	// another request fails with router.ErrIdempotencyReused.
	Idempotent bool
}

// Outcome is what became of one Item: Result, or Err (then Result is nil).
type Outcome struct {
	// ID is the Item's ID.
	ID string
	// Result is the answer, with the target that gave it and every
	// attempt; Result.Replayed is set for an idempotent item's kept answer.
	Result *router.Result
	// Err is why there is no answer: what Complete returns (a
	// *router.Error, or an unknown route's error), or an error wrapping
	// router.ErrCanceled for an item taken as ctx ended.
	Err error
}

// BatchOption shapes a Batch.
type BatchOption func(*batchSettings)

// batchSettings are the BatchOptions applied.
type batchSettings struct {
	keyPrefix string
}

// BatchKey makes every item of the batch idempotent under the key prefix
// followed by its ID (as Item.Idempotent does, with the prefix): a rerun of
// a job with the same prefix sends nothing for the items already answered.
// Pick a prefix per job ("nightly-2026-12-01/") so that IDs of other jobs
// never meet.
func BatchKey(prefix string) BatchOption {
	return func(b *batchSettings) { b.keyPrefix = prefix }
}

// Batch sends the items of in with at most concurrency requests in flight
// (below 1 means 1) and yields one Outcome for every item it takes, in the
// order they finish, not the order they came: match them by ID. Each item
// is a Complete down its Route, else route.
//
// The channel returned is closed once in is closed and every item taken is
// answered, or once ctx is done and the items in flight have ended (they
// end at once, with errors wrapping router.ErrCanceled). After ctx is done
// no further item is taken from in, and in need not be closed. The caller
// must read the channel until it is closed: an Outcome not read holds its
// goroutine.
func (c *Client) Batch(ctx context.Context, route string, in <-chan Item, concurrency int, opts ...BatchOption) <-chan Outcome {
	var bs batchSettings
	for _, fn := range opts {
		if fn != nil {
			fn(&bs)
		}
	}
	concurrency = max(concurrency, 1)
	out := make(chan Outcome)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				var it Item
				select {
				case <-ctx.Done():
					return
				case v, ok := <-in:
					if !ok {
						return
					}
					it = v
				}
				out <- c.batchOne(ctx, route, it, &bs)
			}
		})
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

// batchOne answers one item.
func (c *Client) batchOne(ctx context.Context, route string, it Item, bs *batchSettings) Outcome {
	o := Outcome{ID: it.ID}
	switch {
	case ctx.Err() != nil: // taken in the same instant ctx ended
		o.Err = fmt.Errorf("%w: %w", router.ErrCanceled, ctx.Err())
		return o
	case it.Request == nil:
		o.Err = fmt.Errorf("detour: batch item %q has no request", it.ID)
		return o
	}
	var opts []CallOption
	if it.Idempotent || bs.keyPrefix != "" {
		if it.ID == "" {
			o.Err = errors.New("detour: a batch item with no ID cannot be idempotent: its key is made from the ID")
			return o
		}
		opts = append(opts, IdempotencyKey(bs.keyPrefix+it.ID))
	}
	o.Result, o.Err = c.Complete(ctx, cmp.Or(it.Route, route), it.Request, opts...)
	return o
}
