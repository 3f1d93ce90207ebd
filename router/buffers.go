package router

import "sync/atomic"

// Buffers is one budget of bytes for the streams of Buffered routes that
// share it: a gateway gives one to its router, so every request of the
// process holds its buffered chunks against it. Route.MaxBuffer bounds one
// stream; Buffers bounds them all together, so that many buffered streams
// at once cannot grow the process without bound.
//
// Past the Limit a stream stops waiting to be whole, as it does past its
// route's MaxBuffer: what it holds goes out and the rest streams as it
// comes (the stream is bypassed). A new buffered stream that finds the
// budget spent streams from its first output. The answer still reaches
// the client; what it loses is the failover of a cut before its end,
// which then ends with an error event instead (never another model's
// text). A route's FailOverPastBuffer (over_buffer: fail_over) is not
// applied here: the budget is the process's limit, not a runaway answer.
// Refusing such streams (503) instead would turn a busy gateway's memory
// limit into failed requests and retries. The total held can pass Limit
// by at most one chunk per stream, the one that found the budget spent.
//
// A Buffers is safe for concurrent use; its zero value counts without a
// limit.
type Buffers struct {
	// Limit returns the most bytes the streams may hold together, read
	// at each chunk a stream holds (so a gateway's reload takes effect at
	// once); nil, or 0 or less, means no limit (they are still counted).
	Limit func() int64

	held     atomic.Int64
	bypassed atomic.Int64
}

// Held returns the bytes the buffered streams hold now.
func (b *Buffers) Held() int64 { return b.held.Load() }

// Bypassed returns how many buffered streams stopped waiting to be whole
// because the budget was spent.
func (b *Buffers) Bypassed() int64 { return b.bypassed.Load() }

// hold counts n more bytes held, and reports false (counting nothing)
// when they would pass the limit. A nil b holds without a limit.
func (b *Buffers) hold(n int64) bool {
	if b == nil {
		return true
	}
	var limit int64
	if b.Limit != nil {
		limit = b.Limit()
	}
	if v := b.held.Add(n); limit > 0 && v > limit {
		b.held.Add(-n)
		return false
	}
	return true
}

// release counts n bytes no longer held.
func (b *Buffers) release(n int64) {
	if b != nil && n != 0 {
		b.held.Add(-n)
	}
}
