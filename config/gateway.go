package config

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/detourhq/detour/internal/yamlnode"
	"github.com/detourhq/detour/router"
)

// The defaults of Gateway.
const (
	// DefaultListen is where `detour serve` listens when neither the file
	// nor --listen says: loopback only.
	DefaultListen = "127.0.0.1:8787"
	// DefaultMaxBody caps a request body: 8 MiB.
	DefaultMaxBody = 8 << 20
	// DefaultDrainTimeout bounds a graceful shutdown: streams still running
	// after it are ended with an error event.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultDrainDelay is how long a shutdown keeps serving with /readyz
	// answering 503, so load balancers stop sending before the listener
	// closes.
	DefaultDrainDelay = 5 * time.Second
	// DefaultBodyTimeout is how long a request body may take to arrive
	// after its headers.
	DefaultBodyTimeout = 60 * time.Second
	// DefaultWriteTimeout is how long one streamed write may wait for a
	// client that does not read.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultMaxDirectModels caps the distinct provider/model names not in
	// the config that clients may name, per provider.
	DefaultMaxDirectModels = 256
	// DefaultKeepAlive is how long a stream may stay silent before the
	// gateway sends a keep-alive comment (and, before the first token, its
	// response headers).
	DefaultKeepAlive = 15 * time.Second
)

// The fields of the gateway: section and of one client key.
var (
	gatewayFields = []string{"listen", "max_body", "body_timeout", "write_timeout", "drain_delay", "drain_timeout",
		"keepalive", "max_direct_models", "keys", "metrics_listen", "metrics_key_env",
		"idempotency_ttl", "idempotency_in_flight", "admin_key_env",
		"idempotency_max_records", "idempotency_max_bytes", "cache_max_answers", "cache_max_bytes", "buffered_max_bytes"}
	clientKeyFields = []string{"key_env", "sha256", "routes", "max_concurrent", "requests_per_minute", "burst", "daily_cost_limit"}
)

