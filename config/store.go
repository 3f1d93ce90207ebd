package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/detourhq/detour/health"
)

// ParseStore reads a health.store value into a health.StoreSpec:
// "memory", "sqlite", "sqlite:PATH", or a redis:// or rediss:// URL. ""
// gives a zero spec: the command's default. A password in the URL is refused: it belongs in
// the variable store_password_env names.
func ParseStore(v string) (health.StoreSpec, error) {
	switch {
	case v == "":
		return health.StoreSpec{}, nil
	case v == string(health.StoreMemory):
		return health.StoreSpec{Kind: health.StoreMemory}, nil
	case v == string(health.StoreSQLite):
		return health.StoreSpec{Kind: health.StoreSQLite}, nil
	case strings.HasPrefix(v, "sqlite:"):
		p := strings.TrimPrefix(v, "sqlite:")
		if p == "" {
			return health.StoreSpec{}, fmt.Errorf("sqlite: names no file: write sqlite for the default file, or sqlite:/path/to/health.db")
		}
		return health.StoreSpec{Kind: health.StoreSQLite, Path: p}, nil
	case strings.HasPrefix(v, "redis://"), strings.HasPrefix(v, "rediss://"):
		u, err := url.Parse(v)
		if err != nil {
			return health.StoreSpec{}, fmt.Errorf("%s is not a URL (%v): write it like redis://host:6379/0", quote(v), err)
		}
		if u.Host == "" {
			return health.StoreSpec{}, fmt.Errorf("%s names no host: write it like redis://host:6379/0", quote(v))
		}
		if _, set := u.User.Password(); set {
			u.User = url.User(u.User.Username())
			return health.StoreSpec{}, fmt.Errorf("the Redis URL holds a password: keys and passwords never go in the file; "+
				"write %s and name the variable that holds the password in health.store_password_env", quote(u.String()))
		}
		return health.StoreSpec{Kind: health.StoreRedis, URL: v}, nil
	}
	return health.StoreSpec{}, fmt.Errorf("%s is not a health store: write memory, sqlite, sqlite:/path/to/health.db, "+
		"or a redis:// or rediss:// URL like redis://host:6379/0", quote(v))
}

// Store returns the health store c names (see ParseStore).
func (c *Config) Store() health.StoreSpec {
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

// StorePassword returns the Redis password from the variable
// StorePasswordEnv names, "" when none is named or getenv is nil.
func (h Health) StorePassword(getenv func(string) string) string {
	if h.StorePasswordEnv == "" || getenv == nil {
		return ""
	}
	return getenv(h.StorePasswordEnv)
}
