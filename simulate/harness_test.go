package simulate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
)

// epoch is the fake clock's start in every test that uses one.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rig is a Server reached one way: over loopback TCP or in memory.
type rig struct {
	srv    *Server
	client *http.Client
	clock  *clock.Fake
}

// ways lists the two ways to reach a server.
var ways = []string{"tcp", "memory"}

// newRig starts providers and reaches them the given way. The clock is fake
// both ways, so latencies and delays cost nothing.
func newRig(t *testing.T, way string, providers ...Provider) *rig {
	t.Helper()
	srv, err := NewServer(providers...)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	r := &rig{srv: srv, clock: clock.NewFake(epoch)}
	srv.Clock = r.clock
	switch way {
	case "tcp":
		if err := srv.Listen(); err != nil {
			t.Fatalf("Listen: %v", err)
		}
		tr := &http.Transport{}
		r.client = &http.Client{Transport: tr}
		t.Cleanup(tr.CloseIdleConnections)
	case "memory":
		r.client = &http.Client{Transport: srv.Transport()}
	default:
		t.Fatalf("unknown way %q", way)
	}
	t.Cleanup(func() { srv.Close() })
	return r
}

// forEachWay runs f once over TCP and once in memory.
func forEachWay(t *testing.T, f func(t *testing.T, way string)) {
	t.Helper()
	for _, way := range ways {
		t.Run(way, func(t *testing.T) { f(t, way) })
	}
}

// post sends a chat completions body to provider and returns the response.
func (r *rig) post(t *testing.T, ctx context.Context, provider, body string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.BaseURL(provider)+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return r.client.Do(req)
}

// mustPost is post that fails the test on a transport error and returns the
// whole body.
func (r *rig) mustPost(t *testing.T, provider, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp, err := r.post(t, context.Background(), provider, body, header...)
	if err != nil {
		t.Fatalf("POST %s: %v", provider, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

// chatBody is a request body for model; stream adds stream options.
func chatBody(model string, stream bool) string {
	if stream {
		return `{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say hello. Use only one word."}]}`
	}
	return `{"model":"` + model + `","messages":[{"role":"user","content":"Say hello. Use only one word."}]}`
}

// sseEvents splits an SSE body into the data of its events. Every event
// must be one "data: " line ended by a blank line.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.SplitAfter(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		if !strings.HasSuffix(ev, "\n\n") {
			t.Fatalf("event not terminated by a blank line: %q", ev)
		}
		line := strings.TrimSuffix(ev, "\n\n")
		if strings.Contains(line, "\n") || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("event is not one data line: %q", ev)
		}
		out = append(out, strings.TrimPrefix(line, "data: "))
	}
	return out
}

// readEvents reads SSE data events until the body ends, returning them and
// the read error (nil on a clean EOF).
func readEvents(body io.Reader) ([]string, error) {
	var out []string
	br := bufio.NewReader(body)
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n"))
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// decode unmarshals b into a generic value, failing the test on bad JSON.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	return v
}

// isTimeout reports a context deadline error, whichever way it is wrapped.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}
