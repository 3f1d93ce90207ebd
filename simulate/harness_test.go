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

// prompt is the user turn of every minimal request, as in the recordings.
const prompt = "Say hello. Use only one word."

// messagesBody is a minimal Anthropic Messages API body for model.
func messagesBody(model string, stream bool) string {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return `{"model":"` + model + `","max_tokens":1024,"messages":[{"role":"user","content":"` + prompt + `"}]` + s + `}`
}

// responsesBody is a minimal Responses API body, as the recordings send
// it (maruel/genai openairesponses GenSync-Text.yaml).
func responsesBody(model string, stream bool) string {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return `{"model":"` + model + `","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"` + prompt + `"}]}]` + s + `}`
}

// generateBody is a minimal Gemini generateContent body.
func generateBody() string {
	return `{"contents":[{"role":"user","parts":[{"text":"` + prompt + `"}]}]}`
}

// geminiPath is the path, under a Gemini base URL, of model's generateContent
// or (stream) streamGenerateContent?alt=sse.
func geminiPath(model string, stream bool) string {
	if stream {
		return "/models/" + model + ":streamGenerateContent?alt=sse"
	}
	return "/models/" + model + ":generateContent"
}

// do sends method url with body and header pairs.
func (r *rig) do(t *testing.T, ctx context.Context, method, url, body string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return r.client.Do(req)
}

// mustDo is do that fails the test on a transport error and returns the whole body.
func (r *rig) mustDo(t *testing.T, method, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp, err := r.do(t, context.Background(), method, url, body, header...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

// ask sends a minimal request for model to provider, in the provider's
// dialect and on its native route (stream picks the streaming form).
func (r *rig) ask(t *testing.T, ctx context.Context, provider, model string, stream bool, header ...string) (*http.Response, error) {
	t.Helper()
	base := r.srv.BaseURL(provider)
	switch r.srv.Dialect(provider) {
	case DialectAnthropic:
		return r.do(t, ctx, http.MethodPost, base+"/v1/messages", messagesBody(model, stream), append([]string{"anthropic-version", "2023-06-01"}, header...)...)
	case DialectGemini:
		return r.do(t, ctx, http.MethodPost, base+geminiPath(model, stream), generateBody(), header...)
	case DialectResponses:
		return r.do(t, ctx, http.MethodPost, base+"/responses", responsesBody(model, stream), header...)
	}
	return r.do(t, ctx, http.MethodPost, base+"/chat/completions", chatBody(model, stream), header...)
}

// mustAsk is ask that fails the test on a transport error and returns the whole body.
func (r *rig) mustAsk(t *testing.T, provider, model string, stream bool, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp, err := r.ask(t, context.Background(), provider, model, stream, header...)
	if err != nil {
		t.Fatalf("ask %s/%s: %v", provider, model, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

// namedEvent is one Anthropic SSE event.
type namedEvent struct{ name, data string }

// anthropicEvents splits an Anthropic stream into its events. Every event
// must be exactly an `event:` line and one `data:` line ended by a blank
// line, and the event's name must be its data's "type" (CLIENTS.md section 3).
func anthropicEvents(t *testing.T, body []byte) []namedEvent {
	t.Helper()
	var out []namedEvent
	for _, ev := range strings.SplitAfter(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		if !strings.HasSuffix(ev, "\n\n") {
			t.Fatalf("event not terminated by a blank line: %q", ev)
		}
		lines := strings.Split(strings.TrimSuffix(ev, "\n\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("event is not one event line and one data line: %q", ev)
		}
		e := namedEvent{strings.TrimPrefix(lines[0], "event: "), strings.TrimPrefix(lines[1], "data: ")}
		var typed struct{ Type string }
		if err := json.Unmarshal([]byte(e.data), &typed); err != nil {
			t.Fatalf("event %s: bad JSON %q: %v", e.name, e.data, err)
		}
		if typed.Type != e.name {
			t.Fatalf("event name %q but data type %q", e.name, typed.Type)
		}
		out = append(out, e)
	}
	return out
}

// geminiChunks splits a Gemini stream into the data of its events. Every
// event must be one `data:` line ended by "\r\n\r\n" (as recorded), and no
// event may be [DONE].
func geminiChunks(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.SplitAfter(string(body), "\r\n\r\n") {
		if ev == "" {
			continue
		}
		if !strings.HasSuffix(ev, "\r\n\r\n") {
			t.Fatalf("event not terminated by a blank line: %q", ev)
		}
		line := strings.TrimSuffix(ev, "\r\n\r\n")
		if strings.ContainsAny(line, "\r\n") || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("event is not one data line: %q", ev)
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			t.Fatal("a Gemini stream carries [DONE]")
		}
		out = append(out, data)
	}
	return out
}
