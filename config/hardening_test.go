package config

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

// problems parses src and returns its problems, failing the test when it
// parses.
func problems(t *testing.T, src string) Errors {
	t.Helper()
	_, err := Parse("detour.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("Parse error = %v, want problems", err)
	}
	return errs
}

// wantOne checks that errs is one problem starting with at and containing
// hint.
func wantOne(t *testing.T, errs Errors, at, hint string) {
	t.Helper()
	if len(errs) != 1 {
		t.Fatalf("got %d problems, want 1:\n%v", len(errs), errs)
	}
	if got := errs[0].Error(); !strings.HasPrefix(got, at) || !strings.Contains(got, hint) {
		t.Errorf("problem:\n got %s\nwant %s ...%s", got, at, hint)
	}
}

func TestParse_RefusesHeadersHTTPCannotSend(t *testing.T) {
	tests := []struct {
		name, headers, at, hint string
	}{
		{"CR LF in a value", `{X-Title: "My App\r\nX-Evil: 1"}`,
			"detour.yaml:2:58: providers.p.headers.X-Title: ", "holds a carriage return (CR, \\r) at byte 7"},
		{"LF alone", `{X-Title: "a\nb"}`, "detour.yaml:2:58: providers.p.headers.X-Title: ", "holds a line feed (LF, \\n) at byte 2"},
		{"NUL", `{X-Title: "a\0"}`, "detour.yaml:2:58: providers.p.headers.X-Title: ", "holds a NUL byte (\\0) at byte 2"},
		{"another control character", `{X-Title: "a\x1bb"}`, "detour.yaml:2:58: ", "holds the control character 0x1B at byte 2"},
		{"DEL", `{X-Title: "a\x7f"}`, "detour.yaml:2:58: ", "holds the control character 0x7F"},
		{"a name with a space", `{"X Title": a}`, "detour.yaml:2:49: providers.p.headers[\"X Title\"]: ", `"X Title" is not a valid HTTP header name`},
		{"a name with a colon", `{"X-Title:": a}`, "detour.yaml:2:49: ", "is not a valid HTTP header name"},
		{"an empty name", `{"": a}`, "detour.yaml:2:49: ", `"" is not a valid HTTP header name`},
		{"a name with a line break", `{"X-A\nB": a}`, "detour.yaml:2:49: ", "is not a valid HTTP header name"},
		{"a header Go's client writes itself", `{Content-Length: "12"}`, "detour.yaml:2:49: providers.p.headers.Content-Length: ",
			"header Content-Length is set by detour and Go's HTTP client"},
		{"a hop-by-hop header", `{connection: close}`, "detour.yaml:2:49: ", "header connection is set by detour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "providers:\n  p: {base_url: https://p.example/v1, headers: " + tt.headers + "}\n"
			wantOne(t, problems(t, src), tt.at, tt.hint)
		})
	}
}

