package cli

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	sim "github.com/detourhq/detour/simulate"
)

// One real SIGTERM to a real `detour serve` with a stream open, as a
// deploy sends it: /readyz answers 503 at once and for drain_delay, the
// listener closes only after it, the stream finishes whole, and serve
// exits 0 without cutting anything. (On b98ee14 the first SIGTERM was
// taken for the second: the stream ended in shutting_down at once and
// /readyz was refused within 0.3 s.)
func TestServe_OneRealSIGTERMDrainsAStreamInFlight(t *testing.T) {
	srv, vars := fixture(t)
	gatewaySection(t, vars, "drain_delay: 1s", "drain_timeout: 30s")
	const pieces, gap = 16, 200 * time.Millisecond // a 3.2 s stream
	if err := srv.Enqueue("p1", "m", sim.Fault{Kind: sim.OK, Pieces: pieces, Gap: gap}); err != nil {
		t.Fatal(err)
	}
	c := serveChild(t, vars)
	resp, err := http.Post(c.base+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := bufio.NewReader(resp.Body)
	first, err := body.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "data: ") {
		t.Fatalf("the stream did not start: %q %v", first, err)
	}
	streamDone := make(chan string, 1)
	go func() {
		rest, _ := io.ReadAll(body)
		streamDone <- first + string(rest)
	}()

	signaled := time.Now()
	if err := c.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var unready, refused time.Duration
	for unready == 0 || refused == 0 {
		code, err := status(c.base + "/readyz")
		switch {
		case err != nil && unready == 0:
			t.Fatalf("/readyz refused %s after SIGTERM before it ever answered 503: %v\nstderr:\n%s",
				time.Since(signaled), err, c.stderr.String())
		case err != nil:
			refused = time.Since(signaled)
		case code == http.StatusServiceUnavailable && unready == 0:
			unready = time.Since(signaled)
		}
		if time.Since(signaled) > 10*time.Second {
			t.Fatalf("after 10 s: /readyz 503 at %s, refused at %s", unready, refused)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if unready > 500*time.Millisecond {
		t.Errorf("/readyz answered 503 only %s after SIGTERM, want at once", unready)
	}
	if refused < time.Second {
		t.Errorf("the listener closed %s after SIGTERM, want it open for drain_delay (1s)", refused)
	}

	got := <-streamDone
	if strings.Contains(got, "shutting_down") || !strings.HasSuffix(strings.TrimSpace(got), "data: [DONE]") {
		t.Errorf("the stream in flight was not let finish:\n%s", got)
	}
	if n := strings.Count(got, `"content":"`); n < pieces {
		t.Errorf("the stream carried %d content deltas, want all %d", n, pieces)
	}
	select {
	case code := <-c.exited:
		if code != ExitOK {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, c.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit after the drain")
	}
	errs := c.stderr.String()
	if strings.Contains(errs, "second signal:") || strings.Contains(errs, "cancelled ") {
		t.Errorf("one SIGTERM cut requests:\n%s", errs)
	}
	if !strings.Contains(errs, "detour serve: stopped") {
		t.Errorf("stderr lacks the stop line:\n%s", errs)
	}
	t.Logf("/readyz 503 after %s, listener closed after %s, stream ended whole", unready, refused)
}
