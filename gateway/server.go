package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
)

// Config is what New needs. Only File is required; every other field's zero
// value means its default.
type Config struct {
	// File is the loaded detour.yaml: providers, routes and the gateway:
	// section (listen address, client keys, limits).
	File *config.Config
	// Getenv reads the providers' key variables and the client keys'
	// key_env variables; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient carries every upstream call; nil means wire/openai's
	// default client, whose pool keeps 256 idle connections per host.
	HTTPClient *http.Client
	// Ledger receives one record per attempt; nil discards them.
	Ledger ledger.Sink
	// Health keeps each target's breaker; nil means one in memory with
	// the settings of File's health: section.
	Health *health.Breaker
	// Logger gets one line per request (never a key or prompt text); nil
	// discards.
	Logger *slog.Logger
	// Clock tells time to the router, the breaker reads and the rate
	// limits; nil means the wall clock.
	Clock clock.Clock
	// Reread reads the config file again, for ReloadFile (SIGHUP in
	// `detour serve`) and POST /admin/reload; nil means neither can.
	Reread func() (*config.Config, error)
	// Trace, when set, traces each chat request (router.Router.Trace):
	// package telemetry's Tracer exports OpenTelemetry spans. When it also
	// has the method Extract(context.Context, http.Header) context.Context
	// (telemetry's has), each request's span continues the trace of the
	// client's W3C traceparent header. Nil, the default, traces nothing.
	Trace router.Tracer
}

// traceExtractor is a router.Tracer that reads a client's trace context
// from its request's headers.
type traceExtractor interface {
	Extract(ctx context.Context, h http.Header) context.Context
}

// Server is detour's OpenAI-, Anthropic- and Gemini-compatible gateway: an
// http.Handler serving
//
//	POST /v1/chat/completions   OpenAI chat completions, streamed or not
//	POST /v1/messages           Anthropic messages, streamed or not
//	POST /v1/responses          OpenAI Responses, streamed or not (stateless)
//	POST /v1/embeddings         OpenAI embeddings (router.Embed: one model
//	                            family per request)
//	POST /v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse
//	                            Gemini's generateContent, streamed or not
//	                            (the same under /v1/)
//	GET  /v1/models[/{id}]      the routes and targets the client's key may use
//	GET  /healthz, /readyz      liveness and readiness
//	GET  /metrics               Prometheus metrics (a registry of its own),
//	                            unless gateway.metrics_listen serves them apart
//
// A stream's response headers go out with its first output, so a failure
// before it is still a plain HTTP error (429, 503, 504, 400, ...). When the
// first output takes longer than gateway.keepalive, the headers go out then,
// followed by ": ping" comments, so clients do not time out; the
// x-detour-provider, -model, -attempts and -degraded headers then come as
// trailers, and a failure as an error event of the same type and message.
//
// /metrics asks for the admin key of gateway.metrics_key_env when one is
// set; without one it is open on a gateway without client keys (loopback
// only) and closed (403) on a gateway with client keys, whose clients must
// not read each other's routes and costs.
//
// A Server is safe for concurrent use. Serve it with Serve (which adds
// graceful shutdown: Drain, Shutdown) or mount it in any http.Server.
type Server struct {
	router   *router.Router
	health   *health.Breaker
	records  health.Records // idempotency records: the health store's, else memory
	clk      clock.Clock
	log      *slog.Logger
	getenv   func(string) string
	client   *http.Client
	listen   string     // gateway.listen as first loaded: a reload does not move it
	mlisten  string     // gateway.metrics_listen, the same
	reloadMu sync.Mutex // one reload at a time
	reread   func() (*config.Config, error)
	// extract reads a client's trace context into a request's context;
	// nil when the gateway does not trace.
	extract func(context.Context, http.Header) context.Context

	// lnAddr is the address Serve listens on (nil before it runs): what
	// a reload must not open (see Reload).
	lnAddr atomic.Pointer[string]

	// cur is what the config file makes: routes, keys, limits. A reload
	// swaps it; a request reads it once, at its start, and keeps it.
	cur atomic.Pointer[view]

	metrics        *metrics
	metricsHandler http.Handler

	unready  atomic.Bool // /readyz answers 503: a drain began
	draining atomic.Bool // new requests are refused: the listener is closing
	served   atomic.Bool // Serve runs: handler contexts descend from hard
	hard     context.Context
	hardStop context.CancelFunc
	active   inFlight // chat handlers in flight

	mu   sync.Mutex // guards srv and msrv
	srv  *http.Server
	msrv *http.Server // ServeMetrics's
}

