package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// reloadable is a gateway whose config file is the text in file (p1's
// URL in place of %[1]s, p2's of %[2]s), read again on each reload.
type reloadable struct {
	ts   string
	gw   *gateway.Server
	sim  *sim.Server
	book *ledger.Memory
	logs *syncBuffer // the gateway's log
	mu   sync.Mutex
	file string
}

func (g *reloadable) set(text string) {
	g.mu.Lock()
	g.file = text
	g.mu.Unlock()
}

func newReloadable(t *testing.T, text string, env map[string]string) *reloadable {
	t.Helper()
	return newReloadableWith(t, text, env, sim.Provider{Name: "p1", Script: []sim.Fault{{Kind: sim.OK, Pieces: 40}},
		Latency: sim.Latency{PerChunk: 10 * time.Millisecond}}, sim.Provider{Name: "p2"})
}

// newReloadableWith is newReloadable with upstreams p1 and p2 of its own.
func newReloadableWith(t *testing.T, text string, env map[string]string, p1, p2 sim.Provider) *reloadable {
	t.Helper()
	return newReloadableHealth(t, text, env, nil, p1, p2)
}

// newReloadableHealth is newReloadableWith keeping health in hb (nil: a
// breaker in memory).
func newReloadableHealth(t *testing.T, text string, env map[string]string, hb *health.Breaker, p1, p2 sim.Provider) *reloadable {
	t.Helper()
	srv, err := sim.Start(p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	g := &reloadable{sim: srv, book: &ledger.Memory{}, logs: &syncBuffer{}, file: text}
	read := func() (*config.Config, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		urls := strings.NewReplacer("%[1]s", srv.BaseURL("p1"), "%[2]s", srv.BaseURL("p2"))
		return config.Parse("detour.yaml", []byte(urls.Replace(g.file)))
	}
	cfg, err := read()
	if err != nil {
		t.Fatal(err)
	}
	g.gw, err = gateway.New(gateway.Config{File: cfg, Ledger: g.book, Reread: read, Getenv: func(k string) string { return env[k] }, Health: hb,
		Logger: slog.New(slog.NewTextHandler(g.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(g.gw)
	t.Cleanup(ts.Close)
	g.ts = ts.URL
	return g
}

const reloadYAML = `providers:
  p1: {dialect: openai, base_url: "%[1]s", key_env: ""}
  p2: {dialect: openai, base_url: "%[2]s", key_env: ""}
routes:
  default: {chain: [p1/m, p2/m]}
`

func (g *reloadable) do(t *testing.T, method, path, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, g.ts+path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A reload swaps the routes; a broken config is refused and the old one
// keeps serving; a stream in flight finishes on the config it started on.
func TestAdmin_ReloadKeepsServing(t *testing.T) {
	g := newReloadable(t, reloadYAML, nil)
	chat := func(model string) (int, string) {
		return g.do(t, "POST", "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
	}
	// A slow stream starts on the first config (p1's 40 pieces, 10 ms apart).
	streamed := make(chan string, 1)
	go func() {
		_, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		streamed <- body
	}()
	waitFor(t, "the stream to reach p1", func() bool { return g.sim.Stats().Requests("p1", "") == 1 })

	g.set("providers: [broken\n")
	code, body := g.do(t, "POST", "/admin/reload", "")
	if code != 400 || !strings.Contains(body, "not reloaded") || !strings.Contains(body, "detour.yaml") {
		t.Fatalf("a broken config: %d %s, want 400 saying why", code, body)
	}
	if code, body := chat("default"); code != 200 {
		t.Fatalf("after a refused reload: %d %s", code, body)
	}

	g.set(strings.Replace(reloadYAML, "default: {chain: [p1/m, p2/m]}", "fresh: {chain: [p2/m]}", 1))
	code, body = g.do(t, "POST", "/admin/reload", "")
	if code != 200 || !strings.Contains(body, `"reloaded"`) {
		t.Fatalf("a good config: %d %s", code, body)
	}
	if code, body := chat("fresh"); code != 200 || !strings.Contains(body, "p2/m") {
		t.Fatalf("the new route: %d %s", code, body)
	}
	if code, _ := chat("default"); code != 404 {
		t.Fatalf("the removed route answered %d, want 404", code)
	}
	select {
	case body := <-streamed:
		if !strings.Contains(body, "data: [DONE]") || strings.Contains(body, `"error"`) {
			t.Fatalf("the stream begun before the reload did not finish whole: %q", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream begun before the reload never ended")
	}
}

// Park and release by hand; /admin/health shows who is parked, until when
// and why; the admin key guards it all when one is set.
func TestAdmin_ParkReleaseHealth(t *testing.T) {
	g := newReloadable(t, reloadYAML+"gateway:\n  admin_key_env: ADMIN_KEY\n", map[string]string{"ADMIN_KEY": "admin-key-for-tests-0001"})
	auth := []string{"Authorization", "Bearer admin-key-for-tests-0001"}
	if code, _ := g.do(t, "GET", "/admin/health", ""); code != 401 {
		t.Fatalf("/admin/health without the key: %d", code)
	}
	code, body := g.do(t, "POST", "/admin/park", `{"target":"p1/m","for":"30m","reason":"bad answers today"}`, auth...)
	if code != 200 || !strings.Contains(body, `"parked"`) {
		t.Fatalf("park: %d %s", code, body)
	}
	code, body = g.do(t, "GET", "/admin/health", "", auth...)
	if code != 200 || !strings.Contains(body, `"key": "p1/m"`) || !strings.Contains(body, "parked by an operator: bad answers today") {
		t.Fatalf("health: %d %s", code, body)
	}
	if code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`); code != 200 ||
		!strings.Contains(body, "p2/m") || g.sim.Stats().Requests("p1", "") != 0 {
		t.Fatalf("a request with p1 parked by hand: %d %s (p1 got %d)", code, body, g.sim.Stats().Requests("p1", ""))
	}
	if recs := g.book.Records(); len(recs) == 0 || recs[0].Status != ledger.StatusSkippedParked {
		t.Fatalf("ledger %+v, want p1 skipped as parked", recs)
	}
	if code, _ := g.do(t, "POST", "/admin/release", `{"target":"p1/m"}`, auth...); code != 200 {
		t.Fatalf("release: %d", code)
	}
	if code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`); code != 200 ||
		!strings.Contains(body, "p1/m") {
		t.Fatalf("after release: %d %s", code, body)
	}
	if code, body := g.do(t, "POST", "/admin/park", `{"target":"p1/m","for":"soon"}`, auth...); code != 400 || !strings.Contains(body, "30m") {
		t.Fatalf("a bad duration: %d %s", code, body)
	}
}

// A kill switch at run time: a reload that turns p1 off sends nothing more
// to it; the ledger names the setting.
func TestAdmin_ReloadTurnsATargetOff(t *testing.T) {
	g := newReloadable(t, reloadYAML, nil)
	g.set(strings.Replace(reloadYAML, `p1: {dialect: openai, base_url: "%[1]s", key_env: ""}`,
		`p1: {dialect: openai, base_url: "%[1]s", key_env: "", disabled: true}`, 1))
	if code, body := g.do(t, "POST", "/admin/reload", ""); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	code, body := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 || !strings.Contains(body, "p2/m") || g.sim.Stats().Requests("p1", "") != 0 {
		t.Fatalf("with p1 off: %d %s (p1 got %d)", code, body, g.sim.Stats().Requests("p1", ""))
	}
	if recs := g.book.Records(); len(recs) != 2 || recs[0].Status != ledger.StatusSkippedDisabled ||
		!strings.Contains(recs[0].Reason, "providers.p1.disabled") {
		t.Fatalf("ledger %+v", recs)
	}
}
