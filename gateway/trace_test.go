package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// headerKey carries what stubTracer.Extract read.
type headerKey struct{}

// stubTracer reads traceparent as telemetry's Tracer does, and keeps what
// each request's span was told.
type stubTracer struct {
	mu      sync.Mutex // guards the fields below
	parents []string   // the traceparent each request's context carried
	events  []string
}

func (st *stubTracer) Extract(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, headerKey{}, h.Get("traceparent"))
}

func (st *stubTracer) StartRequest(ctx context.Context, info router.TraceRequest) router.RequestSpan {
	st.mu.Lock()
	defer st.mu.Unlock()
	p, _ := ctx.Value(headerKey{}).(string)
	st.parents = append(st.parents, p)
	st.events = append(st.events, "start "+info.Route)
	return st
}

func (st *stubTracer) Attempt(a router.Attempt) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.events = append(st.events, "attempt "+a.Target.ID()+" "+a.Status)
}

func (st *stubTracer) End(res *router.Result, err error, _ time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.events = append(st.events, fmt.Sprintf("end %v", err == nil && res != nil))
}

func TestGateway_TraceGetsTheClientsTraceparent(t *testing.T) {
	srv, err := sim.Start(sim.Provider{Name: "p1", Script: sim.Faults(sim.NoCredits)}, sim.Provider{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	yaml := fmt.Sprintf("providers:\n  p1: {base_url: %q, key_env: \"\"}\n  p2: {base_url: %q, key_env: \"\"}\n"+
		"routes:\n  default: {chain: [p1/m, p2/m]}\n", srv.BaseURL("p1"), srv.BaseURL("p2"))
	cfg, err := config.Parse("detour.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	st := &stubTracer{}
	gw, err := gateway.New(gateway.Config{File: cfg, Trace: st})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.parents) != 1 || st.parents[0] != tp {
		t.Errorf("the request's span saw traceparent %q, want the client's", st.parents)
	}
	want := []string{"start default", "attempt p1/m http_402", "attempt p2/m ok", "end true"}
	if strings.Join(st.events, "; ") != strings.Join(want, "; ") {
		t.Errorf("events %q, want %q", st.events, want)
	}
}