// maxTargetRoutes caps the cache of directly named targets' routes.
const maxTargetRoutes = 1024

// New builds a gateway from cfg: every route of the file, the client keys
// (their variables must be set), metrics and the router. It does not
// listen.
func New(cfg Config) (*Server, error) {
	if cfg.File == nil {
		return nil, errors.New("gateway: Config.File is nil")
	}
	s := &Server{clk: clock.Or(cfg.Clock), log: cfg.Logger, health: cfg.Health, getenv: cfg.Getenv, client: cfg.HTTPClient,
		reread: cfg.Reread}
	if s.getenv == nil {
		s.getenv = os.Getenv
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	}
	if s.health == nil {
		s.health = health.New(cfg.File.Health.Settings)
	}
	if s.records = s.health.RecordsOf(); s.records == nil {
		s.records = &health.MemoryRecords{Now: s.clk.Now}
	}
	v, err := s.newView(cfg.File, nil)
	if err != nil {
		return nil, err
	}
	s.cur.Store(v)
	s.listen, s.mlisten = v.gw.Listen, v.gw.MetricsListen
	s.hard, s.hardStop = context.WithCancel(context.Background())
	s.router = (&router.Router{Health: s.health, Ledger: cfg.Ledger, Clock: cfg.Clock, OnAttempt: s.onAttempt,
		Trace: cfg.Trace, Buffers: &router.Buffers{Limit: s.bufferedMax}, KeptAnswers: s.keptAnswers,
		OnEvict: s.answersEvicted}).Init()
	if x, ok := cfg.Trace.(traceExtractor); ok {
		s.extract = x.Extract
	}
	s.metrics = newMetrics(s)
	s.metricsHandler = s.metrics.reg.Handler()
	return s, nil
}

// v returns the config in force: a request reads it once and keeps it.
func (s *Server) v() *view { return s.cur.Load() }

// Addr returns the address the file asks to listen on (gateway.listen, or
// config.DefaultListen).
func (s *Server) Addr() string { return s.listen }

// Keyless reports whether the gateway asks for no client key (no
// gateway.keys): every request is then accepted, so `detour serve` listens
// on loopback only.
func (s *Server) Keyless() bool { return len(s.v().keys) == 0 }

// ServeHTTP routes a request to its surface.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestParsed(r)
	switch p := r.URL.Path; p {
	case "/v1/chat/completions", "/chat/completions":
		if s.method(w, r, http.MethodPost, openAIDialect) {
			s.serveChat(w, r, openAIDialect)
		}
	case "/v1/embeddings", "/embeddings":
		if s.method(w, r, http.MethodPost, openAIDialect) {
			s.serveEmbed(w, r, openAIDialect, "", "")
		}
	case "/v1/messages":
		if s.method(w, r, http.MethodPost, anthropicDialect) {
			s.serveChat(w, r, anthropicDialect)
		}
	case "/v1/responses", "/responses":
		if s.method(w, r, http.MethodPost, responsesDialect) {
			s.serveChat(w, r, responsesDialect)
		}
	case "/v1/models", "/models":
		if s.method(w, r, http.MethodGet, modelsDialect(r)) {
			s.serveModels(w, r, "")
		}
	case "/healthz":
		writeStatus(w, http.StatusOK, "ok")
	case "/readyz":
		s.serveReady(w)
	case "/metrics":
		s.serveMetrics(w, r, false)
	default:
		s.serveOther(w, r, p)
	}
}

