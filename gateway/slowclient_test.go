package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
)

// slowClientGateway serves one client key with one slot in front of an
// upstream that answers a stream with 64 KiB events for as long as it is
// read, and says when its request was cancelled.
func slowClientGateway(t *testing.T) (ts *httptest.Server, book *ledger.Memory, cancelled chan struct{}) {
	t.Helper()
	cancelled = make(chan struct{})
	var once atomic.Bool
	big := strings.Repeat("x", 64<<10)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(readAll(r), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(surfaces[0].answer) //nolint:errcheck // a test upstream
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			_, err := fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}`+"\n\n", big)
			w.(http.Flusher).Flush()
			if err != nil || r.Context().Err() != nil {
				if once.CompareAndSwap(false, true) {
					close(cancelled)
				}
				return
			}
		}
	})
	ts, book = yamlGateway(t, up, `providers:
  up: {dialect: openai, base_url: %[1]s/v1, key_env: UP_KEY}
routes:
  main: {chain: [up/m]}
gateway:
  body_timeout: 300ms
  write_timeout: 300ms
  keys:
    app: {key_env: APP_KEY, max_concurrent: 1}
`)
	return ts, book, cancelled
}

func readAll(r *http.Request) string {
	var b strings.Builder
	_, _ = bufio.NewReader(r.Body).WriteTo(&b)
	return b.String()
}

// post sends a chat request with the client key and returns its status.
func postStatus(t *testing.T, ts *httptest.Server, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// rawRequest opens a connection and writes head and body, then leaves it.
func rawRequest(t *testing.T, ts *httptest.Server, contentLength int, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: detour\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", clientKey, contentLength, body)
	return c
}

const plainBody = `{"model":"main","messages":[{"role":"user","content":"hi"}]}`

// A client that sends its headers and a few bytes of its body, then
// stalls, holds its key's slot no longer than gateway.body_timeout: it gets
// a 408 and the next request of that key is served.
func TestSlowClients_StalledBodyFreesItsSlot(t *testing.T) {
	ts, _, _ := slowClientGateway(t)
	start := time.Now()
	c := rawRequest(t, ts, 200, `{"model":`)
	time.Sleep(100 * time.Millisecond) // admitted, reading its body
	if got := postStatus(t, ts, plainBody); got != http.StatusTooManyRequests {
		t.Fatalf("while the stalled body holds the slot: %d, want 429 (the test proves nothing)", got)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled body: %v", err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || took < 300*time.Millisecond || took > 3*time.Second {
		t.Fatalf("stalled body: %d after %s, want 408 after the 300ms body_timeout", resp.StatusCode, took)
	}
	if got := postStatus(t, ts, plainBody); got != http.StatusOK {
		t.Fatalf("after the 408 the key's slot is still held: %d", got)
	}
}

// A streaming client that stops reading is ended within
// gateway.write_timeout once its socket's buffers are full: the upstream
// call is cancelled, the slot freed, and the ledger says client_stalled.
func TestSlowClients_NonReadingStreamFreesItsSlot(t *testing.T) {
	ts, book, cancelled := slowClientGateway(t)
	body := `{"model":"main","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	rawRequest(t, ts, len(body), body) // never read
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the upstream call of a client that stopped reading was never cancelled")
	}
	deadline := time.Now().Add(5 * time.Second)
	for postStatus(t, ts, plainBody) == http.StatusTooManyRequests {
		if time.Now().After(deadline) {
			t.Fatal("the stalled stream's slot was never freed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	found := false
	for _, r := range book.Records() {
		found = found || r.Status == ledger.StatusClientStalled && strings.Contains(r.Reason, "write_timeout")
	}
	if !found {
		t.Fatalf("no client_stalled record naming write_timeout: %+v", book.Records())
	}
}
