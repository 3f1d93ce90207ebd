package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// writeCountListener counts the writes of the connections it accepts.
type writeCountListener struct {
	net.Listener
	writes *atomic.Int32
}

func (l writeCountListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return writeCountConn{c, l.writes}, nil
}

type writeCountConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c writeCountConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A short streamed answer the upstream sends at once (here 3 KB of
// events, past the 2 KiB an SSE read took before) reaches the client in
// one write: headers, events, end and trailer. Each write is a syscall
// and, on the client's side, a wake-up; the relay flushes only when
// nothing more is buffered, so a read that takes part of the answer
// splits it.
func TestStream_ShortAnswerLeavesInOneWrite(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the answer does not depend on it
		w.Header().Set("Content-Type", "text/event-stream")
		var b strings.Builder
		for i := range 12 {
			fmt.Fprintf(&b, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%03d %s\"},\"finish_reason\":null}]}\n\n",
				i, strings.Repeat("w", 120))
		}
		b.WriteString("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		if b.Len() < 2<<10 || b.Len() > 3500 {
			t.Errorf("the answer is %d bytes: it must pass 2 KiB and fit one 4 KiB read with its framing", b.Len())
		}
		io.WriteString(w, b.String()) //nolint:errcheck // the client checks what it got
	}))
	t.Cleanup(up.Close)
	gw := newHeldGateway(t, &heldUpstream{Server: up}, "openai")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int32
	go gw.Serve(writeCountListener{ln, &writes}) //nolint:errcheck // ends with the test

	for round := range 3 { // the first on a fresh upstream connection, then reused ones
		writes.Store(0)
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"held","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.HasSuffix(string(body), "data: [DONE]\n\n") || strings.Count(string(body), strings.Repeat("w", 120)) != 12 {
			t.Fatalf("round %d: status %d, err %v, body:\n%s", round, resp.StatusCode, err, body)
		}
		if n := writes.Load(); n != 1 {
			t.Errorf("round %d: the answer reached the client in %d writes, want 1", round, n)
		}
	}
}
