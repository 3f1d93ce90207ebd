package detour

import (
	"log/slog"
	"net/http"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
)

// Option shapes a Client, for Open and New. Options apply in order; the
// zero set gives a Client with no ledger, an in-memory breaker (or the
// store the config's health.store names), the HTTP clients' defaults and
// os.Getenv.
type Option func(*settings)

// settings are the Options applied.
type settings struct {
	sinks       []ledger.Sink // the caller's: never closed by the Client
	ledgerPaths []string      // opened by the Client, closed by Close
	breaker     *health.Breaker
	httpClient  *http.Client
	getenv      func(string) string
	onAttempt   []func(router.Attempt)
	onHop       []func(router.Hop)
	tracer      router.Tracer
	logger      *slog.Logger
}

// WithLedger sends one record per attempt (failures and skips included) to
// sink, which the caller owns: Close does not close it. Given more than
// once, or with WithLedgerFile, every sink gets every record. Without a
// ledger option the records are dropped.
func WithLedger(sink ledger.Sink) Option {
	return func(s *settings) {
		if sink != nil {
			s.sinks = append(s.sinks, sink)
		}
	}
}

// WithLedgerFile appends one JSON line per attempt to the file at path
// (ledger.OpenFile), creating it (0600) and its directory (0700) when
// missing; Close closes it. It is also where a health.store of "sqlite"
// with no path puts its file: health.db beside it.
func WithLedgerFile(path string) Option {
	return func(s *settings) {
		if path != "" {
			s.ledgerPaths = append(s.ledgerPaths, path)
		}
	}
}

// WithHealth makes the Client use b, which the caller owns, to park and
// skip failing targets, instead of the breaker the config's health:
// section describes. Clients (and routers) that share b share what it
// learns.
func WithHealth(b *health.Breaker) Option {
	return func(s *settings) { s.breaker = b }
}

// WithHTTPClient carries every provider call on hc; nil (the default) means
// the wire clients' own.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) { s.httpClient = hc }
}

// WithGetenv reads environment variables with getenv instead of os.Getenv:
// the providers' key variables, DETOUR_CONFIG and the presets' variables
// when Open has no path, and health.store_password_env.
func WithGetenv(getenv func(string) string) Option {
	return func(s *settings) { s.getenv = getenv }
}

// OnAttempt calls fn after every attempt and skip, once its ledger record
// is written, from the goroutine of the request (Batch calls it from many
// at once). fn must be quick and safe for concurrent use. Given more than
// once, each fn is called, in order.
func OnAttempt(fn func(router.Attempt)) Option {
	return func(s *settings) {
		if fn != nil {
			s.onAttempt = append(s.onAttempt, fn)
		}
	}
}

// OnHop calls fn for every move away from a target that failed: the
// target, its reason and where the request goes next. The same contract
// as OnAttempt.
func OnHop(fn func(router.Hop)) Option {
	return func(s *settings) {
		if fn != nil {
			s.onHop = append(s.onHop, fn)
		}
	}
}

// WithTracer traces each request with t (package telemetry makes one that
// exports OpenTelemetry spans); the default traces nothing. The Client does
// not start tracing from the config's telemetry: section on its own.
func WithTracer(t router.Tracer) Option {
	return func(s *settings) { s.tracer = t }
}

// WithLogger receives the health store's warnings (a SQLite file that
// cannot be used, Redis going away); nil, the default, discards them.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}

// CallOption shapes one request (router.Options).
type CallOption func(*router.Options)

// Start tries provider (or a "provider/model" of the route's chain) first;
// the chain continues after it and wraps round to the ones before it.
func Start(provider string) CallOption {
	return func(o *router.Options) { o.Start = provider }
}

// NoFallback sends only to the first target (Start's, when given): no
// retry elsewhere, ever.
func NoFallback() CallOption {
	return func(o *router.Options) { o.NoFallback = true }
}

// IdempotencyKey binds one operation to one answer (Complete only): a
// repeat with the same key and request gets the kept answer with no send
// (Result.Replayed), for a day; with another request it fails with
// router.ErrIdempotencyReused.
func IdempotencyKey(key string) CallOption {
	return func(o *router.Options) { o.IdempotencyKey = key }
}

// RequestID sets the id the ledger records the request under; by default
// each request gets a new one.
func RequestID(id string) CallOption {
	return func(o *router.Options) { o.RequestID = id }
}

// NonIdempotent says the request has side effects: an attempt whose outcome
// is unknown (a timeout or reset after the send) is never sent again.
func NonIdempotent() CallOption {
	return func(o *router.Options) { o.NonIdempotent = true }
}

// CallOptions replaces the request's router.Options with o, for controls
// the other CallOptions do not name (spend ceilings, the idempotency TTL).
// CallOptions given after it still apply.
func CallOptions(o router.Options) CallOption {
	return func(dst *router.Options) { *dst = o }
}

// callOptions applies opts to zero router.Options.
func callOptions(opts []CallOption) router.Options {
	var o router.Options
	for _, fn := range opts {
		if fn != nil {
			fn(&o)
		}
	}
	return o
}