// Gateway is the gateway: section, read by `detour serve`: where it listens,
// which client keys it accepts and the limits it enforces. The zero value
// means every default (see WithDefaults): listen on DefaultListen, no client
// keys (then the gateway serves loopback clients only, without a key).
type Gateway struct {
	// Listen is the host:port to listen on. Empty means DefaultListen.
	Listen string
	// MaxBody caps a request body in bytes; a larger one gets 413. 0 means
	// DefaultMaxBody. Written as bytes or with a unit: 512KiB, 8MiB, 1MB.
	MaxBody int64
	// BodyTimeout is how long a request body may take to arrive after its
	// headers; 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// WriteTimeout is how long one streamed write may wait for a client
	// that does not read; 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// DrainDelay is how long a shutdown goes on serving every request, with
	// /readyz answering 503 "draining", before it stops accepting
	// connections: the time a load balancer needs to see it and send no
	// more. 0 means DefaultDrainDelay; negative means none (drain_delay: 0
	// in the file).
	DrainDelay time.Duration
	// DrainTimeout bounds a graceful shutdown once the listener is closed:
	// requests still running after it are cancelled. 0 means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// KeepAlive is the longest silence on a stream before a keep-alive
	// comment; 0 means DefaultKeepAlive.
	KeepAlive time.Duration
	// MaxDirectModels caps the distinct provider/model names not in the
	// config that clients may name directly, per provider; 0 means
	// DefaultMaxDirectModels.
	MaxDirectModels int
	// Keys are the client keys, sorted by name. Empty means no key is
	// asked for (loopback use only).
	Keys []ClientKey
	// MetricsListen, when set, is a host:port of its own where /metrics is
	// served (and the gateway's listener answers 404 for it). It must be on
	// loopback unless MetricsKeyEnv is set. Empty means /metrics is served
	// on the gateway's listener.
	MetricsListen string
	// MetricsKeyEnv names the environment variable holding the admin key
	// that /metrics asks for, wherever it is served, as "Authorization:
	// Bearer KEY". Empty means none: /metrics is then open on a loopback
	// MetricsListen, or on a gateway without client keys, and closed (403)
	// on a gateway that has client keys.
	MetricsKeyEnv string
	// AdminKeyEnv names the environment variable holding the admin key of
	// the /admin/ endpoints (reload, health, park, release), sent as
	// "Authorization: Bearer KEY". Empty means they answer loopback
	// clients only, with no key.
	AdminKeyEnv string
	// IdempotencyTTL is how long the answer to a request that carried an
	// Idempotency-Key header is kept and given again, with no new send, to
	// the same key with the same body. 0 means DefaultIdempotencyTTL;
	// negative means the header is not enforced (idempotency_ttl: 0).
	IdempotencyTTL time.Duration
	// IdempotencyConflict, when set (idempotency_in_flight: conflict),
	// answers 409 to a request whose key is in flight; otherwise
	// (idempotency_in_flight: wait, the default) it waits for the first
	// and gets its answer.
	IdempotencyConflict bool
	// IdempotencyMaxRecords and IdempotencyMaxBytes are the ceiling of the
	// kept Idempotency-Key answers, by count and by size (key and record,
	// in bytes): past either, the answers that expire soonest are evicted
	// (detour_records_evicted_total{store="idempotency"}), and a repeat
	// of an evicted key is served afresh, with a new send. A request in
	// flight is never evicted. 0 means DefaultIdempotencyMaxRecords and
	// DefaultIdempotencyMaxBytes.
	IdempotencyMaxRecords int
	IdempotencyMaxBytes   int64
	// CacheMaxAnswers and CacheMaxBytes are the ceiling of the answers
	// kept for routes' cache_answers, by count and by size, shared by
	// every route (router.Router.KeptAnswers): past either, the answers
	// that expire soonest are evicted
	// (detour_records_evicted_total{store="answers"}). 0 means
	// router.DefaultKeptAnswers and router.DefaultKeptAnswerBytes.
	CacheMaxAnswers int
	CacheMaxBytes   int64
	// BufferedMaxBytes caps the bytes that the streams of buffered routes
	// hold together, in this process (router.Buffers): past it a
	// buffered stream sends what it holds and streams the rest, as past
	// its route's max_buffer, and a new one streams at once
	// (detour_buffer_bypassed_total). 0 means DefaultBufferedMaxBytes.
	BufferedMaxBytes int64
}

// The defaults of the ceilings on what clients grow. Each bounds memory
// (or, in a shared store, the store) whatever clients send; the three
// together come to 160 MiB, what a small instance can spare beside its
// streams.
const (
	// DefaultIdempotencyMaxRecords: a client retries an Idempotency-Key
	// within seconds to minutes of its first send (a timeout, a
	// reconnect); ten thousand answers cover over a quarter of an hour of
	// distinct keys at 10 requests a second, oldest evicted first.
	DefaultIdempotencyMaxRecords = 10_000
	// DefaultIdempotencyMaxBytes: 64 MiB, 6.5 KiB an answer at the full
	// count (a chat answer's JSON is 1 to 10 KiB); a kept answer is at
	// most 4 MiB.
	DefaultIdempotencyMaxBytes = 64 << 20
	// DefaultBufferedMaxBytes: 64 MiB, sixteen streams at the default
	// max_buffer (4 MiB) or thousands of ordinary answers at once.
	DefaultBufferedMaxBytes = 64 << 20
)

// DefaultIdempotencyTTL is how long an idempotent answer is kept: a day,
// as payment APIs keep theirs.
const DefaultIdempotencyTTL = 24 * time.Hour

