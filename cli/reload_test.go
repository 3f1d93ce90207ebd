package cli

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// SIGHUP reloads serve's config: a broken file is refused (serve says why
// and goes on with the old one), a good one is swapped in.
func TestServe_SIGHUPReloads(t *testing.T) {
	_, vars := fixture(t)
	gatewaySection(t, vars)
	path := vars["DETOUR_CONFIG"]
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base, stderr, proc := serveProcess(t, vars)
	if code := chat(base); code != 200 {
		t.Fatalf("before any reload: %d", code)
	}
	hup := func(text, want string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		n := strings.Count(stderr.String(), "SIGHUP")
		if err := proc.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, "serve to answer the SIGHUP", func() bool { return strings.Count(stderr.String(), "SIGHUP") > n })
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
