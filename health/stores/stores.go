// Package stores opens the health store a config names (memory, a SQLite
// file, Redis) under a breaker, one way for every front end: the CLI's
// commands and the detour library.
package stores

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/redisstore"
	"github.com/detourhq/detour/health/sqlitestore"
)

// RedisWait is how long Open waits for a Redis store's first sync, so that
// the first request knows what the fleet parked; past it, the store serves
// from memory until Redis answers (and says so in its log).
const RedisWait = time.Second

// Open returns a breaker with h's settings on the store spec names, and a
// func that closes that store. A SQLite spec needs its Path (an empty one
// means memory); a store that cannot be used runs on memory with one
// warning on log: health is never why a caller fails. Only a Redis URL
// that cannot be read is an error. getenv reads h.StorePasswordEnv.
func Open(spec config.StoreSpec, h config.Health, getenv func(string) string, log *slog.Logger) (*health.Breaker, func() error, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	settings := h.Settings
	switch spec.Kind {
	case config.StoreSQLite:
		if spec.Path == "" {
			break
		}
		st := sqlitestore.Open(spec.Path, sqlitestore.Options{Logger: log, Forget: settings.Forget})
		return health.NewWithStore(settings, st), st.Close, nil
	case config.StoreRedis:
		pw := ""
		if e := h.StorePasswordEnv; e != "" && getenv != nil {
			pw = getenv(e)
		}
		redisstore.LogDriverTo(log)
		st, err := redisstore.Open(redisstore.Options{URL: spec.URL, Password: pw, Namespace: h.Namespace,
			Forget: settings.Forget, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("health.store: %w", err)
		}
		for end := time.Now().Add(RedisWait); !st.Status().Up && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		return health.NewWithStore(settings, st), st.Close, nil
	}
	return health.New(settings), func() error { return nil }, nil
}
