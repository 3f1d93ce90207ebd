package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestStream_LetsGoOfTheRequestOnceItFlows holds streams whose requests
// carry a long conversation (4 MiB each) after their first chunk, and
// counts the heap they hold: once output flows nothing is sent again, so
// a stream must not keep its request, nor any piece of it, for its life
// (docs/measurements.md, "Slow streams": a plain proxy holds none of it). A short string
// cut from the body (the model's name) would keep the whole body; so would
// the parsed messages. Real HTTP on both sides, each surface to a target of
// its own dialect (the raw pass-through) and the OpenAI surface to an
// Anthropic target (translated), and the Gemini surface (its model named
// in the path) to an OpenAI target.
func TestStream_LetsGoOfTheRequestOnceItFlows(t *testing.T) {
	const (
		streams = 4
		prompt  = 4 << 20
	)
	for _, c := range []struct{ surface, target string }{
		{"openai", "openai"}, {"anthropic", "anthropic"}, {"openai", "anthropic"}, {"gemini", "openai"},
	} {
		t.Run(c.surface+">"+c.target, func(t *testing.T) {
			up := newHeldUpstream(t, 1)
			gw := newHeldGateway(t, up, c.target)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go gw.Serve(ln) //nolint:errcheck // ends at Shutdown
			path := map[string]string{
				"openai":    "/v1/chat/completions",
				"anthropic": "/v1/messages",
				"gemini":    "/v1beta/models/held:streamGenerateContent?alt=sse",
			}[c.surface]
			before := heapAfterGC()
			closeAll := holdLongStreams(t, ln.Addr().String(), path, streams, prompt, up)
			defer closeAll()
			// The transport lets go of the sent body when its write has
			// ended, on its own goroutine, which may run a moment after
			// the first chunk is out: a kept request never goes.
			held := int64(heapAfterGC()) - int64(before)
			for end := time.Now().Add(2 * time.Second); held > prompt && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
				held = int64(heapAfterGC()) - int64(before)
			}
			t.Logf("%d held streams with %d MiB requests: heap %+.1f MiB", streams, prompt>>20, float64(held)/(1<<20))
			// Each kept request would hold 4 MiB (twice that as text and
			// bytes); a stream's own buffers are a few KiB.
			if held > prompt {
				t.Errorf("%d streams hold %.1f MiB of heap after their first chunk: their %d MiB requests are still kept",
					streams, float64(held)/(1<<20), prompt>>20)
			}
		})
	}
}

// heapAfterGC returns the heap in use after two collections (the second
// empties sync.Pools' victim caches).
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// holdLongStreams opens n streamed requests for the route held, each with
// a user message of size bytes, on connections of their own, and reads each
// one's first event; they are then held, unread, until the returned
// function closes them. The request bytes are gone from this side once
// written.
func holdLongStreams(t *testing.T, addr, path string, n, size int, up *heldUpstream) func() {
	t.Helper()
	var conns []net.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	up.flowed.Add(n)
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			closeAll()
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if err := writeLongRequest(c, addr, path, size); err != nil {
			closeAll()
			t.Fatalf("stream %d: %v", i, err)
		}
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				closeAll()
				t.Fatalf("stream %d: %v", i, err)
			}
			if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
				closeAll()
				t.Fatalf("stream %d: %s", i, line)
			}
			if strings.HasPrefix(line, "data: ") {
				break
			}
		}
	}
	up.flowed.Wait()
	return closeAll
}

// writeLongRequest writes a streamed chat request whose user message is
// size bytes of text, in pieces, keeping none of it.
func writeLongRequest(c net.Conn, addr, path string, size int) error {
	head := `{"model":"held","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	if strings.Contains(path, ":streamGenerateContent") {
		head = `{"contents":[{"role":"user","parts":[{"text":"`
		tail = `"}]}]}`
	}
	_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAnthropic-Version: 2023-06-01\r\nContent-Length: %d\r\n\r\n%s",
		path, addr, len(head)+size+len(tail), head)
	if err != nil {
		return err
	}
	piece := []byte(strings.Repeat("many words ", 1<<12)) // 44 KiB
	for left := size; left > 0; left -= len(piece) {
		if _, err := c.Write(piece[:min(left, len(piece))]); err != nil {
			return err
		}
	}
	_, err = io.WriteString(c, tail)
	return err
}
