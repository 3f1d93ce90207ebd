package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/detourhq/detour/gateway"
)

// guardedYAML is reloadYAML behind client keys, an admin key and a
// metrics key, on a listener beyond loopback.
const guardedYAML = reloadYAML + `gateway:
  listen: 0.0.0.0:8787
  admin_key_env: ADMIN_KEY
  metrics_key_env: METRICS_KEY
  keys:
    app:
      key_env: APP_KEY
      routes: [default]
      max_concurrent: 4
    ci:
      key_env: CI_KEY
      requests_per_minute: 600
      daily_cost_limit: 5
`

// guardedEnv holds the keys of guardedYAML.
var guardedEnv = map[string]string{"ADMIN_KEY": "admin-key-for-tests-0001", "METRICS_KEY": "metrics-key-for-tests-01",
	"APP_KEY": "app-key-for-tests-000001", "CI_KEY": "ci-key-for-tests-0000001"}

// bearerOf returns the header pair that sends key.
func bearerOf(key string) []string { return []string{"Authorization", "Bearer " + key} }

// firstHalf returns text cut after the last whole line of its first half:
// what a write that is not atomic leaves when a reload reads it midway.
func firstHalf(text string) string {
	half := text[:len(text)/2]
	return half[:strings.LastIndexByte(half, '\n')+1]
}

// The config file cut to its first half, or emptied, parses: what is cut
// off is missing, the keys first. On a listener beyond loopback such a
// reload is refused with 409 and logged at ERROR, even told to allow
// removals: no key would be left. The gateway keeps every key, and a
// request with no key still gets 401. (On loopback the same files are
// refused as removals: cli's TestServe_SIGHUPRefusesAFileCutShortOrEmptied.)
func TestAdmin_ReloadRefusesAFileCutShortOrEmptied(t *testing.T) {
	for _, tt := range []struct{ name, text, says string }{
		{"cut to its first half", firstHalf(guardedYAML), `client key \"app\" is gone`},
		{"emptied", "", "every route is gone (default)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newReloadable(t, guardedYAML, guardedEnv)
			admin := bearerOf(guardedEnv["ADMIN_KEY"])
			chat := func(header ...string) int {
				code, _ := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, header...)
				return code
			}
			g.set(tt.text)
			code, body := g.do(t, "POST", "/admin/reload", "", admin...)
			if code != 409 || !strings.Contains(body, "reload_opens") || !strings.Contains(body, tt.says) {
				t.Fatalf("reload: %d %s, want 409 saying %s", code, body, tt.says)
			}
			if logs := g.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "config not reloaded") {
				t.Errorf("the refusal is not logged at ERROR:\n%s", logs)
			}
			if code := chat(); code != 401 {
				t.Errorf("a request with no key after the refused reload: %d, want 401", code)
			}
			if code := chat(bearerOf(guardedEnv["APP_KEY"])...); code != 200 {
				t.Errorf("a request with a client key after the refused reload: %d, want 200", code)
			}
			code, body = g.do(t, "POST", "/admin/reload?allow_removals=true", "", admin...)
			if code != 409 || !strings.Contains(body, "reload_opens") || !strings.Contains(body, "0.0.0.0:8787") {
				t.Fatalf("removals allowed: %d %s, want 409: no key would be left beyond loopback", code, body)
			}
			if code := chat(); code != 401 {
				t.Errorf("a request with no key after the reload allowed to remove: %d, want 401", code)
			}
		})
	}
}

