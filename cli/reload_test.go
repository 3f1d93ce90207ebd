package cli

import (
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP reloads serve's config: a broken file is refused (serve says why
// and goes on with the old one), a good one is swapped in.
func TestServe_SIGHUPReloads(t *testing.T) {
	s := serveReloadable(t, nil)
	path, good, base, stderr, proc := s.path, s.good, s.base, s.stderr, s.proc
	if code := chat(base); code != 200 {
		t.Fatalf("before any reload: %d", code)
	}
	hup := func(text, want string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// serve's own answer, not the gateway's log line before it, whose
		// file path (this test's temp dir) also holds "SIGHUP"
		const answer = "detour serve: SIGHUP"
		n := strings.Count(stderr.String(), answer)
		if err := proc.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, "serve to answer the SIGHUP", func() bool { return strings.Count(stderr.String(), answer) > n })
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("after SIGHUP, stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	hup("routes: [broken\n", "the config was not reloaded; serving on the one loaded before")
	if !strings.Contains(stderr.String(), "detour.yaml:1") {
		t.Errorf("the refusal does not say where the problem is:\n%s", stderr.String())
	}
	if code := chat(base); code != 200 {
		t.Fatalf("after a refused reload: %d", code)
	}
	hup(strings.Replace(string(good), "  default:\n", "  renamed:\n", 1), "config reloaded")
	if code := chat(base); code != 404 {
		t.Fatalf("the route the reload removed answered %d, want 404", code)
	}
}

// reloadServe is a `detour serve` process on the fixture's config.
type reloadServe struct {
	vars   map[string]string // its environment
	path   string            // its config file
	good   []byte            // the config as it started on
	base   string
	stderr *lockedBuffer
	proc   *os.Process
}

// serveReloadable starts `detour serve` on the fixture's config with a
// gateway: section of lines, and keys (variable: key) in its environment.
func serveReloadable(t *testing.T, keys map[string]string, lines ...string) *reloadServe {
	t.Helper()
	_, vars := fixture(t)
	gatewaySection(t, vars, lines...)
	for k, v := range keys {
		vars[k] = v
	}
	s := &reloadServe{vars: vars, path: vars["DETOUR_CONFIG"]}
	var err error
	if s.good, err = os.ReadFile(s.path); err != nil {
		t.Fatal(err)
	}
	s.base, s.stderr, s.proc = serveProcess(t, vars)
	return s
}

// serveGuarded is serveReloadable behind two client keys, app and ci, and
// an admin key.
func serveGuarded(t *testing.T) *reloadServe {
	t.Helper()
	return serveReloadable(t, map[string]string{"DETOUR_ADMIN_KEY": "admin-key-for-tests-0001",
		"DETOUR_KEY_APP": "app-key-for-tests-000001", "DETOUR_KEY_CI": "ci-key-for-tests-0000001"},
		"admin_key_env: DETOUR_ADMIN_KEY", "keys:", "  app: {key_env: DETOUR_KEY_APP}", "  ci: {key_env: DETOUR_KEY_CI}")
}

// chatWith posts a chat request for model (default: the default route)
// to base with key ("" for none) and returns its status.
func chatWith(t *testing.T, base, key string, model ...string) int {
	t.Helper()
	m := append(model, "default")[0]
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+m+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	resp.Body.Close()
	return resp.StatusCode
}

// hangUp sends proc SIGHUP and waits until serve has written each of
// want on stderr since; it returns what serve wrote since.
func hangUp(t *testing.T, proc *os.Process, stderr *lockedBuffer, want ...string) string {
	t.Helper()
	before := len(stderr.String())
	if err := proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	said := func() string { return stderr.String()[before:] }
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(said(), w) }) {
			return said()
		}
	}
	t.Fatalf("after SIGHUP, serve did not say %q:\n%s", want, said())
	return ""
}

// The case end to end: the config file cut to its first half (a
// write that is not atomic), or emptied, then SIGHUP. The reload is
// refused, logged at ERROR, and serve keeps its keys: a request with no
// key still gets 401, one with a client key 200.
func TestServe_SIGHUPRefusesAFileCutShortOrEmptied(t *testing.T) {
	s := serveGuarded(t)
	vars, path, base, stderr, proc := s.vars, s.path, s.base, s.stderr, s.proc
	half := s.good[:len(s.good)/2]
	for _, tt := range []struct {
		name string
		text []byte
	}{
		{"cut to its first half, mid-line", half},
		{"cut to its first half, at a line's end", half[:strings.LastIndexByte(string(half), '\n')+1]},
		{"emptied", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(path, tt.text, 0o600); err != nil {
				t.Fatal(err)
			}
			said := hangUp(t, proc, stderr, "detour serve: SIGHUP:")
			if !strings.Contains(said, "the config was not reloaded; serving on the one loaded before") ||
				!strings.Contains(said, "level=ERROR") || !strings.Contains(said, "config not reloaded") {
				t.Errorf("serve did not refuse the file, at ERROR:\n%s", said)
			}
			if code := chatWith(t, base, ""); code != 401 {
				t.Errorf("a request with no key after the refused reload: %d, want 401", code)
			}
			if code := chatWith(t, base, "", "p1/m"); code != 401 {
				t.Errorf("a request with no key for p1/m after the refused reload: %d, want 401 (200: served with p1's key)", code)
			}
			if code := chatWith(t, base, vars["DETOUR_KEY_APP"]); code != 200 {
				t.Errorf("a request with a client key after the refused reload: %d, want 200", code)
			}
		})
	}
	if said := stderr.String(); !strings.Contains(said, `client key "app" is gone`) || !strings.Contains(said, path+".allow-removals") {
		t.Errorf("no refusal says what the file removes and how to mean it:\n%s", said)
	}
}

// Revoking a key by SIGHUP: the file without the key is refused; with the
// marker beside it, the next SIGHUP takes it and deletes the marker; the
// revoked key gets 401, the other 200.
func TestServe_SIGHUPRevokesAKeyWithTheMarker(t *testing.T) {
	s := serveGuarded(t)
	vars, path, base, stderr, proc := s.vars, s.path, s.base, s.stderr, s.proc
	marker := path + ".allow-removals"
	if err := os.WriteFile(path, []byte(strings.Replace(string(s.good), "    ci: {key_env: DETOUR_KEY_CI}\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	hangUp(t, proc, stderr, `client key "ci" is gone`, "touch "+marker)
	if code := chatWith(t, base, vars["DETOUR_KEY_CI"]); code != 200 {
		t.Fatalf("ci after the refused reload: %d, want 200", code)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hangUp(t, proc, stderr, "config reloaded ("+marker+" let it remove)")
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the marker is still there (%v): it would let every later reload remove", err)
	}
	if code := chatWith(t, base, vars["DETOUR_KEY_CI"]); code != 401 {
		t.Errorf("the revoked key: %d, want 401", code)
	}
	if code := chatWith(t, base, vars["DETOUR_KEY_APP"]); code != 200 {
		t.Errorf("the key kept: %d, want 200", code)
	}
}
