package gateway_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/detourhq/detour/health"
	sim "github.com/detourhq/detour/simulate"
)

// /admin/park and /admin/release take what exists: a configured target,
// a provider (its account and endpoint), or a health key as
// /admin/health shows it; anything else is 404. A release frees every key
// that parks what it names, and says which it released: after a quota wall (insufficient_quota)
// parks account:p1, releasing "p1/m" or "p1" brings p1 back.
func TestAdmin_ParkReleaseTakeWhatExists(t *testing.T) {
	g := newReloadableWith(t, reloadYAML, nil,
		sim.Provider{Name: "p1", Script: sim.Faults(sim.InsufficientQuota, sim.OK, sim.InsufficientQuota, sim.OK)}, sim.Provider{Name: "p2"})
	chat := func() string {
		t.Helper()
		code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`)
		if code != 200 {
			t.Fatalf("chat: %d %s", code, body)
		}
		return body
	}
	for _, tt := range []struct{ path, target, want string }{
		{"/admin/park", "p9/m", `unknown target \"p9/m\": name a configured target as provider/model (p1/m, p2/m), a provider (p1, p2)`},
		{"/admin/park", "p1/typo", `unknown target \"p1/typo\"`},
		{"/admin/release", "p9", `unknown target \"p9\"`},
		{"/admin/release", "account:p9", `unknown target \"account:p9\"`},
	} {
		if code, body := g.do(t, "POST", tt.path, `{"target":"`+tt.target+`"}`); code != 404 || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s: %d %s, want 404 saying %s", tt.path, tt.target, code, body, tt.want)
		}
	}
	if _, body := g.do(t, "GET", "/admin/health", ""); !strings.Contains(body, `"parked": []`) {
		t.Fatalf("unknown names parked something: %s", body)
	}

	if body := chat(); !strings.Contains(body, "p2/m") {
		t.Fatalf("p1's wall: %s, want p2 to answer", body)
	}
	if _, body := g.do(t, "GET", "/admin/health", ""); !strings.Contains(body, `"key": "account:p1"`) {
		t.Fatalf("the wall did not park p1's account: %s", body)
	}
	code, body := g.do(t, "POST", "/admin/release", `{"target":"p1/m"}`)
	if code != 200 || !strings.Contains(body, `"released": [`+"\n"+`    "account:p1"`) {
		t.Fatalf("release p1/m: %d %s, want account:p1 released", code, body)
	}
	if body := chat(); !strings.Contains(body, "p1/m") {
		t.Fatalf("after releasing p1/m: %s, want p1 to answer", body)
	}

	if body := chat(); !strings.Contains(body, "p2/m") {
		t.Fatalf("p1's second wall: %s, want p2 to answer", body)
	}
	code, body = g.do(t, "POST", "/admin/release", `{"target":"p1"}`)
	if code != 200 || !strings.Contains(body, `"status": "released"`) || !strings.Contains(body, `"account:p1"`) {
		t.Fatalf("release p1: %d %s, want account:p1 released", code, body)
	}
	if body := chat(); !strings.Contains(body, "p1/m") {
		t.Fatalf("after releasing p1: %s, want p1 to answer", body)
	}
	if code, body := g.do(t, "POST", "/admin/release", `{"target":"p1"}`); code != 200 || !strings.Contains(body, `"status": "not parked"`) {
		t.Fatalf("release p1 again: %d %s, want nothing released", code, body)
	}

	code, body = g.do(t, "POST", "/admin/park", `{"target":"p1","for":"30m"}`)
	if code != 200 || !strings.Contains(body, `"keys": [`+"\n"+`    "account:p1"`+"\n  ]") {
		t.Fatalf("park p1: %d %s, want its account parked", code, body)
	}
	if code, body := g.do(t, "POST", "/admin/release", `{"target":"account:p1"}`); code != 200 || !strings.Contains(body, `"account:p1"`) {
		t.Fatalf("release account:p1, as /admin/health shows it: %d %s", code, body)
	}
}

