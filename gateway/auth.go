package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/time/rate"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/router"
)

// clientKey is one accepted client key, as the gateway keeps it: the digest,
// never the key. Read-only after New, except its limiters (safe for
// concurrent use).
type clientKey struct {
	name string
	hash [sha256.Size]byte
	// all is true when the key may use every route and target.
	all bool
	// routes are the routes the key may use; targets the provider/model
	// addresses (listed, or in an allowed route's chain).
	routes, targets map[string]bool
	// sem holds one token per request in flight; nil means no cap.
	sem chan struct{}
	// lim is the key's token bucket; nil means no cap.
	lim *rate.Limiter
	// spend is the key's daily spend ceiling; nil means none.
	spend []router.SpendLimit
}

// anonymous is the key of a gateway without keys: everything allowed.
var anonymous = &clientKey{name: "-", all: true}

// newClientKey makes the gateway's view of k; getenv reads KeyEnv.
func newClientKey(k config.ClientKey, getenv func(string) string, routes map[string]*router.Route) (*clientKey, error) {
	ck := &clientKey{name: k.Name}
	switch {
	case k.KeyEnv != "":
		v := strings.TrimSpace(getenv(k.KeyEnv))
		if v == "" {
			return nil, fmt.Errorf("gateway: client key %q: %s is not set (export it, or give the key's sha256 instead)", k.Name, k.KeyEnv)
		}
		ck.hash = sha256.Sum256([]byte(v))
	case k.SHA256 != "":
		b, err := hex.DecodeString(k.SHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("gateway: client key %q: sha256 is not 64 hex digits", k.Name)
		}
		copy(ck.hash[:], b)
	default:
		return nil, fmt.Errorf("gateway: client key %q has neither key_env nor sha256", k.Name)
	}
	ck.all = len(k.Routes) == 0 || slices.Contains(k.Routes, "*")
	if !ck.all {
		ck.routes, ck.targets = map[string]bool{}, map[string]bool{}
		for _, name := range k.Routes {
			if r, ok := routes[name]; ok {
				ck.routes[name] = true
				for i := range r.Chain {
					ck.targets[r.Chain[i].ID()] = true
				}
				continue
			}
			ck.targets[name] = true
		}
	}
	if k.MaxConcurrent > 0 {
		ck.sem = make(chan struct{}, k.MaxConcurrent)
	}
	if k.DailyCost > 0 {
		ck.spend = []router.SpendLimit{{Key: "key:" + k.Name, Limit: k.DailyCost}}
	}
	if k.RequestsPerMinute > 0 {
		burst := k.Burst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(float64(k.RequestsPerMinute)/60)))
		}
		ck.lim = rate.NewLimiter(rate.Limit(float64(k.RequestsPerMinute)/60), burst)
	}
	return ck, nil
}

// mayRoute reports whether k may use the configured route name.
func (k *clientKey) mayRoute(name string) bool { return k.all || k.routes[name] }

// mayTarget reports whether k may name the provider/model target addr.
func (k *clientKey) mayTarget(addr string) bool { return k.all || k.targets[addr] }

// presentedKey returns the key a request carries: "Authorization: Bearer
// KEY" (OpenAI SDKs, and current Anthropic SDKs), "x-api-key: KEY" (older
// Anthropic clients), "x-goog-api-key: KEY" (the Gen AI SDKs) or, on a
// path of the Gemini surface only, the query parameter key=KEY (Gemini's
// REST form).
func presentedKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	if k := strings.TrimSpace(r.Header.Get("X-Goog-Api-Key")); k != "" {
		return k
	}
	if _, _, gemini := geminiPath(r.URL.Path); gemini && r.URL.RawQuery != "" {
		return strings.TrimSpace(r.URL.Query().Get("key"))
	}
	return ""
}

// authenticate returns the client key r presents, or a 401. The digest of
// the presented key is compared with every configured digest in constant
// time, so neither the key nor which entry matched leaks through timing.
func (s *Server) authenticate(r *http.Request) (*clientKey, *apiError) {
	v := s.v()
	if len(v.keys) == 0 {
		return anonymous, nil
	}
	key := presentedKey(r)
	if key == "" {
		return nil, &apiError{Status: http.StatusUnauthorized, Code: "invalid_api_key", Reason: "unauthorized",
			Message: missingKey(r)}
	}
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i, k := range v.keys {
		if subtle.ConstantTimeCompare(sum[:], k.hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, &apiError{Status: http.StatusUnauthorized, Code: "invalid_api_key", Reason: "unauthorized",
			Message: "invalid API key: this key is not one of the gateway's client keys"}
	}
	return v.keys[found], nil
}

// missingKey is the message of a request without a key, in the words of
// its surface.
func missingKey(r *http.Request) string {
	if _, _, gemini := geminiPath(r.URL.Path); gemini {
		return "missing API key: send it as \"x-goog-api-key: KEY\" or the query parameter key=KEY"
	}
	return "missing API key: send it as \"Authorization: Bearer KEY\" or \"x-api-key: KEY\""
}

// keepLimits takes over the slots and rate of the key of the same name in
// prev when its limits did not change, so that a reload neither frees the
// slots of requests in flight nor refills the key's bucket.
func (k *clientKey) keepLimits(prev []*clientKey) {
	for _, p := range prev {
		if p.name != k.name {
			continue
		}
		if p.sem != nil && k.sem != nil && cap(p.sem) == cap(k.sem) {
			k.sem = p.sem
		}
		if p.lim != nil && k.lim != nil && p.lim.Limit() == k.lim.Limit() && p.lim.Burst() == k.lim.Burst() {
			k.lim = p.lim
		}
		return
	}
}
