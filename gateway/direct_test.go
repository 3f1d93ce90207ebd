package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
)

// A client that names 100,000 made-up models of a configured provider
// leaves bounded state behind: the first models each cost a send (a 404
// that parks the name, as a model not found does), and past the cap
// (gateway.max_direct_models) the name is refused before any send, with
// the cap named. The health store holds no more than the cap.
func TestDirectModels_MadeUpNamesLeaveBoundedState(t *testing.T) {
	var sends atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sends.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"The model does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`)
	}))
	defer up.Close()
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(`providers:
  up: {dialect: openai, base_url: %s/v1, key_env: UP_KEY}
routes:
  main: {chain: [up/real-model]}
`, up.URL)))
	if err != nil {
		t.Fatal(err)
	}
	st := &health.MemoryStore{}
	gw, err := gateway.New(gateway.Config{File: cfg, Ledger: &ledger.Memory{}, Health: health.NewWithStore(health.Settings{}, st),
		Getenv: func(k string) string { return map[string]string{"UP_KEY": upstreamKey}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	const names = 100_000
	var last *httptest.ResponseRecorder
	for i := range names {
		body := `{"model":"up/made-up-` + fmt.Sprint(i) + `","messages":[{"role":"user","content":"hi"}]}`
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		last = httptest.NewRecorder()
		gw.ServeHTTP(last, r)
	}
	if n := sends.Load(); n != gateway.DefaultMaxDirectModels {
		t.Errorf("%d sends upstream, want one per model under the cap (%d)", n, gateway.DefaultMaxDirectModels)
	}
	if n := st.Len(); n > gateway.DefaultMaxDirectModels+4 {
		t.Errorf("the health store holds %d entries after %d made-up names, want at most the cap %d (and a few keys of the account and host)",
			n, names, gateway.DefaultMaxDirectModels)
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(last.Body.Bytes(), &e); err != nil || last.Code != http.StatusBadRequest ||
		e.Error.Code != "too_many_models" || !strings.Contains(e.Error.Message, "max_direct_models") {
		t.Errorf("past the cap: %d %s, want 400 too_many_models naming gateway.max_direct_models", last.Code, last.Body)
	}
	// A model of the config is no made-up name: it still goes upstream.
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"up/real-model","messages":[{"role":"user","content":"hi"}]}`))
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, r)
	if n := sends.Load(); n != gateway.DefaultMaxDirectModels+1 {
		t.Errorf("the configured target was not sent (%d sends): %d %s", n, w.Code, w.Body)
	}
}
