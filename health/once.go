package health

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// The ways Once.Begin ends without a claim or a replay.
var (
	// ErrOnceReused: the key was first used with another request.
	ErrOnceReused = errors.New("idempotency key first used with another request")
	// ErrOnceInFlight: the first request with the key is still in flight
	// and the caller asked not to wait (Begin with wait false).
	ErrOnceInFlight = errors.New("a request with the same idempotency key is in flight")
)

// The defaults of Once.
const (
	// DefaultOnceInFlight bounds a claim whose request never finished (a
	// crashed process): after it the key is served afresh.
	DefaultOnceInFlight = 15 * time.Minute
	// DefaultOncePoll is how often a repeat waiting on its first looks
	// again.
	DefaultOncePoll = 20 * time.Millisecond
)

// Once binds one operation to one outcome through Records: the first
// caller with a key claims it and runs the operation, a repeat with the
// same request gets the first one's value without running it (waiting
// while the first is in flight), and a repeat with another request is
// refused. A failed first caller lets the key go, so the next is served
// afresh. It is the one protocol under the gateway's Idempotency-Key and
// the router's Options.IdempotencyKey.
type Once struct {
	Records Records
	// InFlight bounds a claim (DefaultOnceInFlight when 0); Poll is the
	// wait between two looks at a key in flight (DefaultOncePoll when 0).
	InFlight, Poll time.Duration
	// Ceiling bounds the finished values of the keys' class (Records.Keep):
	// past it the ones that expire soonest are evicted, and a repeat of
	// an evicted key is served afresh. A claim in flight is never
	// evicted, so two callers never run one key's operation at once. The
	// zero value is no ceiling.
	Ceiling Ceiling
	// OnEvict, when set, is called with how many finished values a
	// Finish evicted to stay within Ceiling.
	OnEvict func(n int)
}

// onceRecord is what Records hold under a key: the request's fingerprint
// and, once done, the operation's value.
type onceRecord struct {
	Request string          `json:"request"`
	Done    bool            `json:"done,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
}

// OnceClaim is a claimed key: run the operation, then Finish it with its
// value or Abandon it, exactly once.
type OnceClaim struct {
	o        Once
	key, req string
}

// Begin claims key for the request fingerprint req. It returns a claim
// (the caller runs the operation), or the value the first caller
// finished with (a replay: run nothing), or an error: ErrOnceReused,
// ErrOnceInFlight (wait false), ctx's error while waiting, or the
// records' own error (they are advisory: the caller may run the operation
// without them). A record nobody can read is dropped and the key served
// afresh. Waiting is real time, never a delay of policy.
func (o Once) Begin(ctx context.Context, key, req string, wait bool) (*OnceClaim, json.RawMessage, error) {
	inFlight, poll := o.InFlight, o.Poll
	if inFlight <= 0 {
		inFlight = DefaultOnceInFlight
	}
	if poll <= 0 {
		poll = DefaultOncePoll
	}
	pending, _ := json.Marshal(onceRecord{Request: req})
	for {
		held, claimed, err := o.Records.Claim(key, pending, inFlight)
		if err != nil {
			return nil, nil, err
		}
		if claimed {
			return &OnceClaim{o: o, key: key, req: req}, nil, nil
		}
		var rec onceRecord
		switch {
		case json.Unmarshal(held, &rec) != nil:
			_ = o.Records.Delete(key)
			continue
		case rec.Request != req:
			return nil, nil, ErrOnceReused
		case rec.Done:
			return nil, rec.Value, nil
		case !wait:
			return nil, nil, ErrOnceInFlight
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Finish keeps value as the key's outcome for ttl, within o.Ceiling; a
// repeat gets it from then on. When it cannot be kept (larger than the
// ceiling, say) the key is let go (and the error returned), so a repeat
// is served afresh rather than waiting.
func (c *OnceClaim) Finish(value any, ttl time.Duration) error {
	v, err := json.Marshal(value)
	if err == nil {
		var b []byte
		if b, err = json.Marshal(onceRecord{Request: c.req, Done: true, Value: v}); err == nil {
			var n int
			if n, err = c.o.Records.Keep(c.key, b, ttl, c.o.Ceiling); n > 0 && c.o.OnEvict != nil {
				c.o.OnEvict(n)
			}
		}
	}
	if err != nil {
		c.Abandon()
	}
	return err
}

// Release ends a claim left in flight under key by a caller that died
// (only one that knows no live caller holds it may ask), and reports
// whether a finished value is kept under key instead.
func (o Once) Release(key string) (kept bool, err error) {
	b, found, err := o.Records.Get(key)
	if err != nil || !found {
		return false, err
	}
	var rec onceRecord
	if json.Unmarshal(b, &rec) == nil && rec.Done {
		return true, nil
	}
	return false, o.Records.Delete(key)
}

// Abandon lets the key go: the operation failed, and the next caller with
// the key is served afresh.
func (c *OnceClaim) Abandon() { _ = c.o.Records.Delete(c.key) }