// TestBuild_ValidHeadersReachTheProvider checks the other side: a header
// the check lets through is sent as written.
func TestBuild_ValidHeadersReachTheProvider(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	c := mustParse(t, "providers:\n  p: {base_url: "+srv.URL+", key_env: P_KEY, headers: "+
		`{X-Title: "My App (beta)\tv2", HTTP-Referer: "https://example.com/é"}}`+"\n")
	r, err := c.TargetRoute("p/m", BuildOptions{Getenv: env(map[string]string{"P_KEY": "p-key-123456"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Chain[0].Client.Complete(t.Context(), &llm.Request{Model: "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := <-got
	if h.Get("X-Title") != "My App (beta)\tv2" || h.Get("Http-Referer") != "https://example.com/é" {
		t.Errorf("headers sent: %v", h)
	}
}

func TestParse_RefusesAReserveThatLeavesTheDeadlineNothing(t *testing.T) {
	tests := []struct {
		name, src, at, hint string
	}{
		{"both written, equal", "routes:\n  r: {chain: [groq/x], budget: {deadline: 10s, reserve: 10s}}\n",
			"detour.yaml:2:48: routes.r.budget.reserve: ",
			"budget reserve 10s is not below the deadline 10s: the reserve is the part of the deadline kept for the next candidates, " +
				"so the first attempt would get no time and no retry would fit; lower it (like reserve: 1s) or raise deadline above 10s"},
		{"reserve larger", "routes:\n  r: {chain: [groq/x], budget: {reserve: 2m}}\n",
			"detour.yaml:2:33: routes.r.budget.reserve: ", "budget reserve 2m is not below the deadline 1m (the default)"},
		{"a deadline under the default reserve", "routes:\n  r: {chain: [groq/x], budget: {deadline: 5s}}\n",
			"detour.yaml:2:33: routes.r.budget.deadline: ", "budget reserve 10s (the default) is not below the deadline 5s: " +
				"the reserve is the part of the deadline kept for the next candidates, so the first attempt would get no time and no retry " +
				"would fit; lower it (like reserve: 800ms) or raise deadline above 10s"},
		{"a profile's reserve", "routes:\n  r: {chain: [groq/x], budget: {profile: batch, deadline: 20s}}\n",
			"detour.yaml:2:49: routes.r.budget.deadline: ", "budget reserve 30s (the default) is not below the deadline 20s"},
		{"at defaults:, once for every route that keeps it",
			"defaults:\n  budget: {deadline: 3s}\nroutes:\n  r: {chain: [groq/x]}\n  s: {chain: [groq/y]}\n",
			"detour.yaml:2:12: defaults.budget.deadline: ", "budget reserve 10s (the default) is not below the deadline 3s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOne(t, problems(t, tt.src), tt.at, tt.hint)
		})
	}
	// A route that fixes the defaults' budget is fine; one below the
	// defaults' deadline is reported on its own.
	errs := problems(t, "defaults:\n  budget: {deadline: 3s}\nroutes:\n  r: {chain: [groq/x], budget: {reserve: 1s}}\n")
	wantOne(t, errs, "detour.yaml:2:12: defaults.budget.deadline: ", "not below the deadline 3s")
	mustParse(t, "defaults:\n  budget: {deadline: 3s, reserve: 1s}\nroutes:\n  r: {chain: [groq/x]}\n")
	errs = problems(t, "defaults:\n  budget: {deadline: 30s, reserve: 5s}\nroutes:\n  r: {chain: [groq/x], budget: {deadline: 4s}}\n")
	wantOne(t, errs, "detour.yaml:4:33: routes.r.budget.deadline: ", "budget reserve 5s (the default) is not below the deadline 4s")
	if err := (&Config{Routes: map[string]Route{"r": {Name: "r", Chain: []string{"groq/x"}, RouteSettings: RouteSettings{
		Budget: Defaults{}.route("", nil).Budget}}}}).Validate(); err != nil {
		t.Errorf("the interactive budget: %v", err)
	}
}

func TestBuild_RefusesAShortProviderKey(t *testing.T) {
	const src = "providers:\n" +
		"  remote: {base_url: https://api.example.com/v1, key_env: REMOTE_KEY}\n" +
		"  ollama: {key_env: OLLAMA_KEY}\n" + // the preset: pool local
		"  lan: {base_url: http://10.0.0.5:8080/v1, key_env: LAN_KEY, pool: local}\n" +
		"  loop: {base_url: http://127.0.0.1:8080/v1, key_env: LOOP_KEY}\n" +
		"  loop6: {base_url: \"http://[::1]:8080/v1\", key_env: LOOP6_KEY}\n" +
		"  named: {base_url: http://localhost:8080/v1, key_env: NAMED_KEY}\n" +
		"routes:\n  r: {chain: [remote/m, ollama/m, lan/m, loop/m, loop6/m, named/m, groq/m]}\n"
	c := mustParse(t, src)
	dummy := map[string]string{"OLLAMA_KEY": "x", "LAN_KEY": "x", "LOOP_KEY": "x", "LOOP6_KEY": "x", "NAMED_KEY": "x"}
	with := func(extra map[string]string) func(string) string {
		m := map[string]string{}
		for k, v := range dummy {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return env(m)
	}
	if _, err := c.Build(BuildOptions{Getenv: with(map[string]string{"REMOTE_KEY": "rk-12345678", "GROQ_API_KEY": "gsk_1234"})}); err != nil {
		t.Fatalf("local dummies and 8-character keys: %v", err)
	}
	if _, err := c.Build(BuildOptions{Getenv: with(nil)}); err != nil {
		t.Fatalf("unset keys are skipped, not refused: %v", err)
	}
	_, err := c.Build(BuildOptions{Getenv: with(map[string]string{"REMOTE_KEY": " abc1234 \n", "GROQ_API_KEY": "k"})})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 || !errors.Is(err, ErrShortKey) {
		t.Fatalf("err = %v, want the two short keys", err)
	}
	wantMsg := []string{
		"detour.yaml:2:59: providers.remote.key_env: REMOTE_KEY holds a key of 7 characters, and no real provider key is " +
			"shorter than 8: detour does not hide one that short in its logs and errors, so it could leak; check the variable " +
			"(export REMOTE_KEY=THE_KEY); a local server that takes any key may keep a dummy one if the provider has pool: " +
			"local or a base_url on loopback",
		"detour.yaml: providers.groq.key_env: GROQ_API_KEY holds a key of 1 character",
	}
	for i, w := range wantMsg {
		if got := errs[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if strings.Contains(err.Error(), "abc1234") {
		t.Errorf("the key itself is in the message: %v", err)
	}
	// Where the key is read for one route or target, it is refused too.
	getenv := with(map[string]string{"REMOTE_KEY": "short"})
	if _, err := c.Lookup("r", BuildOptions{Getenv: getenv}); !errors.Is(err, ErrShortKey) {
		t.Errorf("Lookup: %v, want ErrShortKey", err)
	}
	if _, err := c.TargetRoute("remote/other", BuildOptions{Getenv: getenv}); !errors.Is(err, ErrShortKey) {
		t.Errorf("TargetRoute: %v, want ErrShortKey", err)
	}
	if _, err := c.TargetRoute("loop/other", BuildOptions{Getenv: getenv}); err != nil {
		t.Errorf("TargetRoute of a loopback provider: %v", err)
	}
}

func TestProvider_Local(t *testing.T) {
	for _, tt := range []struct {
		p    Provider
		want bool
	}{
		{Provider{Pool: Local, BaseURL: "http://192.168.1.9:11434/v1"}, true},
		{Provider{BaseURL: "http://127.0.0.1:8080/v1"}, true},
		{Provider{BaseURL: "http://127.8.0.1/v1"}, true},
		{Provider{BaseURL: "http://[::1]:8080/v1"}, true},
		{Provider{BaseURL: "http://LOCALHOST:8080"}, true},
		{Provider{BaseURL: "https://api.localhost.example.com/v1"}, false},
		{Provider{BaseURL: "https://api.groq.com/openai/v1", Pool: Free}, false},
		{Provider{Dialect: Anthropic}, false},
	} {
		if got := tt.p.Local(); got != tt.want {
			t.Errorf("%+v: Local() = %v, want %v", tt.p, got, tt.want)
		}
	}
}

// TestCheckEnv_WhatServeRefuses covers every environment problem `detour
// serve` refuses, which `detour check` reports through CheckServe.
func TestCheckEnv_WhatServeRefuses(t *testing.T) {
	src := "providers:\n  remote: {base_url: https://api.example.com/v1, key_env: REMOTE_KEY}\n" +
		"routes:\n  r: {chain: [remote/m]}\n" +
		"gateway:\n  keys:\n" +
		"    app: {key_env: DETOUR_KEY_APP}\n" +
		"    ci: {sha256: " + strings.Repeat("ab", 32) + "}\n"
	c := mustParse(t, src)
	good := map[string]string{"REMOTE_KEY": "rk-12345678", "DETOUR_KEY_APP": "app-key-1"}
	if err := c.CheckEnv(env(good)); err != nil {
		t.Fatalf("CheckEnv: %v", err)
	}
	if err := c.CheckServe(env(good)); err != nil {
		t.Fatalf("CheckServe: %v", err)
	}
	err := c.CheckEnv(env(map[string]string{"REMOTE_KEY": "rk"}))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("err = %v, want 2 problems", err)
	}
	if got, want := errs[0].Error(), "detour.yaml:2:59: providers.remote.key_env: REMOTE_KEY holds a key of 2 characters"; !strings.HasPrefix(got, want) {
		t.Errorf("problem 0: %s\nwant %s", got, want)
	}
	if got, want := errs[1].Error(), "detour.yaml:7:20: gateway.keys.app.key_env: DETOUR_KEY_APP is not set (export it, "+
		"or give the key's sha256 instead): detour serve needs every client key"; got != want {
		t.Errorf("problem 1: %s\nwant %s", got, want)
	}
	if !errors.Is(err, ErrShortKey) || !errors.Is(err, ErrKeyUnset) {
		t.Errorf("want both sentinels: %v", err)
	}
	// Build reads provider keys, not the gateway's.
	if _, err := c.Build(BuildOptions{Getenv: env(map[string]string{"REMOTE_KEY": "rk-12345678"})}); err != nil {
		t.Errorf("Build without the client key variable: %v", err)
	}
}

func TestCheckServe_RefusesAListenServeRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, listen, keys string
		ok                 bool
	}{
		{"every interface without keys", ":8787", "", false},
		{"a public address without keys", "0.0.0.0:8787", "", false},
		{"a name that is not localhost", "app.localhost:8787", "", false},
		{"loopback without keys", "127.0.0.1:8787", "", true},
		{"localhost without keys", "localhost:0", "", true},
		{"IPv6 loopback", "[::1]:8787", "", true},
		{"every interface with a key", ":8787", ", keys: {app: {sha256: " + strings.Repeat("ab", 32) + "}}", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, "gateway: {listen: \""+tt.listen+"\""+tt.keys+"}\n") // the file itself is valid
			err := c.CheckServe(env(nil))
			if tt.ok {
				if err != nil {
					t.Fatalf("CheckServe: %v", err)
				}
				return
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("err = %v, want one problem", err)
			}
			want := ListenError(tt.listen, c.Gateway).Error()
			if got := errs[0].Error(); got != "detour.yaml:1:19: gateway.listen: "+want {
				t.Errorf("problem %s\nwant the message serve gives: %s", got, want)
			}
		})
	}
	if err := ListenError("0.0.0.0:8787", Gateway{}); err == nil ||
		err.Error() != "refusing to listen on 0.0.0.0:8787 without client keys: add gateway.keys to the config (key_env or sha256), or listen on 127.0.0.1" {
		t.Errorf("ListenError = %v", err)
	}
}