// WithDefaults returns g with every zero field set to its default.
func (g Gateway) WithDefaults() Gateway {
	if g.Listen == "" {
		g.Listen = DefaultListen
	}
	if g.MaxBody <= 0 {
		g.MaxBody = DefaultMaxBody
	}
	if g.BodyTimeout <= 0 {
		g.BodyTimeout = DefaultBodyTimeout
	}
	if g.WriteTimeout <= 0 {
		g.WriteTimeout = DefaultWriteTimeout
	}
	if g.MaxDirectModels <= 0 {
		g.MaxDirectModels = DefaultMaxDirectModels
	}
	if g.DrainDelay == 0 {
		g.DrainDelay = DefaultDrainDelay
	}
	if g.DrainTimeout <= 0 {
		g.DrainTimeout = DefaultDrainTimeout
	}
	if g.KeepAlive <= 0 {
		g.KeepAlive = DefaultKeepAlive
	}
	if g.IdempotencyTTL == 0 {
		g.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if g.IdempotencyMaxRecords <= 0 {
		g.IdempotencyMaxRecords = DefaultIdempotencyMaxRecords
	}
	if g.IdempotencyMaxBytes <= 0 {
		g.IdempotencyMaxBytes = DefaultIdempotencyMaxBytes
	}
	if g.CacheMaxAnswers <= 0 {
		g.CacheMaxAnswers = router.DefaultKeptAnswers
	}
	if g.CacheMaxBytes <= 0 {
		g.CacheMaxBytes = router.DefaultKeptAnswerBytes
	}
	if g.BufferedMaxBytes <= 0 {
		g.BufferedMaxBytes = DefaultBufferedMaxBytes
	}
	return g
}

// ClientKey is one key a client of the gateway presents (as
// "Authorization: Bearer KEY" or "x-api-key: KEY"). The key itself never
// goes in the file: either KeyEnv names the variable that holds it, or
// SHA256 is the hex SHA-256 of it (`printf %s "$KEY" | sha256sum`).
type ClientKey struct {
	// Name names the key in logs and metrics; the key is never shown.
	Name string
	// KeyEnv names the environment variable holding the key.
	KeyEnv string
	// SHA256 is the lowercase hex SHA-256 digest of the key.
	SHA256 string
	// Routes lists the routes (and provider/model targets) the key may use;
	// a target of an allowed route's chain may also be named directly.
	// Empty (or "*") means every route and target.
	Routes []string
	// MaxConcurrent caps the key's requests in flight; more get 429. 0
	// means no cap.
	MaxConcurrent int
	// RequestsPerMinute caps the key's request rate (a token bucket); 0
	// means no cap.
	RequestsPerMinute int
	// Burst is how many requests may come at once within the rate; 0 means
	// one second's worth (at least 1).
	Burst int
	// DailyCost caps what the key's requests spend in a UTC day, in USD;
	// 0 means no cap (router.Options.Spend).
	DailyCost float64
}

// word decodes one of words at path; a value that is none of them fails
// with the value, then explain (what it is not, and what each word does).
func (d *decoder) word(n ast.Node, path string, words []string, explain string) (string, bool) {
	v, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if !slices.Contains(words, v) {
		d.failf(n, path, "%s %s%s", quote(v), explain, didYouMean(v, words, ""))
		return "", false
	}
	return v, true
}

// gateway decodes the gateway: section.
func (d *decoder) gateway(n ast.Node) {
	pairs, _ := d.mapping(n, "gateway", "field")
	g := Gateway{}
	for _, p := range pairs {
		fp := child("gateway", p.key)
		d.mark(fp, p)
		switch p.key {
		case "listen":
			g.Listen, _ = d.str(p.val, fp)
		case "max_body":
			g.MaxBody, _ = d.size(p.val, fp, DefaultMaxBody)
		case "body_timeout":
			g.BodyTimeout, _ = d.duration(p.val, fp)
		case "write_timeout":
			g.WriteTimeout, _ = d.duration(p.val, fp)
		case "drain_delay":
			g.DrainDelay, _ = d.delay(p.val, fp, DefaultDrainDelay)
		case "drain_timeout":
			g.DrainTimeout, _ = d.duration(p.val, fp)
		case "metrics_listen":
			g.MetricsListen, _ = d.str(p.val, fp)
		case "metrics_key_env":
			g.MetricsKeyEnv, _ = d.str(p.val, fp)
		case "admin_key_env":
			g.AdminKeyEnv, _ = d.str(p.val, fp)
		case "keepalive":
			g.KeepAlive, _ = d.duration(p.val, fp)
		case "max_direct_models":
			g.MaxDirectModels, _ = d.integer(p.val, fp)
		case "idempotency_ttl":
			g.IdempotencyTTL, _ = d.delay(p.val, fp, DefaultIdempotencyTTL)
		case "idempotency_max_records":
			g.IdempotencyMaxRecords, _ = d.count(p.val, fp, DefaultIdempotencyMaxRecords)
		case "idempotency_max_bytes":
			g.IdempotencyMaxBytes, _ = d.size(p.val, fp, DefaultIdempotencyMaxBytes)
		case "cache_max_answers":
			g.CacheMaxAnswers, _ = d.count(p.val, fp, router.DefaultKeptAnswers)
		case "cache_max_bytes":
			g.CacheMaxBytes, _ = d.size(p.val, fp, router.DefaultKeptAnswerBytes)
		case "buffered_max_bytes":
			g.BufferedMaxBytes, _ = d.size(p.val, fp, DefaultBufferedMaxBytes)
		case "idempotency_in_flight":
			if v, ok := d.word(p.val, fp, []string{"wait", "conflict"},
				"is not what a repeat of a request in flight can get: write wait (it waits for the first one's answer) or conflict (it gets 409)"); ok {
				g.IdempotencyConflict = v == "conflict"
			}
		case "keys":
			keys, _ := d.mapping(p.val, fp, "key")
			for _, k := range keys {
				kp := child(fp, k.key)
				d.mark(kp, k)
				g.Keys = append(g.Keys, d.clientKey(k.key, kp, k.val))
			}
		default:
			d.unknown(p, "gateway", gatewayFields)
		}
	}
	slices.SortFunc(g.Keys, func(a, b ClientKey) int { return strings.Compare(a.Name, b.Name) })
	d.c.Gateway = g
}

// clientKey decodes one entry of gateway.keys.
func (d *decoder) clientKey(name, path string, n ast.Node) ClientKey {
	d.keyHint = "DETOUR_KEY_" + strings.TrimSuffix(envName(name), "_API_KEY")
	defer func() { d.keyHint = "PROVIDER_API_KEY" }()
	k := ClientKey{Name: name}
	pairs, _ := d.mapping(n, path, "field")
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "key_env":
			k.KeyEnv, _ = d.str(p.val, fp)
		case "sha256":
			s, _ := d.str(p.val, fp)
			k.SHA256 = strings.ToLower(strings.TrimSpace(s))
		case "routes":
			items, _ := d.list(p.val, fp, "[default, cheap]")
			for i, it := range items {
				ip := index(fp, i)
				d.c.pos[ip] = startPos(it)
				s, _ := d.str(it, ip)
				k.Routes = append(k.Routes, s)
			}
		case "max_concurrent":
			k.MaxConcurrent, _ = d.integer(p.val, fp)
		case "requests_per_minute":
			k.RequestsPerMinute, _ = d.integer(p.val, fp)
		case "burst":
			k.Burst, _ = d.integer(p.val, fp)
		case "daily_cost_limit":
			k.DailyCost, _ = d.dollars(p.val, fp)
		default:
			d.unknown(p, path, clientKeyFields)
		}
	}
	return k
}

