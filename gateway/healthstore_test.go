package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/redisstore"
	"github.com/detourhq/detour/internal/redistest"
)

// /readyz and detour_health_store_up say how the health store is: a Redis
// that goes away leaves the gateway ready (it serves on its own memory)
// and says so.
func TestReadyz_ReportsTheHealthStore(t *testing.T) {
	rs := redistest.Start(t)
	st, err := redisstore.Open(redisstore.Options{URL: rs.URL(), Namespace: "readyz", PingEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	waitFor(t, "the store to be up", func() bool { return st.Status().Up })
	f := newFixture(t, withMetricsKey(setup{health: health.NewWithStore(health.Settings{}, st)}))

	ready := func() (int, health.Status) {
		resp, err := http.Get(f.ts.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body struct {
			Status string        `json:"status"`
			Store  health.Status `json:"health_store"`
		}
		if err := json.Unmarshal(b, &body); err != nil || body.Status != "ready" {
			t.Fatalf("/readyz body %s: %v", b, err)
		}
		return resp.StatusCode, body.Store
	}
	if code, s := ready(); code != 200 || s.Kind != "redis" || !s.Up || s.Where != rs.Addr+"/0" {
		t.Fatalf("/readyz with Redis up: %d %+v", code, s)
	}
	if m, _ := scrape(t, f); m[`detour_health_store_up{kind="redis"}`] != 1 {
		t.Fatalf("detour_health_store_up with Redis up = %v", m[`detour_health_store_up{kind="redis"}`])
	}

	rs.Stop()
	waitFor(t, "the store to see Redis gone", func() bool { return !st.Status().Up })
	if code, s := ready(); code != 200 || s.Up || s.Detail == "" {
		t.Fatalf("/readyz with Redis down: %d %+v, want 200, up false and why", code, s)
	}
	if m, _ := scrape(t, f); m[`detour_health_store_up{kind="redis"}`] != 0 {
		t.Fatalf("detour_health_store_up with Redis down = %v", m[`detour_health_store_up{kind="redis"}`])
	}
	if resp, body := f.post("/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("a request with the store down: %d %s", resp.StatusCode, body)
	}
}
