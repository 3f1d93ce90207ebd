package exchange

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const testKey = "sk-exchange-secret-key"

func TestPost_SendsOneRequestWithDefaultDialectAndCallerHeaders(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			body, _ := io.ReadAll(r.Body)
			accept := "application/json"
			if stream {
				accept = "text/event-stream"
			}
			for _, c := range []struct{ name, got, want string }{
				{"method", r.Method, http.MethodPost},
				{"path", r.URL.Path, "/v1/x"},
				{"body", string(body), `{"a":1}`},
				{"Content-Type", r.Header.Get("Content-Type"), "application/json"},
				{"Accept", r.Header.Get("Accept"), accept},
				{"User-Agent", r.Header.Get("User-Agent"), "detour"},
				{"X-Api-Key", r.Header.Get("X-Api-Key"), testKey},
				{"X-Version (overridden)", strings.Join(r.Header.Values("X-Version"), ","), "2,3"},
				{"X-Title (caller's)", r.Header.Get("X-Title"), "t"},
			} {
				if c.got != c.want {
					t.Errorf("stream=%v: %s = %q, want %q", stream, c.name, c.got, c.want)
				}
			}
		}))
		t.Cleanup(srv.Close)
		resp, err := Post{URL: srv.URL + "/v1/x", Body: []byte(`{"a":1}`), Stream: stream,
			Header:   http.Header{"X-Api-Key": {testKey}, "X-Version": {"1"}},
			Override: http.Header{"x-version": {"2", "3"}, "X-Title": {"t"}},
			Key:      testKey, Client: srv.Client()}.Do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := calls.Load(); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	}
}

// addingTransport answers 200 after appending to each header of the
// request: a RoundTripper that breaks the rule not to touch the request.
type addingTransport struct {
	mu   sync.Mutex // guards seen
	seen []http.Header
}

func (t *addingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen = append(t.seen, r.Header.Clone())
	t.mu.Unlock()
	for k := range r.Header {
		r.Header.Add(k, "added")
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// The default headers' values are shared by every request, and the
// caller's are shared with its own maps: requests at once, each added to by
// its transport, must neither see each other's values nor write into the
// shared arrays (the race detector's part: make test runs it so).
func TestPost_SharedHeaderValuesSurviveAnAdd(t *testing.T) {
	tr := &addingTransport{}
	// Room past the value, as a slice built by append has: an Add into a
	// shared slice of it would write there.
	dialect := http.Header{"X-Api-Key": append(make([]string, 0, 4), testKey)}
	override := http.Header{"X-Title": append(make([]string, 0, 4), "t")}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := Post{URL: "http://upstream.invalid/v1/x", Body: []byte("{}"), Header: dialect,
				Override: override, Key: testKey, Client: &http.Client{Transport: tr}}.Do(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	want := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"},
		"User-Agent": {"detour"}, "X-Api-Key": {testKey}, "X-Title": {"t"}}
	for i, h := range tr.seen {
		if len(h) != len(want) {
			t.Errorf("request %d: headers %v, want %v", i, h, want)
		}
		for k, v := range want {
			if got := h.Values(k); len(got) != 1 || got[0] != v[0] {
				t.Errorf("request %d: %s = %q, want %q", i, k, got, v)
			}
		}
	}
	if got := dialect.Values("X-Api-Key"); len(got) != 1 || got[0] != testKey {
		t.Errorf("the dialect's map changed: X-Api-Key = %q", got)
	}
	if got := override.Values("X-Title"); len(got) != 1 || got[0] != "t" {
		t.Errorf("the caller's map changed: X-Title = %q", got)
	}
}

func TestPost_DefaultClientReturnsRedirects(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	resp, err := Post{URL: srv.URL}.Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || calls.Load() != 1 {
		t.Errorf("status %d after %d requests, want 307 after 1", resp.StatusCode, calls.Load())
	}
}

func TestPost_KeyNeverInErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	closed := srv.URL
	srv.Close() // nothing listens there now: the dial fails
	for name, u := range map[string]string{
		"dial error":  closed + "/v1?key=" + testKey,
		"invalid URL": "http://[::1" + testKey,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Post{URL: u, Key: testKey}.Do(context.Background())
			if err == nil || strings.Contains(err.Error(), testKey) {
				t.Fatalf("err = %v, want an error without the key", err)
			}
			var ue *url.Error
			if errors.As(err, &ue) && strings.Contains(ue.URL, testKey) {
				t.Errorf("key in url.Error.URL %q", ue.URL)
			}
		})
	}
}

