package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/detourhq/detour/health"
)

// MinKeyLen is the shortest provider key detour accepts from the
// environment. No real provider key is shorter, and detour's redaction
// leaves shorter strings alone (they would match ordinary text), so a
// shorter key could reach a log, an error or a client. A local provider
// (see Provider.Local) may have a shorter one: a dummy for a server that
// takes any key.
const MinKeyLen = 8

// MinAdminKeyLen is the shortest admin key (gateway.admin_key_env,
// gateway.metrics_key_env) detour accepts. The admin endpoints reload the
// config and park or release targets, and /metrics shows every route's
// traffic and cost, so their key is guessed at over the network: 16
// characters is 128 bits of a hex key and more of any other random one,
// and the key generators operators reach for give more (`openssl rand
// -hex 16`: 32 characters; a UUID: 36). No real admin key is shorter; a
// short one is a placeholder ("test", "admin") left in place.
const MinAdminKeyLen = 16

// Sentinels of the problems CheckEnv finds.
var (
	// ErrShortKey means a provider's key variable holds fewer than
	// MinKeyLen characters and the provider is not local.
	ErrShortKey = errors.New("provider key too short")
	// ErrKeyUnset means a key variable that `detour serve` needs
	// (gateway.keys key_env, gateway.metrics_key_env) is unset or empty.
	ErrKeyUnset = errors.New("key variable not set")
	// ErrWeakKey means the admin key of gateway.admin_key_env or
	// gateway.metrics_key_env holds fewer than MinAdminKeyLen characters.
	ErrWeakKey = errors.New("admin key too short")
)

// Local reports whether p is a local server, which may take a dummy key
// shorter than MinKeyLen: its pool is local, or its base_url is on
// loopback (localhost, 127.0.0.1, ::1).
func (p Provider) Local() bool {
	if p.pool() == Local {
		return true
	}
	u, err := url.Parse(strings.TrimSpace(p.BaseURL))
	return err == nil && p.BaseURL != "" && isLoopback(strings.ToLower(u.Hostname()))
}

// CheckEnv reports every problem of c that depends on the environment, the
// variables the key_env fields name (a nil getenv means os.Getenv):
//
//   - a provider key shorter than MinKeyLen (ErrShortKey), for every
//     declared provider and every provider a route uses, unless the
//     provider is Local; Build refuses these too, since it reads the keys;
//   - a client key of gateway.keys whose key_env is unset (ErrKeyUnset);
//   - a gateway.metrics_key_env or admin_key_env that is unset
//     (ErrKeyUnset), holds the key of a client, or holds fewer than
//     MinAdminKeyLen characters (ErrWeakKey).
//
// A missing provider key is not a problem: the router skips that provider.
// Key values are never shown.
func (c *Config) CheckEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	errs := append(c.keyErrors(getenv), c.gatewayEnv(getenv)...)
	return sorted(append(errs, c.StoreEnv(getenv)...))
}

