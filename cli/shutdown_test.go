package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	sim "github.com/detourhq/detour/simulate"
)

// fresh is a client that opens a new connection for every request, so an
// answer proves that the listener still accepts.
var fresh = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

// status GETs url with a new connection and returns the status, or the
// dial error.
func status(url string) (int, error) {
	resp, err := fresh.Get(url)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	resp.Body.Close()
	return resp.StatusCode, nil
}

// eventually polls cond every 10 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// chatAsync posts a chat request to base and sends its status (0 if it
// failed) to the channel it returns.
func chatAsync(base string) <-chan int {
	got := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			got <- 0
			return
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	return got
}

func TestServe_DrainTurnsReadyz503BeforeTheListenerCloses(t *testing.T) {
	_, vars := fixture(t)
	gatewaySection(t, vars, "drain_delay: 1500ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServe(t, ctx, vars)
	if code, err := status(s.base + "/readyz"); code != 200 {
		t.Fatalf("/readyz before the signal: %d %v", code, err)
	}
	signaled := time.Now()
	cancel() // SIGTERM in main
	eventually(t, "/readyz to answer 503", func() bool {
		code, err := status(s.base + "/readyz")
		if err != nil {
			t.Fatalf("the listener closed before /readyz answered 503: %v", err)
		}
		return code == http.StatusServiceUnavailable
	})
	unready := time.Since(signaled)
	// The load balancer has not seen it yet: requests still come, on new
	// connections, and are served.
	if code := <-chatAsync(s.base); code != 200 {
		t.Errorf("a request during drain_delay: %d, want it served", code)
	}
	eventually(t, "the listener to close", func() bool {
		_, err := status(s.base + "/healthz")
		return err != nil
	})
	closed := time.Since(signaled)
	if c := s.stopped(t); c != ExitOK {
		t.Errorf("exit code %d, stderr:\n%s", c, s.errb.String())
	}
	if unready > time.Second || closed < time.Second {
		t.Errorf("/readyz 503 after %s, listener closed after %s: want 503 at once, the listener open for drain_delay (1.5s)",
			unready, closed)
	}
	if want := "/readyz answers 503 for 1.5s"; !strings.Contains(s.errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, s.errb.String())
	}
}

// hangingServe starts serve with these gateway: lines and a ledger file,
// sends a request whose upstream hangs, and waits until the upstream has
// it. It returns serve, the request's status channel and the ledger path.
func hangingServe(t *testing.T, ctx context.Context, lines ...string) (*served, <-chan int, string) {
	t.Helper()
	srv, vars := fixture(t)
	gatewaySection(t, vars, lines...)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.Hang})
	book := filepath.Join(t.TempDir(), "ledger.jsonl")
	s := startServe(t, ctx, vars, "--ledger", book)
	got := chatAsync(s.base)
	eventually(t, "the upstream to get the request", func() bool { return srv.Stats().Total() == 1 })
	return s, got, book
}

// canceledInLedger reports whether the ledger at path records an attempt
// cancelled by the shutdown.
func canceledInLedger(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), `"status":"canceled"`)
}

func TestServe_DrainTimeoutCancelsWhatIsLeftAndExitsZero(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, got, book := hangingServe(t, ctx, "drain_timeout: 200ms")
	start := time.Now()
	cancel()
	wantCut(t, s, start, "drain timeout (200ms): cancelled 1 request(s) still in flight", got, book)
}

// wantCut checks a serve stopped soon after start with exit 0 and the line
// want on stderr, its hanging request cut with a 503 and the attempt in
// the ledger as cancelled.
func wantCut(t *testing.T, s *served, start time.Time, want string, got <-chan int, book string) {
	t.Helper()
	if c := s.stopped(t); c != ExitOK {
		t.Errorf("exit code %d, want 0; stderr:\n%s", c, s.errb.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopped %s after it was asked to, want soon", d)
	}
	if !strings.Contains(s.errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, s.errb.String())
	}
	if code := <-got; code != http.StatusServiceUnavailable {
		t.Errorf("the cut request got %d, want 503", code)
	}
	if !canceledInLedger(t, book) {
		t.Error("the ledger does not record the cancelled attempt")
	}
}