// sizeRe matches a size with an optional unit.
var sizeRe = regexp.MustCompile(`^([0-9]+)\s*(B|KB|KiB|MB|MiB|GB|GiB)?$`)

// sizeUnits are the multipliers of sizeRe's units.
var sizeUnits = map[string]int64{"": 1, "B": 1, "KB": 1e3, "KiB": 1 << 10, "MB": 1e6, "MiB": 1 << 20,
	"GB": 1e9, "GiB": 1 << 30}

// size reads a positive byte count: a whole number, or text like "8MiB";
// def is the field's default, for messages.
func (d *decoder) size(n ast.Node, path string, def int64) (int64, bool) {
	n = d.resolve(n)
	var text string
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.StringNode:
		text = strings.TrimSpace(v.GetToken().Value)
	default:
		d.failf(n, path, "expected a size like 8MiB, got %s", yamlnode.Describe(n))
		return 0, false
	}
	m := sizeRe.FindStringSubmatch(text)
	if m == nil {
		d.failf(n, path, "%s is not a size: write bytes, or a number and a unit (B, KB, KiB, MB, MiB, GB, GiB), like 8MiB", quote(text))
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	unit := sizeUnits[m[2]]
	if err != nil || v > math.MaxInt64/unit {
		d.failf(n, path, "%s is too large", quote(text))
		return 0, false
	}
	if v == 0 {
		d.failf(n, path, "must be more than 0; leave the field out to take the default (%s)", SizeText(def))
		return 0, false
	}
	return v * unit, true
}

