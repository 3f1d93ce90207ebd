package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/telemetry"
)

// traceFlushTimeout bounds the flush of the spans still queued when a
// command ends: a collector that does not answer delays the exit no longer.
const traceFlushTimeout = 5 * time.Second

// openTracing starts the tracer cfg and the environment ask for
// (config.Config.Tracing): nil, with a stop that does nothing, when
// tracing is off. stop flushes the queued spans (within
// traceFlushTimeout) and says on env.Stderr when it could not.
func openTracing(ctx context.Context, cfg *config.Config, env Env) (tr router.Tracer, where config.Tracing, stop func(), err error) {
	where, err = cfg.Tracing(env.Getenv)
	if err != nil || !where.On() {
		return nil, where, func() {}, err
	}
	t, err := telemetry.New(ctx, telemetry.Config{URL: where.URL, Getenv: env.Getenv})
	if err != nil {
		return nil, where, func() {}, err
	}
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		defer cancel()
		if err := t.Shutdown(sctx); err != nil {
			fmt.Fprintf(env.Stderr, "detour: tracing: the last spans were not all sent: %v\n", err)
		}
	}
	return t, where, stop, nil
}
