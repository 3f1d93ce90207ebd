package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeChat answers like a chat endpoint: a JSON completion, or a stream
// flushed event by event with a trailer; ?fail=503 answers an error.
func fakeChat(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) //nolint:errcheck // test server
	if s := r.URL.Query().Get("fail"); s != "" {
		http.Error(w, `{"error":{"message":"down"}}`, 503)
		return
	}
	w.Header().Set("X-Detour-Attempts", r.URL.Query().Get("attempts"))
	if r.Header.Get("Accept") != "text/event-stream" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"message":{"content":"hi"}}]}`) //nolint:errcheck // test server
		return
	}
	w.Header().Set("Trailer", "X-Detour-Model")
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range []string{`{"choices":[{"delta":{"content":"h"}}]}`, `{"choices":[{"delta":{"content":"i"}}]}`, "[DONE]"} {
		io.WriteString(w, "data: "+ev+"\n\n") //nolint:errcheck // test server
		w.(http.Flusher).Flush()
	}
	w.Header().Set("X-Detour-Model", "m")
}

func TestClientConn_ReadsEveryBodyShape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeChat))
	t.Cleanup(srv.Close)
	addr, err := hostPort(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	body := []byte(`{"model":"m"}`)
	for _, tc := range []struct {
		name         string
		path         string
		stream       bool
		wantAttempts int
		wantStatus   int
	}{
		{"json", "/v1/chat/completions?attempts=1", false, 1, 0},
		{"chunked stream with trailer", "/v1/chat/completions?attempts=2", true, 2, 0},
		{"json again on the same connection", "/v1/chat/completions", false, 0, 0},
		{"error status keeps the connection", "/v1/chat/completions?fail=1", false, 0, 503},
		{"stream after an error", "/v1/chat/completions?attempts=1", true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest("", addr, tc.path, body, tc.stream)
			resp, err := c.roundTrip(&req)
			var se *statusError
			switch {
			case tc.wantStatus != 0:
				if !errors.As(err, &se) || se.status != tc.wantStatus {
					t.Fatalf("roundTrip error = %v, want status %d", err, tc.wantStatus)
				}
				return
			case err != nil:
				t.Fatalf("roundTrip: %v", err)
			}
			if resp.attempts != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", resp.attempts, tc.wantAttempts)
			}
			if resp.closeConn {
				t.Errorf("closeConn set on a keep-alive answer")
			}
		})
	}
}

func TestClientConn_RejectsATruncatedStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[]}\n\n") //nolint:errcheck // test server
	}))
	t.Cleanup(srv.Close)
	addr, _ := hostPort(srv.URL)
	c, err := dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	req := newRequest("", addr, "/", []byte(`{}`), true)
	if _, err := c.roundTrip(&req); !errors.Is(err, errBadBody) {
		t.Fatalf("roundTrip of a stream without [DONE] = %v, want errBadBody", err)
	}
}

func TestRunLoad_CountsOnlyTheMeasuredWindow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeChat))
	t.Cleanup(srv.Close)
	addr, _ := hostPort(srv.URL)
	var started, ended time.Time
	res := runLoad(loadSpec{
		addr: addr, conns: 2, warmup: 100 * time.Millisecond, duration: 200 * time.Millisecond,
		requests: []request{
			newRequest("a", addr, "/v1/chat/completions?attempts=1", []byte(`{}`), false),
			newRequest("b", addr, "/v1/chat/completions?attempts=2", []byte(`{}`), true),
		},
		onStart: func() { started = time.Now() },
		onEnd:   func() { ended = time.Now() },
	})
	if res.fail != 0 {
		t.Fatalf("%d failures: %s", res.fail, res.errSummary())
	}
	if res.ok == 0 || res.hists["a"].Count() == 0 || res.hists["b/failover"].Count() == 0 {
		t.Fatalf("ok %d, labels %v: want answers under a and b/failover", res.ok, keys(res.hists))
	}
	if got := res.hists["a"].Count() + res.hists["b/failover"].Count(); got != res.ok {
		t.Errorf("labels hold %d answers, ok = %d", got, res.ok)
	}
	if w := ended.Sub(started); w < 150*time.Millisecond || w > 400*time.Millisecond {
		t.Errorf("measured window %v, want about 200ms", w)
	}
}

func TestHostPort_LoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		url, want string
		ok        bool
	}{
		{"http://127.0.0.1:8080/v1", "127.0.0.1:8080", true},
		{"http://[::1]:9", "[::1]:9", true},
		{"http://10.0.0.1:80", "", false},
		{"https://127.0.0.1:80", "", false},
		{"http://example.com:80", "", false},
	} {
		got, err := hostPort(tc.url)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("hostPort(%q) = %q, %v; want %q, ok=%v", tc.url, got, err, tc.want, tc.ok)
		}
	}
}

func keys[V any](m map[string]V) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}

// TestRunLoad_AlternatesBetweenAddresses checks the paired measurement's
// footing: one connection whose requests name two servers sends to each in
// turn, and each server's latencies stay under its own label.
func TestRunLoad_AlternatesBetweenAddresses(t *testing.T) {
	var hitsA, hitsB atomic.Int64
	srvA := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hitsA.Add(1); fakeChat(w, r) }))
	t.Cleanup(srvA.Close)
	srvB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsB.Add(1)
		time.Sleep(2 * time.Millisecond) // B is slower: its label must show it
		fakeChat(w, r)
	}))
	t.Cleanup(srvB.Close)
	a, _ := hostPort(srvA.URL)
	b, _ := hostPort(srvB.URL)
	res := runLoad(loadSpec{conns: 1, warmup: 50 * time.Millisecond, duration: 200 * time.Millisecond,
		requests: []request{
			newRequest("a", a, "/v1/chat/completions", []byte(`{}`), false),
			newRequest("b", b, "/v1/chat/completions", []byte(`{}`), false),
		}})
	if res.fail != 0 || res.hists["a"] == nil || res.hists["b"] == nil {
		t.Fatalf("%d failures (%s), labels %v", res.fail, res.errSummary(), keys(res.hists))
	}
	if na, nb := int64(res.hists["a"].Count()), int64(res.hists["b"].Count()); na == 0 || na-nb > 1 || nb-na > 1 {
		t.Errorf("a answered %d, b %d: want them alternating", na, nb)
	}
	if d := hitsA.Load() - hitsB.Load(); d > 1 || d < -1 {
		t.Errorf("servers got %d and %d requests: want them alternating", hitsA.Load(), hitsB.Load())
	}
	if pa, pb := res.hists["a"].Quantile(0.5), res.hists["b"].Quantile(0.5); pb < pa+time.Millisecond {
		t.Errorf("p50 a %v, b %v: b sleeps 2ms more per request", pa, pb)
	}
}
