package detour

import (
	"context"
	"errors"
	"sync"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// maxTargetRoutes caps the routes kept for targets named directly
// ("provider/model"); past it, each such request builds its route anew.
const maxTargetRoutes = 1024

// Client sends requests down the routes of one config. It is safe for
// concurrent use; Close it once its calls are over.
type Client struct {
	cfg    *config.Config
	build  config.BuildOptions
	routes map[string]*router.Route // every route of cfg, built once
	r      *router.Router

	tmu     sync.Mutex               // guards targets
	targets map[string]*router.Route // routes of targets named directly

	closeOnce sync.Once
	closers   []func() error // what the Client opened, closed in reverse
	closeErr  error
}

// Open builds a Client from the config file at path. An empty path finds
// the file as the CLI does (config.Path: $DETOUR_CONFIG, else ./detour.yaml)
// and, when there is none, makes a "default" route of the built-in presets
// whose key variables are set (config.Default; an error wrapping
// config.ErrNoKeys when none is). A file that is wrong yields config.Errors
// with each problem's line and column.
func Open(path string, opts ...Option) (*Client, error) {
	s := apply(opts)
	cfg, err := config.Open(path, s.getenv)
	if err != nil {
		return nil, err
	}
	return newClient(cfg, s)
}

// New builds a Client from cfg: a config parsed (config.Parse, config.Load)
// or built in code. Every route is built at once, so a config that is
// wrong, or a provider key that is set but too short, fails here
// (config.Config.Build). A target whose key variable is unset is not an
// error: requests skip it and the ledger says so. cfg must not change
// afterwards.
func New(cfg *config.Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("detour: New: the config is nil")
	}
	return newClient(cfg, apply(opts))
}

// apply returns opts applied to the zero settings.
func apply(opts []Option) *settings {
	s := &settings{}
	for _, fn := range opts {
		if fn != nil {
			fn(s)
		}
	}
	return s
}

func newClient(cfg *config.Config, s *settings) (*Client, error) {
	c := &Client{cfg: cfg, build: config.BuildOptions{Getenv: s.getenv, HTTPClient: s.httpClient},
		targets: map[string]*router.Route{}}
	var err error
	if c.routes, err = cfg.Build(c.build); err != nil {
		return nil, err
	}
	sink, err := c.openLedger(s)
	if err != nil {
		c.Close()
		return nil, err
	}
	hb, err := c.openHealth(s)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.r = (&router.Router{Ledger: sink, Health: hb, Trace: s.tracer,
		OnAttempt: fanOut(s.onAttempt), OnFailover: fanOut(s.onHop)}).Init()
	return c, nil
}

// fanOut returns one func calling each of fns in order; nil when there is
// none, so that the router skips the call.
func fanOut[T any](fns []func(T)) func(T) {
	switch len(fns) {
	case 0:
		return nil
	case 1:
		return fns[0]
	}
	return func(v T) {
		for _, fn := range fns {
			fn(v)
		}
	}
}

// Route returns the route name asks for, as a request's model would name
// it: a route of the config, or a "provider/model" target as a route of
// one. An unknown name is an error wrapping config.ErrUnknownRoute (or
// config.ErrUnknownProvider) that lists the routes. "" means the route
// "default".
func (c *Client) Route(name string) (*router.Route, error) {
	if name == "" {
		name = config.DefaultRoute
	}
	if r, ok := c.routes[name]; ok {
		return r, nil
	}
	c.tmu.Lock()
	r, ok := c.targets[name]
	c.tmu.Unlock()
	if ok {
		return r, nil
	}
	r, err := c.cfg.Lookup(name, c.build) // a target's route, or the error naming the routes
	if err != nil {
		return nil, err
	}
	c.tmu.Lock()
	if len(c.targets) < maxTargetRoutes {
		c.targets[name] = r
	}
	c.tmu.Unlock()
	return r, nil
}

// Complete sends req down route's chain and returns the answer, with the
// target that really answered (Result.Target), whether it came degraded,
// and every attempt and skip (Result.Attempts). On failure the error is a
// *router.Error (errors.Is router.ErrAllFailed, router.ErrFailClosed or
// router.ErrCanceled) listing each candidate's reason, or the error of an
// unknown route. req is not changed.
func (c *Client) Complete(ctx context.Context, route string, req *llm.Request, opts ...CallOption) (*router.Result, error) {
	if req == nil {
		return nil, errors.New("detour: Complete: the request is nil")
	}
	rt, err := c.Route(route)
	if err != nil {
		return nil, err
	}
	return c.r.Complete(ctx, rt, req, callOptions(opts))
}

// Ask sends prompt as one user message down route's chain and returns the
// answer's text: Complete for the simplest case.
func (c *Client) Ask(ctx context.Context, route, prompt string) (string, error) {
	res, err := c.Complete(ctx, route, &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
	if err != nil {
		return "", err
	}
	return res.Response.Message.Content, nil
}

// Embed sends req's texts down route's chain for their embeddings
// (router.Embed): a failure fails over only to targets of the first
// candidate's model family, since vectors of different models do not mix;
// the result names the model that made them. IdempotencyKey is refused.
func (c *Client) Embed(ctx context.Context, route string, req *llm.EmbedRequest, opts ...CallOption) (*router.EmbedResult, error) {
	if req == nil {
		return nil, errors.New("detour: Embed: the request is nil")
	}
	rt, err := c.Route(route)
	if err != nil {
		return nil, err
	}
	return c.r.Embed(ctx, rt, req, callOptions(opts))
}

// Stream sends req down route's chain as a stream and returns once a target
// produced its first output: failures before it fail over unseen; after it,
// a failure ends the stream with an error, never with another model's text.
// The caller must Close the result's Stream. IdempotencyKey is refused: a
// stream's answer is not kept.
func (c *Client) Stream(ctx context.Context, route string, req *llm.Request, opts ...CallOption) (*router.StreamResult, error) {
	if req == nil {
		return nil, errors.New("detour: Stream: the request is nil")
	}
	rt, err := c.Route(route)
	if err != nil {
		return nil, err
	}
	return c.r.Stream(ctx, rt, req, callOptions(opts))
}

// Router returns the router the Client drives, for what this package does
// not cover. Its fields must not be changed.
func (c *Client) Router() *router.Router { return c.r }

// Config returns the config the Client was built from. It must not be
// changed.
func (c *Client) Config() *config.Config { return c.cfg }

// Close closes the ledger file and the health store the Client opened (not
// those given with WithLedger or WithHealth), and returns their errors,
// joined. Later calls return the same. Calls still running may lose their
// ledger records.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		for i := len(c.closers) - 1; i >= 0; i-- {
			if err := c.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// onClose adds fn to what Close runs.
func (c *Client) onClose(fn func() error) { c.closers = append(c.closers, fn) }

// sinkOf returns the one sink the router writes to.
func sinkOf(sinks []ledger.Sink) ledger.Sink {
	switch len(sinks) {
	case 0:
		return ledger.Discard
	case 1:
		return sinks[0]
	}
	return ledger.Multi(sinks...)
}
