package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sim "github.com/detourhq/detour/simulate"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is a `detour serve` running in the test: its base URL, its exit
// code once it stops, and its stderr.
type served struct {
	base string
	code chan int
	errb *lockedBuffer
}

// startServe runs `detour serve` on a free loopback port until ctx ends,
// and waits for the base URL it prints first. args are more flags (the
// default ledger is none).
func startServe(t *testing.T, ctx context.Context, vars map[string]string, args ...string) *served {
	t.Helper()
	pr, pw := io.Pipe()
	s := &served{code: make(chan int, 1), errb: &lockedBuffer{}}
	if !slices.Contains(args, "--ledger") {
		args = append(args, "--ledger", "-")
	}
	go func() {
		s.code <- Main(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), Env{
			Stdin: strings.NewReader(""), Stdout: pw, Stderr: s.errb,
			Getenv: func(k string) string { return vars[k] },
		})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL on stdout: %v (stderr %s)", err, s.errb.String())
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain the rest of stdout
	s.base = strings.TrimSpace(line)
	return s
}

// stopped waits for serve to stop after its context ended.
func (s *served) stopped(t *testing.T) int {
	t.Helper()
	select {
	case c := <-s.code:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	return 0
}

// gatewaySection appends a gateway: section of these lines (each
// "key: value") to the config, with drain_delay: 0 unless they set it, so
// that serve stops at once.
func gatewaySection(t *testing.T, vars map[string]string, lines ...string) {
	t.Helper()
	text := "gateway:\n"
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "drain_delay:") }) {
		lines = append(lines, "drain_delay: 0")
	}
	for _, l := range lines {
		text += "  " + l + "\n"
	}
	appendFile(t, vars["DETOUR_CONFIG"], text)
}

func TestServe_PrintsItsURLServesAndDrainsOnSignal(t *testing.T) {
	_, vars := fixture(t)
	gatewaySection(t, vars)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServe(t, ctx, vars)
	base := s.base
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first stdout line %q, want the base URL", base)
	}
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Hello from p1/m.") || resp.Header.Get("X-Detour-Provider") != "p1" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	cancel() // SIGINT / SIGTERM in main
	if c := s.stopped(t); c != ExitOK {
		t.Errorf("exit code %d, stderr:\n%s", c, s.errb.String())
	}
	for _, want := range []string{"listening on " + base, "msg=request", "route=default", "shutting down", "stopped"} {
		if !strings.Contains(s.errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, s.errb.String())
		}
	}
}

func TestServe_RefusesToListenWideWithoutClientKeys(t *testing.T) {
	_, vars := fixture(t)
	code, _, stderr := run(t, vars, "", "serve", "--listen", "0.0.0.0:0", "--ledger", "-")
	if code != ExitConfig || !strings.Contains(stderr, "without client keys") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	code, _, stderr = run(t, vars, "", "serve", "--log-level", "loud")
	if code != ExitUsage {
		t.Errorf("bad log level: exit %d, stderr %s", code, stderr)
	}
}

func TestServe_PprofNeedsAProfilerBuild(t *testing.T) {
	if pprofBuilt {
		t.Skip("built with -tags pprof")
	}
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"serve", "--pprof", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--ledger", "-"},
		Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	if code != ExitUsage || !strings.Contains(stderr.String(), "go build -tags pprof") || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q: want a usage error that says how to build with the profiler", code, stdout.String(), stderr.String())
	}
}

func TestServe_UsesTheHealthSection(t *testing.T) {
	srv, vars := fixture(t)
	// one failure parks p1, so its retry is refused and p2 answers (the
	// default breaker, 3 failures in a row, would let the retry go to p1)
	appendFile(t, vars["DETOUR_CONFIG"], "health:\n  failure_threshold: 1\n  open_for: 1m\n")
	gatewaySection(t, vars)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.ServerError})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServe(t, ctx, vars)
	resp, err := http.Post(s.base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Detour-Provider") != "p2" {
		t.Errorf("%d from %q: %s; want p2's answer", resp.StatusCode, resp.Header.Get("X-Detour-Provider"), body)
	}
	cancel()
	s.stopped(t)
}