// count reads a ceiling's count: a whole number above 0 (a store that
// clients grow always has one); def is the default, for messages.
func (d *decoder) count(n ast.Node, path string, def int) (int, bool) {
	v, ok := d.integer(n, path)
	if ok && v <= 0 {
		d.failf(n, path, "must be more than 0 (what clients send always has a ceiling); leave the field out for the default (%d)", def)
		return 0, false
	}
	return v, ok
}

// delay reads a wait that 0 (or "0s") turns off, which it returns as -1;
// def is the default, for messages.
func (d *decoder) delay(n ast.Node, path string, def time.Duration) (time.Duration, bool) {
	n = d.resolve(n)
	text := ""
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		text = strings.TrimSpace(v.GetToken().Value)
		if f, err := strconv.ParseFloat(text, 64); err == nil && f == 0 {
			return -1, true
		}
		d.failf(n, path, "%s has no unit: write %q for seconds (units: ms, s, m, h), or 0 for none", text, text+"s")
		return 0, false
	case *ast.StringNode:
		text = strings.TrimSpace(v.Value)
	default:
		d.failf(n, path, "expected a duration like \"5s\" (or 0 for none), got %s", yamlnode.Describe(n))
		return 0, false
	}
	dur, err := time.ParseDuration(text)
	switch {
	case err != nil:
		d.failf(n, path, "%s is not a duration: write a number and a unit, like \"5s\" or \"500ms\", or 0 for none", quote(text))
		return 0, false
	case dur < 0:
		d.failf(n, path, "cannot be negative: write a duration like \"5s\", 0 for none, or leave the field out for the default (%s)", def)
		return 0, false
	case dur == 0:
		return -1, true
	}
	return dur, true
}

// hexDigest matches a lowercase hex SHA-256 digest.
var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// gateway checks the gateway: section.
func (v *validator) gateway(g Gateway) {
	if g.Listen != "" {
		if _, ok := hostPort(g.Listen); !ok {
			v.fail("gateway.listen", false, nil, "listen %s is not host:port: write it like 127.0.0.1:8787 (or :8787 for every interface)", quote(g.Listen))
		}
	}
	v.metrics(g)
	if g.MaxBody < 0 {
		v.fail("gateway.max_body", false, nil, "max_body cannot be negative")
	}
	if g.MaxDirectModels < 0 {
		v.fail("gateway.max_direct_models", false, nil, "max_direct_models cannot be negative; leave it out for the default (%d)", DefaultMaxDirectModels)
	}
	hashes := map[string]string{}
	for _, k := range g.Keys {
		path := child(child("gateway", "keys"), k.Name)
		if looksSecret(k.Name) || looksRandom(k.Name) {
			v.fail(path, true, ErrKeyInFile, "this key name looks like a key, and keys never go in this file: "+
				"name the key (app, ci, ...), export the key in the environment and write key_env: VAR in it")
			continue
		}
		v.clientKey(path, k, hashes)
	}
}

// hostPort splits addr into its host and reports whether addr is a valid
// host:port to listen on.
func hostPort(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	return host, err == nil && perr == nil && p >= 0 && p <= 65535 && !strings.ContainsAny(host, " /")
}

