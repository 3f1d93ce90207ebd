package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// The client key tests present, and the upstream keys the gateway holds:
// shaped like real keys so that any leak would show.
const (
	clientKey   = "detour-client-key-for-tests-0001"
	upstreamKey = "sk-upstream-SECRET-0123456789abcdef"
)

// fixture is a gateway in front of fake providers p1, p2 (family fam) and
// p3 (family other) on loopback, with routes default [p1/m, p2/m, p3/other]
// and solo [p1/m], and one client key "app" for every route.
type fixture struct {
	t      *testing.T
	sim    *sim.Server
	gw     *gateway.Server
	ts     *httptest.Server
	ledger *ledger.Memory
	logs   *syncBuffer
	// upURL is the base of the providers: upURL/p1/v1 is p1's.
	upURL string

	// chats counts the chat requests that reached the gateway.
	chats atomic.Int64
	// upstreamCanceled counts upstream requests whose context ended
	// before their handler returned: the gateway hung up on them.
	upstreamCanceled atomic.Int64
}

// setup shapes a fixture: the gateway: section and extra routes, and the
// scripts of the providers.
type setup struct {
	gateway string // YAML under "gateway:", indented two spaces
	routes  string // extra routes, indented two spaces
	targets string // extra targets, indented two spaces
	// p1, p2, p3 are the providers' scripts.
	p1, p2, p3 []sim.Fault
	// provider tweaks, applied to each provider before the start.
	tweak func(*sim.Provider)
	// env adds environment variables.
	env map[string]string
	// clock and health, when set, are the gateway's (nil: the real clock,
	// a breaker in memory).
	clock  clock.Clock
	health *health.Breaker
}

const defaultGateway = `  keys:
    app: {key_env: DETOUR_TEST_KEY}
`

func newFixture(t *testing.T, s setup) *fixture {
	t.Helper()
	ps := []sim.Provider{{Name: "p1", Script: s.p1}, {Name: "p2", Script: s.p2}, {Name: "p3", Script: s.p3}}
	if s.tweak != nil {
		for i := range ps {
			s.tweak(&ps[i])
		}
	}
	srv, err := sim.NewServer(ps...)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, sim: srv, ledger: &ledger.Memory{}, logs: &syncBuffer{}}
	// The providers sit behind a wrapper that sees whether the gateway hung
	// up on an upstream request.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			f.upstreamCanceled.Add(1)
		}
	}))
	t.Cleanup(func() { srv.Close(); up.Close() })
	f.upURL = up.URL
	gw := s.gateway
	if gw == "" {
		gw = defaultGateway
	}
	yaml := fmt.Sprintf(`providers:
  p1: {base_url: %[1]s/p1/v1, key_env: P1_KEY, pool: free}
  p2: {base_url: %[1]s/p2/v1, key_env: P2_KEY, pool: credit}
  p3: {base_url: %[1]s/p3/v1, key_env: P3_KEY, pool: prepaid}
targets:
  p1/m: {family: fam, price: {in: 1, out: 2}}
  p2/m: {family: fam, price: {in: 2, out: 4}}
  p3/other: {family: other, price: {in: 3, out: 6}}
%[4]sroutes:
  default:
    chain: [p1/m, p2/m, p3/other]
    budget: {base_backoff: 1ms, max_backoff: 5ms}
  solo:
    chain: [p1/m]
    budget: {base_backoff: 1ms, max_backoff: 5ms}
%[2]sgateway:
%[3]s`, up.URL, s.routes, gw, s.targets)
	cfg, err := config.Parse("detour.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	env := map[string]string{"P1_KEY": upstreamKey + "1", "P2_KEY": upstreamKey + "2", "P3_KEY": upstreamKey + "3",
		"DETOUR_TEST_KEY": clientKey}
	for k, v := range s.env {
		env[k] = v
	}
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.gw, err = gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] },
		Ledger: f.ledger, Logger: logger, Clock: s.clock, Health: s.health})
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/messages" {
			f.chats.Add(1)
		}
		f.gw.ServeHTTP(w, r)
	}))
	t.Cleanup(f.ts.Close)
	return f
}

// openai returns an official OpenAI client for the gateway.
func (f *fixture) openai(opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(f.ts.URL + "/v1"),
		option.WithAPIKey(clientKey)}, opts...)...)
	return &c
}

// anthropic returns an official Anthropic client for the gateway.
func (f *fixture) anthropic(opts ...anthropicopt.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]anthropicopt.RequestOption{anthropicopt.WithBaseURL(f.ts.URL),
		anthropicopt.WithAPIKey(clientKey)}, opts...)...)
	return &c
}

// post sends body to path with the client key and returns the response
// and its whole body.
func (f *fixture) post(path, body string, header ...string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("reading the body: %v (got %q)", err, b)
	}
	return resp, string(b)
}

// get sends a GET with the client key.
func (f *fixture) get(path string) (*http.Response, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// logLine returns the gateway's log line of request id, or "".
func (f *fixture) logLine(id string) string {
	for _, line := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(line, " id="+id+" ") {
			return line
		}
	}
	return ""
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ctx returns a context ending with the test (10 s at most).
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (the logger).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const chatBody = `{"model":"default","messages":[{"role":"user","content":"hi"}]}`
const messagesBody = `{"model":"default","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
