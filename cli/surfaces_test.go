package cli

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// Every endpoint serve's help and start-up log list is served by a running
// serve, the start-up log names each, and every endpoint serve names in its
// own 404s is in the list.
func TestServe_ListsEverySurfaceItServes(t *testing.T) {
	_, vars := fixture(t)
	c := serveChild(t, vars)
	for _, s := range surfaces {
		if !strings.Contains(c.stderr.String(), s.path) {
			t.Errorf("the start-up log does not list %s %s:\n%s", s.method, s.path, c.stderr)
		}
		path := strings.ReplaceAll(s.path, "{model}", "default")
		code, body := send(t, s.method, c.base+path, "{}")
		if code == http.StatusNotFound || code == http.StatusMethodNotAllowed || strings.Contains(body, "unknown") {
			t.Errorf("%s %s: %d %s", s.method, path, code, body)
		}
	}

	// serve's own list, in the 404 of an unknown URL and of an unknown
	// admin URL.
	for _, path := range []string{"/v2/nothing", "/admin/nothing"} {
		resp, err := http.Get(c.base + path)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		_, named, ok := strings.Cut(e.Error.Message, "detour serves ")
		if err != nil || !ok {
			t.Fatalf("GET %s: %v %q", path, err, e.Error.Message)
		}
		ms := regexp.MustCompile(`(GET|POST) (/\S+?)(,| and|$)`).FindAllStringSubmatch(named, -1)
		if len(ms) < 4 {
			t.Errorf("GET %s: read %d endpoints in %q", path, len(ms), named)
		}
		for _, m := range ms {
			if !listed(m[1], m[2]) {
				t.Errorf("serve's 404 names %s %s, which its help does not list", m[1], m[2])
			}
		}
	}
	stopNow(t, c)
}

// listed reports whether surfaces holds method and path.
func listed(method, path string) bool {
	for _, s := range surfaces {
		if s.method == method && s.path == path {
			return true
		}
	}
	return false
}

// Every command's help has a one-line purpose, and examples that run
// detour (or curl, or a client pointed at it), two at least.
func TestHelp_EveryCommandHasAPurposeAndExamples(t *testing.T) {
	root := newRoot(Env{})
	cmds, checked := append(root.Commands(), root), 0
	for i := 0; i < len(cmds); i++ {
		c := cmds[i]
		if c.Name() == "help" || c.Name() == "completion" || c.Parent() != nil && c.Parent().Name() == "completion" {
			continue
		}
		if c != root {
			cmds = append(cmds, c.Commands()...)
		}
		name := c.CommandPath()
		if c.Short == "" || strings.Contains(c.Short, "\n") {
			t.Errorf("%s: no one-line purpose: %q", name, c.Short)
		}
		n := 0
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "detour ") || strings.HasPrefix(l, "go run ./cmd/detour") || strings.HasPrefix(l, "curl ") ||
				strings.Contains(l, "http://127.0.0.1:8787") {
				n++
			}
		}
		checked++
		if n < 2 {
			t.Errorf("%s: %d examples, want 2 at least:\n%s", name, n, c.Example)
		}
	}
	if checked < 12 { // detour, its 10 commands and demo eval
		t.Errorf("checked %d commands' help", checked)
	}
}