// metrics checks metrics_listen and metrics_key_env: a listener of its own
// that answers without a key must be on loopback, as the gateway's own
// listener must without client keys.
func (v *validator) metrics(g Gateway) {
	if g.MetricsKeyEnv != "" {
		switch path := "gateway.metrics_key_env"; {
		case looksSecret(g.MetricsKeyEnv) || looksRandom(g.MetricsKeyEnv):
			v.fail(path, false, ErrKeyInFile, "metrics_key_env takes the NAME of an environment variable, not the key: "+
				"delete the key from this file, export DETOUR_METRICS_KEY=... and write metrics_key_env: DETOUR_METRICS_KEY")
		case !envVar.MatchString(g.MetricsKeyEnv):
			v.fail(path, false, nil, "metrics_key_env %s is not an environment variable name: use letters, digits and _, like DETOUR_METRICS_KEY",
				quote(g.MetricsKeyEnv))
		}
	}
	if g.MetricsListen == "" {
		return
	}
	host, ok := hostPort(g.MetricsListen)
	switch {
	case !ok:
		v.fail("gateway.metrics_listen", false, nil, "metrics_listen %s is not host:port: write it like 127.0.0.1:9090", quote(g.MetricsListen))
	case g.MetricsKeyEnv == "" && !isLoopback(host):
		v.fail("gateway.metrics_listen", false, nil, "metrics_listen %s is beyond loopback and /metrics would answer anyone "+
			"there without a key: listen on loopback (like 127.0.0.1:9090), or set metrics_key_env to the variable holding "+
			"the key Prometheus must send as \"Authorization: Bearer KEY\"", quote(g.MetricsListen))
	}
}

// clientKey checks one client key; hashes maps each digest seen to its key.
func (v *validator) clientKey(path string, k ClientKey, hashes map[string]string) {
	hint := "DETOUR_KEY_" + strings.TrimSuffix(envName(k.Name), "_API_KEY")
	switch {
	case k.KeyEnv == "" && k.SHA256 == "":
		v.fail(path, true, nil, "the key needs key_env: VAR (the variable holding the key) or sha256: HEX "+
			"(its digest: printf %%s \"$KEY\" | sha256sum); the key itself never goes in this file")
	case k.KeyEnv != "" && k.SHA256 != "":
		v.fail(child(path, "sha256"), true, nil, "write key_env or sha256, not both")
	case k.KeyEnv != "" && (looksSecret(k.KeyEnv) || looksRandom(k.KeyEnv)):
		v.fail(child(path, "key_env"), false, ErrKeyInFile, "key_env takes the NAME of an environment variable, not the key: "+
			"delete the key from this file, export %s=... and write key_env: %s", hint, hint)
	case k.KeyEnv != "" && !envVar.MatchString(k.KeyEnv):
		v.fail(child(path, "key_env"), false, nil, "key_env %s is not an environment variable name: use letters, digits and _, like %s",
			quote(k.KeyEnv), hint)
	case k.SHA256 != "" && !hexDigest.MatchString(k.SHA256):
		v.fail(child(path, "sha256"), false, nil, "sha256 takes the 64 hex digits of the key's SHA-256 digest "+
			"(printf %%s \"$KEY\" | sha256sum), never the key itself")
	case k.SHA256 != "":
		if other, dup := hashes[k.SHA256]; dup {
			v.fail(child(path, "sha256"), false, nil, "the same digest as key %s: give each client its own key", quote(other))
		}
		hashes[k.SHA256] = k.Name
	}
	rp := child(path, "routes")
	for i, name := range k.Routes {
		if name == "*" {
			continue
		}
		if _, ok := v.c.Routes[name]; ok {
			continue
		}
		if prov, _, ok := splitAddr(name); ok {
			if _, known := v.c.Provider(prov); !known {
				v.fail(index(rp, i), false, ErrUnknownProvider, "%s", v.c.unknownProviderMsg(prov))
			}
			continue
		}
		v.fail(index(rp, i), false, ErrUnknownRoute, "unknown route %s%s; name a route, a provider/model target, or \"*\"",
			quote(name), didYouMean(name, v.c.RouteNames(), "routes"))
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"max_concurrent", k.MaxConcurrent}, {"requests_per_minute", k.RequestsPerMinute}, {"burst", k.Burst}} {
		if f.n < 0 {
			v.fail(child(path, f.name), false, nil, "%s cannot be negative; 0 (or leaving it out) means no cap", f.name)
		}
	}
}

// String returns the key's name and how it is given, never the key:
// "app (DETOUR_KEY_APP)" or "ci (sha256 3f2a…)".
func (k ClientKey) String() string {
	if k.KeyEnv != "" {
		return k.Name + " (" + k.KeyEnv + ")"
	}
	return fmt.Sprintf("%s (sha256 %.8s…)", k.Name, k.SHA256)
}
