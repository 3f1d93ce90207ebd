package llm

import "context"

// Client speaks one dialect to one provider with one key. Each call is exactly
// one HTTP exchange: implementations never retry (the router's budget owns
// every retry). Failures are *ProviderError for a provider's answer, and
// transport errors (net.Error, context errors, io.ErrUnexpectedEOF) otherwise.
type Client interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Prober is the optional interface of a Client that can check, off the
// billing path, that its provider answers for a model: a read of the model
// list or of the model's metadata, which costs nothing and generates
// nothing. Probe returns nil when the provider answered with a 2xx status,
// else the error a call would have met (a *ProviderError for an HTTP error,
// parsed as the dialect's errors are; a transport error otherwise).
type Prober interface {
	Probe(ctx context.Context, model string) error
}

// Carrier is the optional interface of a Client that can say which needs
// (Request.Needs) of a request from another dialect it carries to its
// provider. A Client without it carries none.
type Carrier interface {
	Carries(need string) bool
}

// Fitter is the optional interface of a Client that can say, for a
// request translated into its dialect, what it cannot send together:
// missing are asks it cannot honour beside the others (the target is then
// skipped), dropped are fields it leaves out for them (the answer is then
// degraded and names them). Anthropic's extended thinking, for one, takes
// no temperature and no forced tool.
type Fitter interface {
	Fit(req *Request) (missing, dropped []string)
}