func TestPost_ContextBoundsTheExchange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Post{URL: "http://127.0.0.1:9/"}).Do(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// writeCounter counts the writes made on its connection.
type writeCounter struct {
	net.Conn
	writes *atomic.Int32
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A request leaves in one write, headers and body together, over Go's own
// transport, a stream's too (its body lets go of its bytes once written):
// the transport flushes the headers first before a body it does not know.
func TestPost_RequestLeavesInOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the test counts writes
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		stream bool
		want   int32
	}{{false, 1}, {true, 1}} {
		var writes atomic.Int32
		// The default client's transport, with its write buffer, which
		// must hold the head and body of a request with a 1 KB prompt.
		tr := defaultClient().Transport.(*http.Transport).Clone()
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return writeCounter{conn, &writes}, err
		}
		body := []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}]}`)
		resp, err := Post{URL: srv.URL + "/v1/x", Body: body, Stream: c.stream, Client: &http.Client{Transport: tr}}.Do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained to count the writes of one exchange
		resp.Body.Close()
		tr.CloseIdleConnections()
		if got := writes.Load(); got != c.want {
			t.Errorf("stream=%v: the request left in %d writes, want %d", c.stream, got, c.want)
		}
	}
}

type readCounter struct {
	net.Conn
	reads *atomic.Int32
}

func (c readCounter) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

// providerHeaders is the header set of an OpenAI chat completion's answer
// as api.openai.com sends it (values of the same length): with the
// server's own (Date, Content-Length), about 1.3 KB.
var providerHeaders = [][2]string{
	{"Access-Control-Expose-Headers", "X-Request-ID"},
	{"Alt-Svc", `h3=":443"; ma=86400`},
	{"Cf-Cache-Status", "DYNAMIC"},
	{"Cf-Ray", "8f1d2c3b4a596877-AMS"},
	{"Openai-Organization", "user-abcdefghijklmnopqrstuvwx"},
	{"Openai-Processing-Ms", "412"},
	{"Openai-Project", "proj_ABCDEFGHIJKLMNOPQRSTUVWX"},
	{"Openai-Version", "2020-10-01"},
	{"Server", "cloudflare"},
	{"Set-Cookie", "__cf_bm=" + strings.Repeat("a", 162) + "; path=/; expires=Wed, 02-Dec-26 03:46:54 GMT; domain=.api.openai.com; HttpOnly; Secure; SameSite=None"},
	{"Set-Cookie", "_cfuvid=" + strings.Repeat("b", 59) + "; path=/; domain=.api.openai.com; HttpOnly; Secure; SameSite=None"},
	{"Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload"},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Envoy-Upstream-Service-Time", "418"},
	{"X-Ratelimit-Limit-Requests", "10000"},
	{"X-Ratelimit-Limit-Tokens", "30000000"},
	{"X-Ratelimit-Remaining-Requests", "9999"},
	{"X-Ratelimit-Remaining-Tokens", "29999986"},
	{"X-Ratelimit-Reset-Requests", "6ms"},
	{"X-Ratelimit-Reset-Tokens", "0s"},
	{"X-Request-Id", "req_" + strings.Repeat("c", 32)},
}

// The head of a provider's answer, its two dozen headers included, is read
// in one read through the default client's read buffer, which every
// connection keeps for its life (a stream's minutes too): it is small, but
// not so small that a usual answer takes two reads.
func TestPost_AnswerHeadArrivesInOneRead(t *testing.T) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the test counts reads
		for _, h := range providerHeaders {
			w.Header().Add(h[0], h[1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body)) //nolint:errcheck // the test reads what arrived
	}))
	t.Cleanup(srv.Close)
	var reads atomic.Int32
	tr := defaultClient().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return readCounter{conn, &reads}, err
	}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := Post{URL: srv.URL + "/v1/x", Body: []byte(`{}`), Client: &http.Client{Transport: tr}}.Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := reads.Load(); got != 1 {
		head := 0
		for k, v := range resp.Header {
			for _, s := range v {
				head += len(k) + len(s) + 4
			}
		}
		t.Errorf("the answer's head (%d bytes of headers) took %d reads, want 1", head, got)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != body {
		t.Errorf("body = %q", b)
	}
}
