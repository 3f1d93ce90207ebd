package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/detourhq/detour/simulate"
)

// simRig is the sim's providers and control endpoint on an httptest
// server, in process.
type simRig struct {
	url  string
	ctl  *simControl
	mu   sync.Mutex // guards logs
	logs []string
}

func newSimRig(t *testing.T) *simRig {
	t.Helper()
	provs, _, err := skilledDay(1, true)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simulate.NewServer(provs...)
	if err != nil {
		t.Fatal(err)
	}
	srv.LatencyScale = -1
	r := &simRig{}
	r.ctl = newSimControl(srv, provs, 1, nil)
	ts := httptest.NewServer(r.ctl.handler(func(l string) {
		r.mu.Lock()
		r.logs = append(r.logs, l)
		r.mu.Unlock()
	}))
	t.Cleanup(func() { srv.Close(); ts.Close() })
	srv.URL, r.url = ts.URL, ts.URL
	return r
}

// do sends method to path of the rig (a JSON body when body is set) and
// returns the status and body.
func (r *simRig) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return send(t, method, r.url+path, body)
}

// send sends method to url with a JSON body and returns the answer's
// status and body.
func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// chat sends one chat completion to an OpenAI-dialect provider of the sim.
func (r *simRig) chat(t *testing.T, provider, model string) (int, string) {
	t.Helper()
	return r.do(t, http.MethodPost, "/"+provider+"/v1/chat/completions",
		`{"model": "`+model+`", "messages": [{"role": "user", "content": "hi"}]}`)
}

