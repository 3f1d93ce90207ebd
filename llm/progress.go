package llm

import "context"

// Progress receives the milestones of one exchange from the client that
// runs it, so that the caller can time each phase on its own: the wait
// for the response headers, then the body. A Client reports through the
// Progress its context carries (ProgressOf); one that reports nothing is
// timed as if its headers never came before the call returned.
// Implementations must be safe for concurrent use and must not block.
type Progress interface {
	// Headers is called once, when the response headers have arrived.
	Headers()
	// Body is called as bytes of a non-streamed response body arrive
	// (a stream's progress is its chunks).
	Body()
}

type progressKey struct{}

// WithProgress returns ctx carrying p for the exchange run under it.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressOf returns the Progress ctx carries, or nil.
func ProgressOf(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}
