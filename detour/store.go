package detour

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/stores"
	"github.com/detourhq/detour/ledger"
)

// healthFile is the SQLite store's file name beside the ledger file, as
// the CLI names it.
const healthFile = "health.db"

// openLedger returns the sink the router writes to: the caller's sinks and
// the files s names, which the Client opens and Close closes.
func (c *Client) openLedger(s *settings) (ledger.Sink, error) {
	sinks := append([]ledger.Sink(nil), s.sinks...)
	for _, p := range s.ledgerPaths {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("detour: ledger: %w", err)
		}
		f, err := ledger.OpenFile(p)
		if err != nil {
			return nil, fmt.Errorf("detour: %w", err)
		}
		c.onClose(f.Close)
		sinks = append(sinks, f)
	}
	return sinkOf(sinks), nil
}

// openHealth returns the breaker: WithHealth's, else one with the config's
// health: settings on the store health.store names: memory (the default),
// a SQLite file ("sqlite" alone: health.db beside the first ledger file,
// or memory when there is none, with a warning), or Redis. A store that
// cannot be used runs on memory and says so on the logger, as in the CLI;
// only a Redis URL that cannot be read is an error.
func (c *Client) openHealth(s *settings) (*health.Breaker, error) {
	if s.breaker != nil {
		return s.breaker, nil
	}
	log := s.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spec := c.cfg.Store()
	if spec.Kind == health.StoreSQLite && spec.Path == "" {
		if len(s.ledgerPaths) > 0 {
			spec.Path = filepath.Join(filepath.Dir(s.ledgerPaths[0]), healthFile)
		} else {
			log.Warn("health.store is sqlite with no file and there is no ledger file to put it beside: " +
				"health is kept in memory (write sqlite:/path/to/health.db, or use WithLedgerFile)")
		}
	}
	getenv := s.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	hb, closeStore, err := stores.Open(spec, stores.Options{Settings: c.cfg.Health.Settings, Namespace: c.cfg.Health.Namespace,
		Password: c.cfg.Health.StorePassword(getenv), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("detour: %w", err)
	}
	c.onClose(closeStore)
	return hb, nil
}