// Releasing a provider frees every park its targets sit under: a wall of
// p1/m's own (a model not found parks the target, not the account) is
// released by {"target": "p1"}, and the next request goes to p1 again.
// So is a target of p1 a client named directly, which the store holds.
func TestAdmin_ReleaseProviderFreesItsTargets(t *testing.T) {
	g := newReloadableWith(t, reloadYAML, nil,
		sim.Provider{Name: "p1", Script: sim.Faults(sim.ModelNotFound, sim.ModelNotFound)}, sim.Provider{Name: "p2"})
	if code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`); code != 200 ||
		!strings.Contains(body, "p2/m") {
		t.Fatalf("p1's wall: %d %s, want p2 to answer", code, body)
	}
	if code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"p1/direct","messages":[{"role":"user","content":"hi"}]}`); code == 200 {
		t.Fatalf("p1/direct answered %s, want its wall", body)
	}
	_, body := g.do(t, "GET", "/admin/health", "")
	if !strings.Contains(body, `"key": "p1/m"`) || !strings.Contains(body, `"key": "p1/direct"`) || strings.Contains(body, `"key": "account:p1"`) {
		t.Fatalf("health %s, want p1/m and p1/direct parked, not p1's account", body)
	}
	code, body := g.do(t, "POST", "/admin/release", `{"target":"p1"}`)
	if code != 200 || !strings.Contains(body, `"status": "released"`) || !strings.Contains(body, `"p1/m"`) ||
		!strings.Contains(body, `"p1/direct"`) || strings.Contains(body, "not_released") {
		t.Fatalf("release p1: %d %s, want p1/m and p1/direct released", code, body)
	}
	if _, body := g.do(t, "GET", "/admin/health", ""); !strings.Contains(body, `"parked": []`) {
		t.Fatalf("after releasing p1: %s, want nothing parked", body)
	}
	sent := g.sim.Stats().Requests("p1", "")
	if code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`); code != 200 ||
		!strings.Contains(body, "p1/m") || g.sim.Stats().Requests("p1", "") != sent+1 {
		t.Fatalf("after releasing p1: %d %s, want p1 to answer", code, body)
	}
}

// A release that leaves a key parked says so, with 409, the key, its
// state and why: here the health store refuses the write, then (another
// writer) parks the key again at once. The park stands: the next request
// still skips p1.
func TestAdmin_ReleaseSaysWhatItDidNotRelease(t *testing.T) {
	st := &stubbornStore{}
	g := newReloadableHealth(t, reloadYAML, nil, health.NewWithStore(health.Settings{}, st), sim.Provider{Name: "p1"}, sim.Provider{Name: "p2"})
	if code, body := g.do(t, "POST", "/admin/park", `{"target":"p1","for":"30m","reason":"maintenance"}`); code != 200 {
		t.Fatalf("park p1: %d %s", code, body)
	}
	for _, tt := range []struct {
		mode   string
		target string
		why    string
	}{
		{"refuse", "p1/m", "the health store did not take the release: stubborn store: writes refused"},
		{"repark", "p1", "the health store reads it open again after the release"},
	} {
		st.set(tt.mode)
		code, body := g.do(t, "POST", "/admin/release", `{"target":"`+tt.target+`"}`)
		if code != 409 || !strings.Contains(body, `"status": "not released"`) || !strings.Contains(body, `"key": "account:p1"`) ||
			!strings.Contains(body, `"state": "open"`) || !strings.Contains(body, "parked by an operator: maintenance") ||
			!strings.Contains(body, tt.why) {
			t.Fatalf("%s: release %s: %d %s, want 409 naming account:p1, open, and %q", tt.mode, tt.target, code, body, tt.why)
		}
		if code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`); code != 200 ||
			!strings.Contains(body, "p2/m") || g.sim.Stats().Requests("p1", "") != 0 {
			t.Fatalf("%s: after a release that did not take: %d %s (p1 got %d), want p1 still skipped", tt.mode, code, body,
				g.sim.Stats().Requests("p1", ""))
		}
	}
	st.set("")
	if code, body := g.do(t, "POST", "/admin/release", `{"target":"p1/m"}`); code != 200 || !strings.Contains(body, `"status": "released"`) ||
		!strings.Contains(body, `"account:p1"`) {
		t.Fatalf("release with the store well: %d %s", code, body)
	}
}

// stubbornStore is a health store that, in mode "refuse", refuses every
// write that closes a key, and in mode "repark" takes it and parks the
// key again at once, as another writer would.
type stubbornStore struct {
	health.MemoryStore
	mu   sync.Mutex
	mode string // guarded by mu
}

func (s *stubbornStore) set(mode string) {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
}

func (s *stubbornStore) Update(key string, fn func(e *health.Entry) bool) error {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	refused := false
	err := s.MemoryStore.Update(key, func(e *health.Entry) bool {
		was := *e
		if !fn(e) {
			return false
		}
		if was.State == health.Open && e.State == health.Closed {
			switch mode {
			case "refuse":
				*e, refused = was, true
				return false
			case "repark":
				was.Generation = e.Generation + 1
				*e = was
			}
		}
		return true
	})
	if refused {
		return errors.New("stubborn store: writes refused")
	}
	return err
}
