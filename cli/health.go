package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/stores"
)

// healthFile is the SQLite store's file name, beside the ledger.
const healthFile = "health.db"

// healthSpec returns the store health.store names ($DETOUR_HEALTH_STORE,
// when set, wins; "-" is memory), or def when neither names one, with the
// SQLite file's path filled in: beside the ledger (ledgerFlag as --ledger
// reads it), else in detour's state directory. A SQLite store with no path
// to be found is memory.
func healthSpec(cfg *config.Config, env Env, def health.StoreKind, ledgerFlag string) (health.StoreSpec, error) {
	spec := cfg.Store()
	if v := env.Getenv("DETOUR_HEALTH_STORE"); v != "" {
		if v == "-" {
			v = string(health.StoreMemory)
		}
		s, err := config.ParseStore(v)
		if err != nil {
			return spec, fmt.Errorf("DETOUR_HEALTH_STORE: %w", err)
		}
		spec = s
	}
	if spec.Kind == "" {
		spec.Kind = def
	}
	if spec.Kind == health.StoreSQLite && spec.Path == "" {
		if spec.Path = healthPath(ledgerFlag, env); spec.Path == "" {
			spec.Kind = health.StoreMemory
		}
	}
	return spec, nil
}

// openHealth returns the breaker of cfg on its store (healthSpec) and a
// func that closes the store. def is the command's store when none is
// named: SQLite for the one-shot commands, so that each run knows what
// the last one found, and memory for serve, whose process lives long. A
// store that cannot be used falls back to memory with one warning on log:
// health is never why a command fails; only a Redis URL that cannot be
// read is an error.
func openHealth(cfg *config.Config, env Env, def health.StoreKind, ledgerFlag string, log *slog.Logger) (*health.Breaker, func(), error) {
	spec, err := healthSpec(cfg, env, def, ledgerFlag)
	if err != nil {
		return nil, nil, err
	}
	hb, closeStore, err := stores.Open(spec, stores.Options{Settings: cfg.Health.Settings, Namespace: cfg.Health.Namespace,
		Password: cfg.Health.StorePassword(env.Getenv), Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return hb, func() { _ = closeStore() }, nil
}

// healthPath is the default SQLite file: beside the ledger file, or in
// detour's state directory when there is no ledger. "" when neither can
// be found.
func healthPath(ledgerFlag string, env Env) string {
	if p := ledgerPath(ledgerFlag, env); p != "" {
		return filepath.Join(filepath.Dir(p), healthFile)
	}
	dir := stateDir(env)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, healthFile)
}

// stateDir is detour's state directory: $XDG_STATE_HOME/detour, else
// ~/.local/state/detour; "" when no home is known.
func stateDir(env Env) string {
	dir := env.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "detour")
}

// warnLogger logs warnings and errors to w as one plain line each
// ("level=WARN msg=..."), for the one-shot commands.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}
