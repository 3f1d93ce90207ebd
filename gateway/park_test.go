package gateway_test

import (
	"strings"
	"testing"

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
