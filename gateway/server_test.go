package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/gateway"
	sim "github.com/detourhq/detour/simulate"
)

func TestServer_EndpointsAndErrors(t *testing.T) {
	f := newFixture(t, setup{})
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{http.MethodGet, "/healthz", 200, `"ok"`},
		{http.MethodGet, "/readyz", 200, `"ready"`},
		{http.MethodGet, "/v1/chat/completions", 405, `"type":"invalid_request_error"`},
		{http.MethodGet, "/v1/messages", 405, `"type":"error"`},
		{http.MethodPost, "/v1/audio/speech", 404, `"code":"unknown_url"`},
		{http.MethodGet, "/v1/embeddings", 405, `"type":"invalid_request_error"`},
		{http.MethodGet, "/v1/models/p2/m", 200, `"owned_by":"p2"`},
		{http.MethodGet, "/v1/models/nope", 404, `"code":"model_not_found"`},
		{http.MethodGet, "/metrics", 403, `"code":"metrics_closed"`}, // client keys, no admin key
	} {
		req, _ := http.NewRequest(tc.method, f.ts.URL+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+clientKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, b)
		}
	}
	// Anthropic clients get Anthropic's list shape.
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/v1/models", nil)
	req.Header.Set("X-Api-Key", clientKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"has_more":false`) || !strings.Contains(string(b), `"type":"model"`) {
		t.Errorf("anthropic models: %s", b)
	}
	var an struct {
		Data []struct {
			CreatedAt time.Time `json:"created_at"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &an); err != nil || len(an.Data) == 0 || time.Since(an.Data[0].CreatedAt) > time.Hour {
		t.Errorf("anthropic models created_at: %v %s", err, b)
	}
	// OpenAI clients: created is when the gateway loaded its routes, not 0.
	_, ob := f.get("/v1/models")
	var oa struct {
		Data []struct {
			Created int64 `json:"created"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(ob), &oa); err != nil || len(oa.Data) == 0 ||
		time.Since(time.Unix(oa.Data[0].Created, 0)) > time.Hour {
		t.Errorf("openai models created: %v %s", err, ob)
	}
	// Draining: not ready, and new requests are refused with a retryable 503.
	if err := f.gw.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, _ := f.get("/readyz"); resp.StatusCode != 503 {
		t.Errorf("readyz while draining: %d", resp.StatusCode)
	}
	if resp, body := f.post("/v1/chat/completions", chatBody); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("request while draining: %d %s", resp.StatusCode, body)
	}
}

// gateClock is the real clock, except that a sleep of exactly d (the
// drain delay under test) tells sleeping and lasts until release is closed
// or its context ends.
type gateClock struct {
	clock.Real
	d                 time.Duration
	sleeping, release chan struct{}
}

func (g *gateClock) Sleep(ctx context.Context, d time.Duration) bool {
	if d != g.d {
		return g.Real.Sleep(ctx, d)
	}
	close(g.sleeping)
	select {
	case <-g.release:
		return true
	case <-ctx.Done():
		return false
	}
}

// listen serves f's gateway with Serve on a free loopback port and returns
// its base URL and Serve's error, once it returns.
func listen(t *testing.T, f *fixture) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.gw.Serve(ln) }()
	t.Cleanup(func() { f.gw.Shutdown(context.Background()) }) //nolint:errcheck // already stopped
	return "http://" + ln.Addr().String(), served
}

// fresh GETs url on a new connection, with the client key, and returns the
// status, or the dial error.
func fresh(url string) (int, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestDrain_ReadyzGoes503WhileTheListenerStillServes(t *testing.T) {
	gate := &gateClock{d: 7 * time.Second, sleeping: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, setup{clock: gate, gateway: defaultGateway + "  drain_delay: 7s\n"})
	base, served := listen(t, f)
	if code, err := fresh(base + "/readyz"); code != 200 {
		t.Fatalf("/readyz before the drain: %d %v", code, err)
	}
	drained := make(chan error, 1)
	go func() { drained <- f.gw.Drain(context.Background()) }()
	<-gate.sleeping
	// During drain_delay: not ready, yet new connections are accepted and
	// requests served as before.
	if code, err := fresh(base + "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz during drain_delay: %d %v, want 503 on a listener still open", code, err)
	}
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(clientKey), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	if _, err := c.Chat.Completions.New(ctx(t), userHi()); err != nil {
		t.Errorf("a request during drain_delay: %v, want it served", err)
	}
	if code, _ := fresh(base + "/v1/models"); code != 200 {
		t.Errorf("/v1/models during drain_delay: %d", code)
	}
	close(gate.release)
	if err := <-drained; err != nil {
		t.Errorf("Drain: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if _, err := fresh(base + "/healthz"); err == nil {
		t.Error("the listener still accepts after the drain")
	}
}

func TestDrain_ContextEndCutsRequestsAtOnce(t *testing.T) {
	gate := &gateClock{d: 7 * time.Second, sleeping: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, setup{clock: gate, gateway: defaultGateway + "  drain_delay: 7s\n  drain_timeout: 1m\n",
		p1: []sim.Fault{{Kind: sim.Hang}}})
	base, _ := listen(t, f)
	got := make(chan string, 1)
	go func() {
		c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(clientKey), option.WithMaxRetries(0))
		_, err := c.Chat.Completions.New(context.Background(), userHi())
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			got <- fmt.Sprintf("%d %s", apiErr.StatusCode, apiErr.Message)
			return
		}
		got <- errString(err)
	}()
	waitFor(t, "the upstream to hang", func() bool { return f.sim.Stats().Total() == 1 })
	second, signal := context.WithCancel(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- f.gw.Drain(second) }()
	<-gate.sleeping
	start := time.Now()
	signal() // the second signal, during drain_delay
	var de *gateway.DrainError
	if err := <-drained; !errors.As(err, &de) || de.Cut != 1 || !errors.Is(err, gateway.ErrDrainTimeout) {
		t.Errorf("Drain: %v, want a DrainError counting 1 request cut", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Drain returned %s after its context ended, want at once", d)
	}
	if text := <-got; !strings.Contains(text, "503") || !strings.Contains(text, "shutting down") {
		t.Errorf("the cut request got %q, want a 503 saying the gateway is shutting down", text)
	}
	canceled := 0
	for _, r := range f.ledger.Records() {
		if r.Status == "canceled" {
			canceled++
		}
	}
	if canceled != 1 {
		t.Errorf("%d canceled records in the ledger, want the cut attempt's: %+v", canceled, f.ledger.Records())
	}
	waitFor(t, "the upstream to see the cancel", func() bool { return f.upstreamCanceled.Load() == 1 })
}

func TestShutdown_NothingInFlightIsNoDrainError(t *testing.T) {
	f := newFixture(t, setup{})
	listen(t, f)
	done, cancel := context.WithCancel(context.Background())
	cancel() // already ended: nothing to wait for, nothing to cut
	if err := f.gw.Shutdown(done); err != nil {
		t.Errorf("Shutdown: %v, want nil with nothing in flight", err)
	}
}
