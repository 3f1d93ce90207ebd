package redisstore

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/detourhq/detour/health"
)

// Options configure Open. Only URL is required.
type Options struct {
	// URL is the server: redis://[user[:password]@]host:port/db, or
	// rediss:// for TLS.
	URL string
	// Password, when set, overrides the URL's password. The caller reads
	// it from an environment variable, so that it never sits in a file.
	Password string
	// Namespace is the deployment's name: replicas sharing one namespace
	// share breaker state. Keys are detour:NAMESPACE:health:KEY. Default
	// "detour"; letters, digits, '.', '-' and '_', at most 64.
	Namespace string
	// Forget is the breaker's Settings.Forget: Redis drops an entry that
	// long after the last of its write, its park and its probe. 0 means
	// health.DefaultForget.
	Forget time.Duration
	// OpTimeout bounds each Update's work with Redis (the request path).
	// When it passes, the store is taken as down and serves from local
	// memory. Default 50 ms.
	OpTimeout time.Duration
	// PingEvery is how often the background goroutine checks Redis, and
	// while it is down, tries to get it back. Default 500 ms.
	PingEvery time.Duration
	// ResyncEvery is how often the local cache is reloaded from Redis in
	// full, a safety net beside pub/sub. Default 5 s.
	ResyncEvery time.Duration
	// Logger receives one warning when Redis becomes unreachable and one
	// line when it is back. nil discards.
	Logger *slog.Logger
	// OnChange, when set, is called with false each time the store goes
	// down and with true each time it comes up (the first connection
	// included), never twice in a row with the same value. It runs
	// synchronously, maybe on a request's goroutine: it must be quick and
	// must not call the Store.
	OnChange func(up bool)
	// Now is the clock of the background work (when to resync), and what
	// an entry with no Touched counts its expiry from. nil means
	// time.Now. It is never compared with entry times: those come from
	// the breaker's callers, whose clock may differ.
	Now func() time.Time
}

// The defaults of Options.
const (
	DefaultNamespace   = "detour"
	DefaultOpTimeout   = 50 * time.Millisecond
	DefaultPingEvery   = 500 * time.Millisecond
	DefaultResyncEvery = 5 * time.Second
)

// config is Options checked, with defaults in.
type config struct {
	redis       *redis.Options
	where       string // host:port/db, for Status
	display     string // redis://host:port, for log lines
	prefix      string // detour:NS:health: ; an entry's key follows
	probeKey    string // detour:NS:health ; never an entry's key
	leasePrefix string // detour:NS:lease: ; a key's write lease (casScript)
	recPrefix   string // detour:NS:rec: ; a record (health.Records)
	channel     string // detour:NS:health:changes
	forget      time.Duration
	opTimeout   time.Duration
	bgTimeout   time.Duration // each background call: ping, scan
	pingEvery   time.Duration
	resyncEvery time.Duration
	log         *slog.Logger
	onChange    func(bool)
	now         func() time.Time
}

// resolve checks o and fills in its defaults.
func (o Options) resolve() (config, error) {
	if o.URL == "" {
		return config{}, errors.New("redisstore: no URL: set Options.URL to redis://host:6379/0 (rediss:// for TLS)")
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password and all
		}
		return config{}, fmt.Errorf("redisstore: the URL does not parse (%v): write it like redis://host:6379/0", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return config{}, fmt.Errorf("redisstore: URL scheme %q: use redis:// (or rediss:// for TLS), like redis://host:6379/0", u.Scheme)
	}
	ro, err := redis.ParseURL(o.URL)
	if err != nil {
		return config{}, fmt.Errorf("redisstore: URL %s: %v: write it like redis://host:6379/0", u.Redacted(), err)
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if !validNamespace(ns) {
		return config{}, fmt.Errorf("redisstore: namespace %q: use 1 to 64 letters, digits, '.', '-' or '_'", ns)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Forget", o.Forget}, {"OpTimeout", o.OpTimeout}, {"PingEvery", o.PingEvery}, {"ResyncEvery", o.ResyncEvery}} {
		if d.v < 0 {
			return config{}, fmt.Errorf("redisstore: %s is %s: use a positive duration, or 0 for the default", d.name, d.v)
		}
	}
	c := config{
		where:       ro.Addr + "/" + strconv.Itoa(ro.DB),
		display:     u.Scheme + "://" + ro.Addr,
		prefix:      "detour:" + ns + ":health:",
		probeKey:    "detour:" + ns + ":health",
		leasePrefix: "detour:" + ns + ":lease:",
		recPrefix:   "detour:" + ns + ":rec:",
		channel:     "detour:" + ns + ":health:changes",
		forget:      orDefault(o.Forget, health.DefaultForget),
		opTimeout:   orDefault(o.OpTimeout, DefaultOpTimeout),
		pingEvery:   orDefault(o.PingEvery, DefaultPingEvery),
		resyncEvery: orDefault(o.ResyncEvery, DefaultResyncEvery),
		log:         o.Logger,
		onChange:    o.OnChange,
		now:         o.Now,
	}
	c.bgTimeout = max(2*c.opTimeout, 250*time.Millisecond)
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if o.Password != "" {
		ro.Password = o.Password
	}
	// No retries: a script retried after a lost reply could apply twice.
	// The request path is bounded by its context (OpTimeout); the socket
	// timeouts bound the background calls.
	ro.MaxRetries = -1
	ro.DialTimeout = max(c.opTimeout, 200*time.Millisecond)
	ro.DialerRetries = 1
	ro.ReadTimeout = c.bgTimeout
	ro.WriteTimeout = c.bgTimeout
	ro.PoolTimeout = c.bgTimeout
	ro.ContextTimeoutEnabled = true
	ro.DisableIdentity = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c.redis = ro
	return c, nil
}

// validNamespace reports whether ns can go in a key: the same rule as the
// config's health.namespace, and no glob character for SCAN MATCH.
func validNamespace(ns string) bool {
	if ns == "" || len(ns) > 64 {
		return false
	}
	for _, r := range ns {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