// StoreEnv reports the problems of the health store's settings that only
// the environment shows: a store_password_env that is not set, or that a
// store other than Redis would never read.
func (c *Config) StoreEnv(getenv func(string) string) Errors {
	env := c.Health.StorePasswordEnv
	if env == "" {
		return nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	const field = "health.store_password_env"
	pos := c.where(field, false)
	fail := func(sentinel error, format string, args ...any) Errors {
		return Errors{&Error{File: c.File, Line: pos.line, Column: pos.col, Field: field, Msg: fmt.Sprintf(format, args...), Err: sentinel}}
	}
	if c.Store().Kind != health.StoreRedis {
		return fail(nil, "only a redis:// store reads a password: set health.store to its URL, or leave store_password_env out")
	}
	if strings.TrimSpace(getenv(env)) == "" {
		return fail(ErrKeyUnset, "%s is not set (export the Redis password in it, or leave store_password_env out for a Redis with no password)", env)
	}
	return nil
}

// CheckServe reports what `detour serve` refuses in c beyond what Validate
// finds: the problems of CheckEnv, and a gateway.listen beyond loopback
// with no client keys (ListenError). `detour check` reports them, so the
// two agree. A nil getenv means os.Getenv.
func (c *Config) CheckServe(getenv func(string) string) error {
	var errs Errors
	errors.As(c.CheckEnv(getenv), &errs)
	if g := c.Gateway; g.Listen != "" {
		if _, _, err := net.SplitHostPort(g.Listen); err == nil {
			if err := ListenError(g.Listen, g); err != nil {
				pos := c.where("gateway.listen", false)
				errs = append(errs, &Error{File: c.File, Line: pos.line, Column: pos.col, Field: "gateway.listen", Msg: err.Error()})
			}
		}
	}
	return sorted(errs)
}

// sorted returns errs in file order, or nil when there are none.
func sorted(errs Errors) error {
	if len(errs) == 0 {
		return nil
	}
	sortErrors(errs)
	return errs
}

// keyErrors returns the problems of the provider keys getenv holds: each
// one shorter than MinKeyLen of a provider that is not Local.
func (c *Config) keyErrors(getenv func(string) string) Errors {
	var errs Errors
	for _, name := range c.keyedProviders() {
		p, _ := c.Provider(name)
		if e := c.shortKey(p, strings.TrimSpace(getenv(p.KeyEnv))); e != nil {
			errs = append(errs, e)
		}
	}
	return errs
}

// keyedProviders returns, sorted, the providers declared or used by a
// route whose key comes from a variable.
func (c *Config) keyedProviders() []string {
	names := map[string]bool{}
	for name := range c.Providers {
		names[name] = true
	}
	for _, r := range c.Routes {
		for _, addr := range r.Chain {
			if prov, _, ok := splitAddr(addr); ok {
				names[prov] = true
			}
		}
	}
	var out []string
	for _, name := range sortedKeys(names) {
		if p, ok := c.Provider(name); ok && p.KeyEnv != "" {
			out = append(out, name)
		}
	}
	return out
}

// shortKey returns the problem of provider p's key when it is set, shorter
// than MinKeyLen and p is not Local; nil otherwise.
func (c *Config) shortKey(p Provider, key string) *Error {
	if key == "" || len(key) >= MinKeyLen || p.Local() {
		return nil
	}
	field := child(child("providers", p.Name), "key_env")
	var pos position
	if _, declared := c.Providers[p.Name]; declared {
		pos = c.where(field, false) // a preset the file does not declare has no place in it
	}
	return &Error{File: c.File, Line: pos.line, Column: pos.col, Field: field, Err: ErrShortKey,
		Msg: fmt.Sprintf("%s holds a key of %s, and no real provider key is shorter than %d: "+
			"detour does not hide one that short in its logs and errors, so it could leak; check the variable "+
			"(export %s=THE_KEY); a local server that takes any key may keep a dummy one if the provider has "+
			"pool: local or a base_url on loopback", p.KeyEnv, characters(len(key)), MinKeyLen, p.KeyEnv)}
}

// characters returns "1 character" or "N characters".
func characters(n int) string {
	if n == 1 {
		return "1 character"
	}
	return fmt.Sprintf("%d characters", n)
}

// gatewayEnv returns the problems of the gateway: section's key variables.
func (c *Config) gatewayEnv(getenv func(string) string) Errors {
	var errs Errors
	fail := func(field string, sentinel error, format string, args ...any) {
		pos := c.where(field, false)
		errs = append(errs, &Error{File: c.File, Line: pos.line, Column: pos.col, Field: field,
			Msg: fmt.Sprintf(format, args...), Err: sentinel})
	}
	clients := map[[sha256.Size]byte]string{}
	for _, k := range c.Gateway.Keys {
		var sum [sha256.Size]byte
		switch {
		case k.KeyEnv != "":
			v := strings.TrimSpace(getenv(k.KeyEnv))
			if v == "" {
				fail(child(child(child("gateway", "keys"), k.Name), "key_env"), ErrKeyUnset,
					"%s is not set (export it, or give the key's sha256 instead): detour serve needs every client key", k.KeyEnv)
				continue
			}
			sum = sha256.Sum256([]byte(v))
		case k.SHA256 != "":
			if _, err := hex.Decode(sum[:], []byte(k.SHA256)); err != nil {
				continue // validation reports it
			}
		}
		clients[sum] = k.Name
	}
	for _, k := range []struct{ field, env, what string }{
		{"metrics_key_env", c.Gateway.MetricsKeyEnv, "/metrics"},
		{"admin_key_env", c.Gateway.AdminKeyEnv, "/admin/"},
	} {
		if k.env == "" {
			continue
		}
		v := strings.TrimSpace(getenv(k.env))
		if v == "" {
			fail("gateway."+k.field, ErrKeyUnset, "%s is not set (export it, or leave %s out)", k.env, k.field)
		} else if name, same := clients[sha256.Sum256([]byte(v))]; same {
			fail("gateway."+k.field, nil, "%s holds the key of client %q: give %s a key of its own", k.env, name, k.what)
		} else if len(v) < MinAdminKeyLen {
			fail("gateway."+k.field, ErrWeakKey, "%s holds a key of %s, and an admin key must have at least %d: "+
				"it guards %s and is guessed at over the network; make one with openssl rand -hex 16 and export %s=...",
				k.env, characters(len(v)), MinAdminKeyLen, k.what, k.env)
		}
	}
	return errs
}

// ListenError returns why `detour serve` refuses to listen on addr
// (host:port) for a gateway: g: nil when it may. Without client keys the
// gateway answers anyone who reaches it with the providers' keys, so it
// listens on loopback only (localhost or a loopback IP).
func ListenError(addr string, g Gateway) error {
	if len(g.Keys) > 0 || LoopbackAddr(addr) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without client keys: add gateway.keys to the config "+
		"(key_env or sha256), or listen on 127.0.0.1", addr)
}

// LoopbackAddr reports whether addr (host:port) listens on loopback only,
// as `detour serve` reads it for its listeners: the host is localhost or
// a loopback IP.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