// serveReady answers /readyz: 503 while draining or with no provider key,
// else the health store's state.
//
//go:noinline
func (s *Server) serveReady(w http.ResponseWriter) {
	switch {
	case s.unready.Load() || s.draining.Load():
		writeStatus(w, http.StatusServiceUnavailable, "draining")
	case !s.v().ready:
		writeStatus(w, http.StatusServiceUnavailable, "no provider key is set")
	default:
		writeReady(w, s.health.StoreStatus())
	}
}

// serveOther answers the paths ServeHTTP does not name: the admin API,
// Gemini's model methods, one model, and 404s that say what is served.
// Apart from ServeHTTP so that its frame, under every request's whole
// life (a stream's too), stays small.
//
//go:noinline
func (s *Server) serveOther(w http.ResponseWriter, r *http.Request, p string) {
	if strings.HasPrefix(p, "/admin/") {
		s.serveAdmin(w, r, p)
		return
	}
	if model, method, ok := geminiPath(p); ok && (r.Method == http.MethodPost || strings.HasPrefix(p, "/v1beta/")) {
		// Gemini's model methods: never the GET of /v1/models/{id}.
		s.serveGemini(w, r, model, method)
		return
	}
	if id, ok := strings.CutPrefix(p, "/v1/models/"); ok && id != "" {
		if s.method(w, r, http.MethodGet, modelsDialect(r)) {
			s.serveModels(w, r, id)
		}
		return
	}
	d := openAIDialect
	if strings.HasPrefix(p, "/v1/messages") {
		d = anthropicDialect
	}
	if strings.HasPrefix(p, "/v1/responses/") || strings.HasPrefix(p, "/responses/") {
		writeError(w, d, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found",
			Message: fmt.Sprintf("%s %s: detour keeps no responses (store is never honoured), so none can be "+
				"retrieved, cancelled or deleted", r.Method, p)}, "")
		return
	}
	writeError(w, d, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url",
		Message: fmt.Sprintf("unknown URL %s %s: detour serves POST /v1/chat/completions, POST /v1/messages, "+
			"POST /v1/responses, POST /v1/embeddings, POST /v1beta/models/{model}:generateContent and GET /v1/models", r.Method, p)}, "")
}

// method answers 405 unless r uses want.
func (s *Server) method(w http.ResponseWriter, r *http.Request, want string, d dialect) bool {
	if r.Method == want {
		return true
	}
	w.Header().Set("Allow", want)
	writeError(w, d, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
		Message: fmt.Sprintf("method %s is not allowed here; use %s", r.Method, want)}, "")
	return false
}

// writeStatus writes {"status": text}.
func writeStatus(w http.ResponseWriter, code int, text string) {
	b := jsonw.String([]byte(`{"status":`), text)
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b) //nolint:errcheck // nothing to do for a gone client
}

// writeReady answers a ready /readyz: {"status":"ready"} and the health
// store's status. A shared store that is down leaves the gateway ready (it
// serves on its own memory) and says so in health_store.
func writeReady(w http.ResponseWriter, st health.Status) {
	b := append(make([]byte, 0, 160), `{"status":"ready","health_store":{"kind":`...)
	b = jsonw.String(b, st.Kind)
	if st.Where != "" {
		b = append(b, `,"where":`...)
		b = jsonw.String(b, st.Where)
	}
	b = append(b, `,"up":`...)
	b = strconv.AppendBool(b, st.Up)
	if st.Detail != "" {
		b = append(b, `,"detail":`...)
		b = jsonw.String(b, st.Detail)
	}
	b = append(b, "}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // nothing to do for a gone client
}

// Serve accepts connections on ln until Shutdown, with timeouts suited to
// long streams (no write timeout). It returns http.ErrServerClosed after
// Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	addr := ln.Addr().String()
	s.lnAddr.Store(&addr)
	return s.serve(ln, s, &s.srv)
}