func TestServe_SecondSignalStopsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, got, book := hangingServe(t, ctx, "drain_delay: 1m", "drain_timeout: 1m")
	cancel() // the first signal: a drain of two minutes begins
	eventually(t, "/readyz to answer 503", func() bool {
		code, _ := status(s.base + "/readyz")
		return code == http.StatusServiceUnavailable
	})
	start := time.Now()
	// serve counts signals itself from its start until it returns: this
	// one reaches its channel, not the default handler.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	wantCut(t, s, start, "second signal: cancelled 1 request(s) in flight", got, book)
}

func TestSecondSignal_CountsTheSignalThatEndedTheContext(t *testing.T) {
	done := func(ctx context.Context) bool {
		select {
		case <-ctx.Done():
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	// A caller's cancel: the first signal is the second stop.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sigs := make(chan os.Signal, 4)
	hurry, stop := secondSignal(ctx, sigs)
	defer stop()
	if done(hurry) {
		t.Fatal("hurried before any signal")
	}
	sigs <- os.Interrupt
	if !done(hurry) {
		t.Error("a signal after a cancel did not hurry")
	}
	// signal.NotifyContext's cancel, by a real signal: it came here too.
	// (Since Go 1.26 its cause also matches context.Canceled.)
	ctx, stopNotify := signal.NotifyContext(context.Background(), syscall.SIGUSR1)
	defer stopNotify()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Log("this Go's signal cause does not match context.Canceled")
	}
	sigs = make(chan os.Signal, 4)
	hurry, stop = secondSignal(ctx, sigs)
	defer stop()
	sigs <- syscall.SIGTERM
	if done(hurry) {
		t.Fatal("the signal that ended the context hurried")
	}
	sigs <- syscall.SIGTERM
	if !done(hurry) {
		t.Error("the second signal did not hurry")
	}
}

// metricsURL returns the URL of the metrics listener serve printed.
func metricsURL(t *testing.T, s *served) string {
	t.Helper()
	m := regexp.MustCompile(`metrics on (http://\S+/metrics)`).FindStringSubmatch(s.errb.String())
	if m == nil {
		t.Fatalf("no metrics address on stderr:\n%s", s.errb.String())
	}
	return m[1]
}

func TestServe_MetricsApartOnLoopbackWithoutKey(t *testing.T) {
	_, vars := fixture(t)
	gatewaySection(t, vars, "metrics_listen: 127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServe(t, ctx, vars)
	resp, err := fresh.Get(metricsURL(t, s))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"detour_requests_total", "go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes"} {
		if resp.StatusCode != 200 || !strings.Contains(string(body), "\n"+want) {
			t.Errorf("metrics apart: %d, lacks %s", resp.StatusCode, want)
		}
	}
	if code, _ := status(s.base + "/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the gateway's listener: %d, want 404 (served apart)", code)
	}
	cancel()
	if c := s.stopped(t); c != ExitOK {
		t.Errorf("exit code %d, stderr:\n%s", c, s.errb.String())
	}
}

func TestServe_MetricsClosedWithClientKeysAndRefusedWideWithoutKey(t *testing.T) {
	_, vars := fixture(t)
	vars["DETOUR_KEY_APP"] = "detour-client-key-for-cli-tests-01"
	gatewaySection(t, vars, "keys: {app: {key_env: DETOUR_KEY_APP}}")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServe(t, ctx, vars)
	req, _ := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+vars["DETOUR_KEY_APP"])
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(s.errb.String(), "/metrics answers 403") {
		t.Errorf("/metrics with a client key: %d, want 403 and a note on stderr:\n%s", resp.StatusCode, s.errb.String())
	}
	cancel()
	s.stopped(t)

	_, vars = fixture(t)
	gatewaySection(t, vars, "metrics_listen: 0.0.0.0:0")
	code, _, stderr := run(t, vars, "", "serve", "--listen", "127.0.0.1:0", "--ledger", "-")
	if code != ExitConfig || !strings.Contains(stderr, "beyond loopback") {
		t.Errorf("metrics_listen on every interface without a key: exit %d, stderr %s", code, stderr)
	}
}