// Revoking a key is a removal the operator means: refused as it comes,
// taken with allow_removals=true; then the revoked key gets 401 and the
// other goes on.
func TestAdmin_ReloadRevokesAKeyWhenTold(t *testing.T) {
	g := newReloadable(t, guardedYAML, guardedEnv)
	admin := bearerOf(guardedEnv["ADMIN_KEY"])
	chat := func(key string) int {
		code, _ := g.do(t, "POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, bearerOf(key)...)
		return code
	}
	g.set(guardedYAML[:strings.Index(guardedYAML, "    ci:\n")])
	if code, body := g.do(t, "POST", "/admin/reload", "", admin...); code != 409 || !strings.Contains(body, `client key \"ci\" is gone`) {
		t.Fatalf("a reload that revokes ci: %d %s, want 409 naming it", code, body)
	}
	if code := chat(guardedEnv["CI_KEY"]); code != 200 {
		t.Fatalf("ci after the refused reload: %d, want 200", code)
	}
	if code, body := g.do(t, "POST", "/admin/reload?allow_removals=maybe", "", admin...); code != 400 || !strings.Contains(body, "write true") {
		t.Fatalf("allow_removals=maybe: %d %s, want 400", code, body)
	}
	if code, body := g.do(t, "POST", "/admin/reload?allow_removals=true", "", admin...); code != 200 {
		t.Fatalf("the revocation, told: %d %s", code, body)
	}
	if code := chat(guardedEnv["CI_KEY"]); code != 401 {
		t.Errorf("the revoked key: %d, want 401", code)
	}
	if code := chat(guardedEnv["APP_KEY"]); code != 200 {
		t.Errorf("the key kept: %d, want 200", code)
	}
}

// swap returns an edit of a config's text that replaces from with to,
// each pair in turn (to "": the lines are cut).
func swap(pairs ...string) func(t *testing.T, text string) string {
	return func(t *testing.T, text string) string {
		t.Helper()
		for i := 0; i+1 < len(pairs); i += 2 {
			if !strings.Contains(text, pairs[i]) {
				t.Fatalf("the config has no %q", pairs[i])
			}
			text = strings.Replace(text, pairs[i], pairs[i+1], 1)
		}
		return text
	}
}

// Each removal a cut file can make is refused by ReloadFile itself, the
// function SIGHUP calls, as by /admin/reload; a change that removes
// nothing is taken.
func TestReloadFile_RefusesEveryRemoval(t *testing.T) {
	keys := guardedYAML[strings.Index(guardedYAML, "  keys:\n"):]
	for _, tt := range []struct {
		name  string
		edit  func(*testing.T, string) string
		want  string
		opens bool // even allowed to remove, it is refused
	}{
		{"a key's routes list", swap("      routes: [default]\n", ""), `client key "app"'s routes: list is gone (it could use every route)`, false},
		{"a key's max_concurrent", swap("      max_concurrent: 4\n", ""), `client key "app"'s max_concurrent is gone`, false},
		{"a key's requests_per_minute", swap("      requests_per_minute: 600\n", ""), `client key "ci"'s requests_per_minute is gone`, false},
		{"a key's daily_cost_limit", swap("      daily_cost_limit: 5\n", ""), `client key "ci"'s daily_cost_limit is gone`, false},
		{"the admin key", swap("  admin_key_env: ADMIN_KEY\n", ""), "gateway.admin_key_env is gone", false},
		{"the metrics key", swap("  metrics_key_env: METRICS_KEY\n", ""), "gateway.metrics_key_env is gone", false},
		{"every route", swap("  default: {chain: [p1/m, p2/m]}\n", "", "routes: [default]", "routes: [p1/m]"),
			"every route is gone (default)", false},
		{"every key", swap(keys, ""), `client key "app" is gone; client key "ci" is gone`, true},
		{"nothing: limits raised", swap("      max_concurrent: 4\n", "      max_concurrent: 8\n      burst: 3\n"), "", false},
		{"nothing: a key added", swap("  keys:\n", "  keys:\n    web: {key_env: APP_KEY2}\n"), "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"APP_KEY2": "web-key-for-tests-000001"}
			for k, v := range guardedEnv {
				env[k] = v
			}
			g := newReloadable(t, guardedYAML, env)
			g.set(tt.edit(t, guardedYAML))
			_, err := g.gw.ReloadFile(gateway.ReloadOptions{})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ReloadFile: %v, want it taken", err)
				}
				return
			}
			var re *gateway.ReloadError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) ||
				errors.Is(err, gateway.ErrReloadRemoves) == tt.opens {
				t.Fatalf("ReloadFile: %v, want a ReloadError saying %s (opens: %v)", err, tt.want, tt.opens)
			}
			_, err = g.gw.ReloadFile(gateway.ReloadOptions{AllowRemovals: true})
			if tt.opens != errors.Is(err, gateway.ErrReloadOpens) || (!tt.opens && err != nil) {
				t.Fatalf("ReloadFile allowed to remove: %v (want ErrReloadOpens: %v)", err, tt.opens)
			}
		})
	}
}

// The open rule reads the address the gateway listens on, not the
// file's: a gateway whose file says 0.0.0.0 but that Serves on loopback
// may drop its last key when told to.
func TestReloadFile_OpenRuleReadsTheListener(t *testing.T) {
	g := newReloadable(t, guardedYAML, guardedEnv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.gw.Serve(ln)                                         //nolint:errcheck // closed by Shutdown
	t.Cleanup(func() { g.gw.Shutdown(context.Background()) }) //nolint:errcheck // the test is over
	waitFor(t, "Serve to take the listener", func() bool {
		resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	g.set(reloadYAML)
	if _, err := g.gw.ReloadFile(gateway.ReloadOptions{}); !errors.Is(err, gateway.ErrReloadRemoves) {
		t.Fatalf("every key dropped, not told: %v, want ErrReloadRemoves", err)
	}
	if _, err := g.gw.ReloadFile(gateway.ReloadOptions{AllowRemovals: true}); err != nil {
		t.Fatalf("every key dropped on a loopback listener, told: %v", err)
	}
	if !g.gw.Keyless() {
		t.Error("the gateway still asks for a key")
	}
}