// serve serves h on ln with an http.Server it keeps in *slot for Shutdown.
func (s *Server) serve(ln net.Listener, h http.Handler, slot **http.Server) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.hard },
		ConnContext:       connErrorConn,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	*slot = srv
	if slot == &s.srv {
		s.served.Store(true)
	}
	s.mu.Unlock()
	if slot == &s.srv {
		ln = errorListener{Listener: ln, count: func(d dialect) {
			s.metrics.rejected.With(d.String(), "malformed_http").Inc()
		}}
	}
	return srv.Serve(ln)
}

// ErrDrainTimeout is the error of a Shutdown whose drain ran out of time
// (or was cut short by its context) and cancelled requests in flight.
var ErrDrainTimeout = errors.New("gateway: drain timeout")

// DrainError is the error of a Shutdown that cancelled requests in flight:
// it says how many. It matches ErrDrainTimeout.
type DrainError struct {
	// Cut is how many requests were still running, and were cancelled.
	Cut int64
}

// Error says how many requests were cut.
func (e *DrainError) Error() string {
	return fmt.Sprintf("gateway: drain timeout: %d request(s) cut", e.Cut)
}

// Unwrap returns ErrDrainTimeout.
func (e *DrainError) Unwrap() error { return ErrDrainTimeout }

// Drain shuts the gateway down the way a load balancer needs: at once
// /readyz answers 503 "draining", while the listener still accepts and
// every request is served as before, for gateway.drain_delay (the time a
// load balancer takes to see it and stop sending); then Shutdown. When ctx
// ends (a second signal, say), it skips what is left of the delay and of
// the drain: requests in flight are cancelled at once. It returns
// Shutdown's error.
func (s *Server) Drain(ctx context.Context) error {
	s.unready.Store(true)
	if d := s.v().gw.DrainDelay; d > 0 {
		s.clk.Sleep(ctx, d)
	}
	return s.Shutdown(ctx)
}

// Shutdown stops the gateway gracefully: /readyz turns 503, the listener
// closes and new requests are refused, and requests in flight (streams
// included) may finish within gateway.drain_timeout (or until ctx ends, if
// sooner). Requests still running then are cancelled: their upstream calls
// end (the ledger records them), streams end with an error event, others
// get a 503. A listener of ServeMetrics closes last. It returns nil when
// everything drained in time, else a *DrainError saying how many requests
// were cut.
func (s *Server) Shutdown(ctx context.Context) error {
	s.unready.Store(true)
	s.draining.Store(true)
	ctx, cancel := context.WithTimeout(ctx, s.v().gw.DrainTimeout)
	defer cancel()
	s.mu.Lock()
	srv, msrv := s.srv, s.msrv
	s.mu.Unlock()
	drained := s.active.none()
	closed := make(chan struct{})
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	if srv != nil {
		// Closes the listeners and idle connections at once, then returns
		// when every connection went idle: after the handlers' last bytes.
		go func() { srv.Shutdown(sctx); close(closed) }() //nolint:errcheck // the drain below decides
	} else {
		close(closed)
	}
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = s.cut(drained)
	}
	s.hardStop()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
	}
	for _, hs := range []*http.Server{srv, msrv} {
		if hs != nil {
			hs.Close()
		}
	}
	return err
}

// cut cancels the requests still in flight, unless drained is closed
// already, and waits (2 s at most) for their handlers to return, so that
// their ledger records are written. It returns a *DrainError counting them,
// or nil if there were none.
func (s *Server) cut(drained <-chan struct{}) error {
	select {
	case <-drained:
		return nil
	default:
	}
	inflight := s.active.count()
	s.hardStop() // every handler's context ends: streams send their error event
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
	}
	if inflight == 0 {
		return nil
	}
	return &DrainError{Cut: inflight}
}
