package config

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

func TestParse_HealthStore(t *testing.T) {
	const prov = "providers:\n  local: {dialect: openai, base_url: \"http://127.0.0.1:9/v1\", key_env: \"\"}\n"
	for _, tc := range []struct {
		store string
		want  health.StoreSpec
	}{
		{"", health.StoreSpec{}},
		{"memory", health.StoreSpec{Kind: health.StoreMemory}},
		{"sqlite", health.StoreSpec{Kind: health.StoreSQLite}},
		{"sqlite:/var/lib/detour/health.db", health.StoreSpec{Kind: health.StoreSQLite, Path: "/var/lib/detour/health.db"}},
		{"redis://cache:6379/2", health.StoreSpec{Kind: health.StoreRedis, URL: "redis://cache:6379/2"}},
		{"rediss://user@cache:6380", health.StoreSpec{Kind: health.StoreRedis, URL: "rediss://user@cache:6380"}},
	} {
		src := prov
		if tc.store != "" {
			src += "health: {store: \"" + tc.store + "\", namespace: prod-eu}\n"
		}
		c := mustParse(t, src)
		if got := c.Store(); got != tc.want {
			t.Errorf("store %q read as %+v, want %+v", tc.store, got, tc.want)
		}
	}
	wantProblems(t, "health: {store: mongo://x}\n", `health.store: "mongo://x" is not a health store: write memory, sqlite`)
	wantProblems(t, "health: {store: \"redis://u:hunter2@cache:6379\"}\n",
		`health.store: the Redis URL holds a password: keys and passwords never go in the file; write "redis://u@cache:6379" and name the variable`)
	wantProblems(t, "health: {store: \"sqlite:\"}\n", "health.store: sqlite: names no file")
	wantProblems(t, "health: {store: \"redis:///0\"}\n", "names no host")
	wantProblems(t, "health: {namespace: \"prod eu\"}\n", `health.namespace: "prod eu" is not a namespace`)
}

func TestStoreEnv(t *testing.T) {
	c := mustParse(t, "health: {store: \"redis://cache:6379\", store_password_env: REDIS_PW}\n")
	err := c.CheckEnv(func(string) string { return "" })
	if !errors.Is(err, ErrKeyUnset) || !strings.Contains(err.Error(), "REDIS_PW is not set") {
		t.Errorf("unset password variable: %v", err)
	}
	if err := c.CheckEnv(func(k string) string { return map[string]string{"REDIS_PW": "pw"}[k] }); err != nil {
		t.Errorf("password set: %v", err)
	}
	c = mustParse(t, "health: {store: sqlite, store_password_env: REDIS_PW}\n")
	if err := c.CheckEnv(func(string) string { return "pw" }); err == nil || !strings.Contains(err.Error(), "only a redis:// store reads a password") {
		t.Errorf("password for sqlite: %v", err)
	}
}

// FuzzParseStore: any value is read or refused with a message, never
// panics, and a spec it returns never carries a password.
func FuzzParseStore(f *testing.F) {
	for _, s := range []string{"", "memory", "sqlite", "sqlite:x.db", "redis://h:1/0", "rediss://u:p@h", "redis://%zz", "redis:///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseStore(v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty message")
			}
			return
		}
		if v != "" && s.Kind == "" {
			t.Fatalf("%q read as no store", v)
		}
		if s.Kind == health.StoreRedis {
			if u, err := url.Parse(s.URL); err == nil {
				if _, set := u.User.Password(); set {
					t.Fatalf("%q kept a password in %q", v, s.URL)
				}
			}
		}
	})
}

func TestParse_Idempotency(t *testing.T) {
	c := mustParse(t, "gateway: {idempotency_ttl: 1h, idempotency_in_flight: conflict}\n")
	if g := c.Gateway.WithDefaults(); g.IdempotencyTTL != time.Hour || !g.IdempotencyConflict {
		t.Errorf("gateway %+v", g)
	}
	c = mustParse(t, "gateway: {idempotency_ttl: 0}\n")
	if g := c.Gateway.WithDefaults(); g.IdempotencyTTL >= 0 {
		t.Errorf("idempotency_ttl: 0 reads %s, want off (negative)", g.IdempotencyTTL)
	}
	if g := mustParse(t, "gateway: {}\n").Gateway.WithDefaults(); g.IdempotencyTTL != DefaultIdempotencyTTL || g.IdempotencyConflict {
		t.Errorf("defaults %+v", g)
	}
	wantProblems(t, "gateway: {idempotency_in_flight: block}\n", `gateway.idempotency_in_flight: "block" is not what a repeat of a request in flight can get: write wait`)
}

func TestParse_Disabled(t *testing.T) {
	c := mustParse(t, `providers:
  a: {dialect: openai, base_url: "http://127.0.0.1:9/v1", key_env: "", disabled: true}
  b: {dialect: openai, base_url: "http://127.0.0.1:9/v1", key_env: ""}
targets:
  b/off: {disabled: true}
routes:
  r: {chain: [a/m, b/off, b/on]}
`)
	routes, err := c.Build(BuildOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range routes["r"].Chain {
		got = append(got, tg.Disabled)
	}
	if want := []string{"providers.a.disabled", "targets.b/off.disabled", ""}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("disabled %q, want %q", got, want)
	}
}

func TestParse_Adapt(t *testing.T) {
	c := mustParse(t, `providers:
  a: {dialect: openai, base_url: "http://127.0.0.1:9/v1", key_env: ""}
routes:
  r:
    chain: [a/m]
    adapt: {keep_last_turns: 6, short_system: "Be brief.", drop_tool_results: 2}
`)
	routes, err := c.Build(BuildOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if a := routes["r"].Adapt; a == nil || a.KeepLastTurns != 6 || a.ShortSystem != "Be brief." || a.DropToolResults != 2 {
		t.Fatalf("adapt %+v", a)
	}
	wantProblems(t, "routes:\n  r: {chain: [groq/m], adapt: {keep_last_turns: 0}}\n", "routes.r.adapt.keep_last_turns: must be 1 or more turns")
	wantProblems(t, "routes:\n  r: {chain: [groq/m], adapt: {keep_last: 2}}\n", `routes.r.adapt.keep_last: unknown field "keep_last"`)
}
