package gateway

import (
	"fmt"
	"sync"
	"time"

	"github.com/detourhq/detour/config"
)

// DefaultMaxDirectModels caps the distinct models a provider may be
// named with directly (provider/model, not listed in the config) within
// directWindow (gateway.max_direct_models): every name that fails leaves
// breaker state behind, so a client inventing names would grow memory
// without end.
const DefaultMaxDirectModels = config.DefaultMaxDirectModels

// directWindow is how long a directly named model counts against the cap
// after its last use.
const directWindow = time.Hour

// directModels counts, per provider, the models named directly and when
// each was last used. Safe for concurrent use; the zero value is ready.
type directModels struct {
	mu    sync.Mutex
	seen  map[string]map[string]time.Time // provider -> model -> last use
	swept map[string]time.Time            // provider -> last sweep
}

// admit records a use of provider/model at now, or refuses it when the
// provider already has limit other models in use within the window (0:
// DefaultMaxDirectModels).
func (d *directModels) admit(provider, model string, limit int, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if limit <= 0 {
		limit = DefaultMaxDirectModels
	}
	if d.seen == nil {
		d.seen, d.swept = map[string]map[string]time.Time{}, map[string]time.Time{}
	}
	models := d.seen[provider]
	if models == nil {
		models = map[string]time.Time{}
		d.seen[provider] = models
	}
	if _, ok := models[model]; ok || len(models) < limit {
		models[model] = now
		return nil
	}
	if now.Sub(d.swept[provider]) >= time.Minute {
		d.swept[provider] = now
		for m, last := range models {
			if now.Sub(last) >= directWindow {
				delete(models, m)
			}
		}
		if len(models) < limit {
			models[model] = now
			return nil
		}
	}
	return fmt.Errorf("provider %s was named with %d other models directly within the hour, its cap "+
		"(gateway.max_direct_models): name a route, or list the model in the config (targets: or a chain)", provider, limit)
}
