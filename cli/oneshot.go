package cli

import (
	"context"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/router"
)

// openRouter opens what a one-shot command (ask, batch) sends through: the
// ledger --ledger names, the health store (SQLite beside the ledger unless
// health.store says otherwise) and tracing when the config asks for it,
// under one router. close releases them, tracing first so the last spans
// go out. Its error is a configuration error.
func openRouter(ctx context.Context, cfg *config.Config, env Env, ledgerFlag string) (r *router.Router, close func(), err error) {
	sink, closeSink, err := openLedger(ledgerFlag, env)
	if err != nil {
		return nil, nil, err
	}
	hb, closeHealth, err := openHealth(cfg, env, health.StoreSQLite, ledgerFlag, warnLogger(env.Stderr))
	if err != nil {
		closeSink()
		return nil, nil, err
	}
	tr, _, stopTracing, err := openTracing(ctx, cfg, env)
	if err != nil {
		closeHealth()
		closeSink()
		return nil, nil, err
	}
	return &router.Router{Ledger: sink, Health: hb, Trace: tr}, func() {
		stopTracing()
		closeHealth()
		closeSink()
	}, nil
}