// POST /control/PROVIDER/MODE switches what the provider serves from the
// next request on, for one provider or all, and GET /control says so.
func TestSimControl_SwitchesAProviderWhileItRuns(t *testing.T) {
	r := newSimRig(t)
	steps := []struct {
		name, path   string
		wantControl  string
		provider     string
		model        string
		wantStatus   int
		wantInAnswer string
	}{
		{"dry free tier: a daily quota", "/control/groq-free/dry", "groq-free: dry: 429 tokens per day",
			simulate.GroqFree, simulate.GroqModel, 429, "tokens per day"},
		{"dry prepaid: no credit", "/control/deepseek/dry", "deepseek: dry: no credit left",
			simulate.DeepSeek, simulate.DeepSeekModel, 402, "credit"},
		{"a fault kind by name", "/control/together/server_error", "together: server_error: on every request",
			simulate.Together, simulate.TogetherModel, 500, ""},
		{"down", "/control/mistral-payg/down", "mistral-payg: down: 503",
			simulate.MistralPayg, simulate.MistralModel, 503, ""},
		{"all healthy", "/control/all/healthy", "openrouter: healthy",
			simulate.OpenRouter, simulate.OpenRouterExpensive, 200, "Hello from openrouter/"},
		{"back to the day: the expensive model's 402", "/control/openrouter/bad-day", "openrouter: bad-day: 402",
			simulate.OpenRouter, simulate.OpenRouterExpensive, 402, ""},
	}
	for _, s := range steps {
		code, body := r.do(t, http.MethodPost, s.path, "")
		if code != http.StatusOK || !strings.Contains(body, s.wantControl) {
			t.Fatalf("%s: POST %s = %d %q, want 200 with %q", s.name, s.path, code, body, s.wantControl)
		}
		code, body = r.chat(t, s.provider, s.model)
		if code != s.wantStatus || !strings.Contains(body, s.wantInAnswer) {
			t.Errorf("%s: %s answered %d %.200q, want %d with %q", s.name, s.provider, code, body, s.wantStatus, s.wantInAnswer)
		}
	}
	code, body := r.do(t, http.MethodGet, "/control", "")
	for _, want := range []string{"healthy: answer every request", "bad-day: 402", r.url + "/gemini-free/v1beta"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /control = %d, lacks %q:\n%s", code, want, body)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		// provider, pool, base URL, requests, failed: openrouter answered
		// once healthy, then failed on its day.
		if f := strings.Fields(line); len(f) > 5 && f[0] == simulate.OpenRouter && (f[1] != "credit" || f[3] != "2" || f[4] != "1") {
			t.Errorf("GET /control: %q, want openrouter credit with 2 requests, 1 failed", line)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.logs) != 12 || !strings.HasPrefix(r.logs[0], "now groq-free: dry") { // "all" logs one line per provider
		t.Errorf("logged %d lines, want 12 starting with the switch of groq-free:\n%s", len(r.logs), strings.Join(r.logs, "\n"))
	}
}

func TestSimControl_RefusesWhatItCannotDo(t *testing.T) {
	r := newSimRig(t)
	for _, c := range []struct {
		method, path string
		want         int
		says         string
	}{
		{http.MethodPost, "/control/nobody/dry", 404, "the sim runs groq-free, gemini-free"},
		{http.MethodPost, "/control/groq-free/thirsty", 400, "want healthy, bad-day, dry"},
		{http.MethodPost, "/control/groq-free/ok/more", 404, "unknown control URL"},
		{http.MethodPost, "/control/groq-free", 404, "unknown control URL"},
		{http.MethodPost, "/controlled", 404, ""}, // a provider's path: the simulator's own 404
		{http.MethodGet, "/control/groq-free/dry", 405, "use POST"},
		{http.MethodPost, "/control", 405, "GET /control"},
	} {
		code, body := r.do(t, c.method, c.path, "")
		if code != c.want || !strings.Contains(body, c.says) {
			t.Errorf("%s %s = %d %q, want %d with %q", c.method, c.path, code, body, c.want, c.says)
		}
	}
	// Nothing was switched.
	if code, _ := r.chat(t, simulate.DeepSeek, simulate.DeepSeekModel); code != 200 {
		t.Errorf("deepseek answered %d after refused switches", code)
	}
}

func TestParseControlPath(t *testing.T) {
	for _, c := range []struct {
		path, provider, mode string
		ok                   bool
	}{
		{"/control", "", "", true},
		{"/control/", "", "", true},
		{"/control/groq-free/dry", "groq-free", "dry", true},
		{"/control/all/bad-day", "all", "bad-day", true},
		{"/control/a/b/c", "", "", false},
		{"/control/a", "", "", false},
		{"/control/a/", "", "", false},
		{"/control//dry", "", "", false},
		{"/controls/a/b", "", "", false},
		{"/v1/chat/completions", "", "", false},
	} {
		p, m, ok := parseControlPath(c.path)
		if p != c.provider || m != c.mode || ok != c.ok {
			t.Errorf("parseControlPath(%q) = %q, %q, %v; want %q, %q, %v", c.path, p, m, ok, c.provider, c.mode, c.ok)
		}
	}
}

// FuzzParseControlPath: any path is read without a panic, and what is
// read is what the path says.
func FuzzParseControlPath(f *testing.F) {
	for _, s := range []string{"/control", "/control/", "/control/groq-free/dry", "/control/all/x", "/control//", "/control/a/b/c", "/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		provider, mode, ok := parseControlPath(p)
		switch {
		case !ok:
			if provider != "" || mode != "" {
				t.Fatalf("%q: not ok, yet %q %q", p, provider, mode)
			}
		case provider == "":
			if mode != "" || (p != controlPrefix && p != controlPrefix+"/") {
				t.Fatalf("%q: read as the status path", p)
			}
		default:
			if strings.Contains(provider, "/") || strings.Contains(mode, "/") || mode == "" ||
				controlPrefix+"/"+provider+"/"+mode != p {
				t.Fatalf("%q: read as %q %q", p, provider, mode)
			}
		}
	})
}

// --set and --day refuse what they cannot do before anything listens.
func TestSim_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--day", "sunny"},
		{"sim", "--set", "groq-free"},
		{"sim", "--set", "groq-free=thirsty"},
		{"sim", "--set", "nobody=dry"},
		{"sim", "--listen", "0.0.0.0:0"},
	} {
		code, _, errOut := run(t, nil, "", append(args, "--dir", t.TempDir())...)
		if code != ExitUsage || errOut == "" {
			t.Errorf("%v: exit %d %q, want %d with the reason", args, code, errOut, ExitUsage)
		}
	}
}
