//go:build !race

// The race detector's instrumentation deepens every frame and doubles the
// stack guard, so stack sizes mean nothing under it: `make test` runs this
// file in a build of its own (the Makefile's stack target).

package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// heldStreams is how many streams each system holds while its stacks are
// counted: enough that one stray goroutine is lost in the average.
const heldStreams = 128

// holdStreams opens n streamed chat requests to addr, each on a
// connection of its own, and reads each one's first event; the streams are
// then held, unread, until the returned function closes them. Reading
// goes on in this goroutine alone: the client adds no goroutine per
// stream to the count.
func holdStreams(t *testing.T, addr, path, model string, n int, up *heldUpstream) func() {
	t.Helper()
	body := `{"model":"` + model + `","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"tell me a story"}]}`
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAnthropic-Version: 2023-06-01\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body)
	conns := make([]net.Conn, 0, n)
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	up.flowed.Add(n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			closeAll()
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(req)); err != nil {
			closeAll()
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				closeAll()
				t.Fatalf("stream %d: %v", len(conns), err)
			}
			if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
				closeAll()
				t.Fatalf("stream %d: %s", len(conns), line)
			}
			if strings.HasPrefix(line, "data: ") {
				break
			}
		}
	}
	up.flowed.Wait() // every stream has flowed, and waits for its next chunk
	return closeAll
}

// stackPerStream returns the goroutine stack memory n held streams
// through the system served by serve add, in bytes per stream.
func stackPerStream(t *testing.T, up *heldUpstream, path, model string, serve func(net.Listener)) float64 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go serve(ln)
	settle()
	before := stackInuse()
	release := holdStreams(t, ln.Addr().String(), path, model, heldStreams, up)
	time.Sleep(20 * time.Millisecond) // the last chunks reach the clients' sockets
	after := stackInuse()
	release()
	ln.Close()
	return float64(after-before) / heldStreams
}

// settle waits until the goroutines of what ran before (closed
// connections, finished tests) have ended: until their count holds still.
func settle() {
	n := runtime.NumGoroutine()
	for still := 0; still < 3; {
		time.Sleep(20 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			still++
		} else {
			n, still = m, 0
		}
	}
}

// stackInuse returns the stack memory in use after two collections: a
// stack shrinks at a collection when less than a quarter of it is used.
func stackInuse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}

// TestStream_HandlerStackStaysSmall holds streams waiting for their next
// token through a plain httputil.ReverseProxy and through detour (same
// upstream, real HTTP, chunks parsed and relayed, idle timers on) and
// compares the goroutine stack memory each stream holds. The handler's
// goroutine waits on the upstream for the stream's whole life; were any
// step of detour's (routing, decoding, writing) to take it past 8 KiB, its
// stack would stay at 16 KiB, twice the proxy's handler, for every stream
// open (docs/measurements.md, "Slow streams"). Each system is measured in a process of
// its own (this test binary, run again): stacks freed by earlier tests
// would otherwise blur the count.
func TestStream_HandlerStackStaysSmall(t *testing.T) {
	if sys := os.Getenv(stackSystemEnv); sys != "" {
		fmt.Printf("stack-per-stream %s %.0f\n", sys, measureStack(t, sys))
		return
	}
	measure := func(sys string) float64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStream_HandlerStackStaysSmall$", "-test.count=1")
		cmd.Env = append(os.Environ(), stackSystemEnv+"="+sys)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("measuring %s: %v\n%s", sys, err, out)
		}
		var got string
		var v float64
		for _, line := range strings.Split(string(out), "\n") {
			if _, err := fmt.Sscanf(line, "stack-per-stream %s %f", &got, &v); err == nil && got == sys {
				return v
			}
		}
		t.Fatalf("measuring %s: no figure in its output:\n%s", sys, out)
		return 0
	}
	// Each surface to a target of its own dialect (the answer passes
	// through raw, the path most streams take), and the OpenAI surface to
	// an Anthropic target (translated both ways). The proxy forwards to
	// the upstream in the surface's own dialect.
	for _, c := range []struct{ surface, target string }{
		{"openai", "openai"}, {"anthropic", "anthropic"}, {"openai", "anthropic"},
	} {
		name := c.surface + ">" + c.target
		proxyStack, detourStack := measure("proxy:"+c.surface+":"+c.surface), measure("detour:"+c.surface+":"+c.target)
		t.Logf("%s: goroutine stack per held stream: proxy %.0f B, detour %.0f B", name, proxyStack, detourStack)
		if proxyStack < 8<<10 {
			t.Fatalf("%s: the proxy's streams hold %.0f B of stack each: the count missed the handlers' goroutines", name, proxyStack)
		}
		// A handler grown to 16 KiB would add 8 KiB a stream; the bar is
		// half of that, since both figures move by about 1 KiB from run to
		// run (2 KiB flaked: 31232 B against 28928 B, then 30208 B against
		// 28416 B on the same commit).
		if detourStack > proxyStack+4<<10 {
			t.Errorf("%s: detour's streams hold %.0f B of stack each, the proxy's %.0f B: a goroutine waiting on each stream has grown past 8 KiB",
				name, detourStack, proxyStack)
		}
	}
}

// stackSystemEnv names what a child process of
// TestStream_HandlerStackStaysSmall measures: system:surface:target, the
// system proxy or detour, the surface and the target's dialect openai or
// anthropic.
const stackSystemEnv = "DETOUR_TEST_STACK_SYSTEM"

// measureStack returns the stack memory per held stream through
// what = system:surface:target.
func measureStack(t *testing.T, what string) float64 {
	parts := strings.Split(what, ":")
	if len(parts) != 3 {
		t.Fatalf("%s=%q: want system:surface:target", stackSystemEnv, what)
	}
	sys, surface, dialect := parts[0], parts[1], parts[2]
	path := "/v1/chat/completions"
	if surface == "anthropic" {
		path = "/v1/messages"
	}
	up := newHeldUpstream(t, 4)
	if sys == "proxy" {
		target, _ := url.Parse(up.URL)
		proxy := &http.Server{Handler: &httputil.ReverseProxy{
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			Transport: &http.Transport{MaxIdleConnsPerHost: heldStreams},
		}}
		defer proxy.Close()
		return stackPerStream(t, up, path, "m", func(ln net.Listener) { proxy.Serve(ln) })
	}
	gw := newHeldGateway(t, up, dialect)
	return stackPerStream(t, up, path, "held", func(ln net.Listener) { gw.Serve(ln) })
}
