package config

import (
	"fmt"
	"net/url"
	"strings"
)

// StoreKind is where a breaker's state lives.
type StoreKind string

// The stores of health.store.
const (
	// StoreMemory keeps health in the process: lost when it exits.
	StoreMemory StoreKind = "memory"
	// StoreSQLite keeps it in a file every detour process on the machine
	// shares (health/sqlitestore).
	StoreSQLite StoreKind = "sqlite"
	// StoreRedis keeps it in Redis, shared by gateway replicas
	// (health/redisstore).
	StoreRedis StoreKind = "redis"
)

// StoreSpec is health.store read: the kind, and the SQLite file or the
// Redis URL.
type StoreSpec struct {
	Kind StoreKind
	// Path is the SQLite file; "" means the default, beside the ledger.
	Path string
	// URL is the Redis URL (redis:// or rediss://), with no password.
	URL string
}

// ParseStore reads a health.store value: "memory", "sqlite",
// "sqlite:PATH", or a redis:// or rediss:// URL. "" gives a zero spec:
// the command's default. A password in the URL is refused: it belongs in
// the variable store_password_env names.
func ParseStore(v string) (StoreSpec, error) {
	switch {
	case v == "":
		return StoreSpec{}, nil
	case v == string(StoreMemory):
		return StoreSpec{Kind: StoreMemory}, nil
	case v == string(StoreSQLite):
		return StoreSpec{Kind: StoreSQLite}, nil
	case strings.HasPrefix(v, "sqlite:"):
		p := strings.TrimPrefix(v, "sqlite:")
		if p == "" {
			return StoreSpec{}, fmt.Errorf("sqlite: names no file: write sqlite for the default file, or sqlite:/path/to/health.db")
		}
		return StoreSpec{Kind: StoreSQLite, Path: p}, nil
	case strings.HasPrefix(v, "redis://"), strings.HasPrefix(v, "rediss://"):
		u, err := url.Parse(v)
		if err != nil {
			return StoreSpec{}, fmt.Errorf("%s is not a URL (%v): write it like redis://host:6379/0", quote(v), err)
		}
		if u.Host == "" {
			return StoreSpec{}, fmt.Errorf("%s names no host: write it like redis://host:6379/0", quote(v))
		}
		if _, set := u.User.Password(); set {
			u.User = url.User(u.User.Username())
			return StoreSpec{}, fmt.Errorf("the Redis URL holds a password: keys and passwords never go in the file; "+
				"write %s and name the variable that holds the password in health.store_password_env", quote(u.String()))
		}
		return StoreSpec{Kind: StoreRedis, URL: v}, nil
	}
	return StoreSpec{}, fmt.Errorf("%s is not a health store: write memory, sqlite, sqlite:/path/to/health.db, "+
		"or a redis:// or rediss:// URL like redis://host:6379/0", quote(v))
}

// Store returns the health store c names (see ParseStore).
func (c *Config) Store() StoreSpec {
	s, _ := ParseStore(c.Health.Store) // validated at parse
	return s
}

// validNamespace reports whether v can name a deployment in a shared
// store's keys.
func validNamespace(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
