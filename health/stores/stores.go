// Package stores opens the health store a spec names (memory, a SQLite
// file, Redis) under a breaker, one way for every front end: the CLI's
// commands and the detour library. It takes plain values, not a config,
// so that it sits below config in the layer list.
package stores

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/redisstore"
	"github.com/detourhq/detour/health/sqlitestore"
)

// RedisWait is how long Open waits for a Redis store's first sync, so that
// the first request knows what the fleet parked; past it, the store serves
// from memory until Redis answers (and says so in its log).
const RedisWait = time.Second

// Options are what Open needs besides the spec.
type Options struct {
	// Settings shape the breaker (health.New).
	Settings health.Settings
	// Namespace is the deployment's name in a shared store ("" means
	// "detour").
	Namespace string
	// Password is the Redis password (read from the variable the config's
	// store_password_env names), "" for none.
	Password string
	// Logger gets the store's warnings; nil discards them.
	Logger *slog.Logger
}

// Open returns a breaker with o's settings on the store spec names, and a
// func that closes that store. A SQLite spec needs its Path (an empty one
// means memory); a store that cannot be used runs on memory with one
// warning on the logger: health is never why a caller fails. Only a Redis
// URL that cannot be read is an error.
func Open(spec health.StoreSpec, o Options) (*health.Breaker, func() error, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	settings := o.Settings
	switch spec.Kind {
	case health.StoreSQLite:
		if spec.Path == "" {
			break
		}
		st := sqlitestore.Open(spec.Path, sqlitestore.Options{Logger: log, Forget: settings.Forget})
		return health.NewWithStore(settings, st), st.Close, nil
	case health.StoreRedis:
		redisstore.LogDriverTo(log)
		st, err := redisstore.Open(redisstore.Options{URL: spec.URL, Password: o.Password, Namespace: o.Namespace,
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
