package gateway

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/router"
)

// What /admin/park and /admin/release take as "target", and the health
// keys each stands for (a target's health lives under three keys: its
// own, its account's and its endpoint's; see router.Target.HealthKeys):
//
//   - a configured target, "provider/model" (in a route's chain or under
//     targets:): park parks its own key; release releases all three, so
//     it gets traffic again whichever of them parked it;
//   - a provider's name ("groq"): park parks its account (every target
//     billed to its key); release releases its account, its endpoint and
//     the own keys of its targets (those configured, and those the store
//     holds: targets clients named directly), so that none of its targets
//     stays parked;
//   - a health key as GET /admin/health shows it ("account:groq",
//     "endpoint:api.groq.com:443", a target named directly by a client):
//     that key alone.
//
// Anything else is unknown: 404, never a park of a name no request reads.

// parkKeys returns the health keys name stands for, to park or release;
// an apiError (404) when name is none of the above.
func (s *Server) parkKeys(name string, park bool, now time.Time) ([]string, *apiError) {
	v := s.v()
	if v.knownTargets[name] {
		t, err := s.targetOf(v, name)
		if err != nil {
			return nil, badRequest("target", "%s", s.scrub(err.Error()))
		}
		if park {
			return []string{t.ID()}, nil
		}
		k := t.HealthKeys()
		return k[:], nil
	}
	if v.providers[name] {
		t, err := s.targetOf(v, name+"/-")
		if err != nil {
			return nil, badRequest("target", "%s", s.scrub(err.Error()))
		}
		if park {
			return []string{t.AccountKey()}, nil
		}
		return s.providerKeys(v, name, t, now), nil
	}
	if s.healthKeyKnown(v, name, now) {
		return []string{name}, nil
	}
	return nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_target", Param: "target",
		Message: "unknown target " + strconv.Quote(name) + ": name a configured target as provider/model (" +
			strings.Join(firstFew(slices.Sorted(maps.Keys(v.knownTargets))), ", ") + "), a provider (" +
			strings.Join(firstFew(slices.Sorted(maps.Keys(v.providers))), ", ") + "), or a key as GET /admin/health shows it"}
}

// targetOf returns the router.Target of addr: its entry in a route's
// chain, else the one the config makes of it alone.
func (s *Server) targetOf(v *view, addr string) (*router.Target, error) {
	for _, name := range v.routeNames {
		r := v.routes[name]
		for i := range r.Chain {
			if t := &r.Chain[i]; t.ID() == addr {
				return t, nil
			}
		}
	}
	r, err := v.file.TargetRoute(addr, v.buildOpts)
	if err != nil {
		return nil, err
	}
	return &r.Chain[0], nil
}

// healthKeyKnown reports whether key is a health key of a target in v's
// routes, or one the store holds now (parked, on trial, or counting
// failures).
func (s *Server) healthKeyKnown(v *view, key string, now time.Time) bool {
	for _, r := range v.routes {
		for i := range r.Chain {
			if k := r.Chain[i].HealthKeys(); slices.Contains(k[:], key) {
				return true
			}
		}
	}
	for _, e := range s.health.Snapshot(now) {
		if e.Key == key {
			return true
		}
	}
	return false
}

// providerKeys returns the keys a release of provider name frees: its
// account's and endpoint's (those of t, a target of it), then the keys of
// each of its configured targets, then the targets of it the store holds
// (named directly by clients), each once.
func (s *Server) providerKeys(v *view, name string, t *router.Target, now time.Time) []string {
	keys := []string{t.AccountKey(), t.EndpointKey()}
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(v.knownTargets)) {
		if !strings.HasPrefix(id, name+"/") {
			continue
		}
		if ct, err := s.targetOf(v, id); err == nil {
			for _, k := range ct.HealthKeys() {
				add(k)
			}
		}
	}
	for _, e := range s.health.Snapshot(now) {
		if strings.HasPrefix(e.Key, name+"/") {
			add(e.Key)
		}
	}
	return keys
}

// keptPark is a key a release left parked, and why.
type keptPark struct {
	Key    string    `json:"key"`
	State  string    `json:"state"`
	Until  time.Time `json:"until,omitzero"`
	Reason string    `json:"reason,omitempty"`
	// Why says what kept it: the store refused the write, or it reads
	// parked again after the release.
	Why string `json:"why"`
}

// releaseKeys releases every key of keys that is not closed, reads each
// again, and returns those it released and those it read still parked
// (kept), with why.
func (s *Server) releaseKeys(keys []string, now time.Time) (released []string, kept []keptPark) {
	released = []string{}
	for _, k := range keys {
		if s.health.Get(k, now).State == health.Closed {
			continue
		}
		err := s.health.Release(k, now)
		e := s.health.Get(k, now)
		if err == nil && e.State == health.Closed {
			released = append(released, k)
			continue
		}
		kp := keptPark{Key: k, State: string(e.State), Until: e.Until.UTC(), Reason: e.Reason}
		if e.State == health.Closed {
			kp.Until = time.Time{}
		}
		if err != nil {
			kp.Why = "the health store did not take the release: " + s.scrub(err.Error())
		} else {
			kp.Why = "the health store reads it " + string(e.State) + " again after the release: something parked it anew " +
				"(the store does not say what); release it again, or wait for its park to end"
		}
		kept = append(kept, kp)
	}
	return released, kept
}

// firstFew returns the first ten of names, and "..." when there are more.
func firstFew(names []string) []string {
	if len(names) > 10 {
		return append(names[:10:10], "...")
	}
	return names
}
