package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawExchange writes each request on one TCP connection to the gateway
// at base and reads one response after each.
func rawExchange(t *testing.T, base string, reqs ...string) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // a test bound
	br := bufio.NewReader(c)
	var out []*http.Response
	for _, r := range reqs {
		if _, err := io.WriteString(c, r); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to %.60q: %v", r, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
	}
	return out
}

// Requests net/http cannot parse are answered before any handler sees
// them; the gateway still answers them in the client's dialect, as JSON
// that says what was wrong, and counts them.
func TestHTTPErrors_UnparseableRequestsGetTheClientsDialect(t *testing.T) {
	f := newFixture(t, withMetricsKey(setup{}))
	base := serve(t, f)
	const auth = "Authorization: Bearer " + clientKey + "\r\n"
	for _, tc := range []struct {
		name, req string
		status    int
		anthropic bool
		want      string
	}{
		{"NUL in a header, OpenAI", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + auth +
			"X-Trace: a\x00b\r\nContent-Length: 2\r\n\r\n{}", 400, false, "no control characters"},
		{"absurd Content-Length, Anthropic", "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: " + clientKey +
			"\r\nContent-Length: 99999999999999999999999999\r\n\r\n{}", 400, true, "Content-Length"},
		{"Anthropic by its version header", "POST /v1/x HTTP/1.1\r\nHost: x\r\nAnthropic-Version: 2023-06-01\r\n" +
			"Bad Header Name: 1\r\n\r\n", 400, true, "not valid HTTP/1.1"},
		{"headers too large", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20+4096) +
			"\r\n\r\n", 431, false, "headers are larger"},
		{"unknown transfer coding", "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked2\r\n\r\n",
			501, true, "Transfer-Encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := rawExchange(t, base, tc.req)[0]
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" ||
				resp.Header.Get("X-Should-Retry") != "false" {
				t.Fatalf("%d %v %s, want %d JSON with x-should-retry: false", resp.StatusCode, resp.Header, body, tc.status)
			}
			var got struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
					Param   *string
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if tc.anthropic != (got.Type == "error") || !strings.Contains(got.Error.Message, tc.want) {
				t.Fatalf("body %s: want the %s shape naming %q", body, map[bool]string{true: "Anthropic", false: "OpenAI"}[tc.anthropic], tc.want)
			}
			if !tc.anthropic && !strings.Contains(string(body), `"param":null`) {
				t.Fatalf("OpenAI body %s lacks its four keys", body)
			}
		})
	}

	// A connection that served a good request first: the next, bad one
	// is read as itself, and the good answer was untouched.
	rs := rawExchange(t, base, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Trace: a\x01b\r\n\r\n")
	if rs[0].StatusCode != 200 || rs[1].StatusCode != 400 {
		t.Fatalf("statuses %d, %d: want 200 then 400", rs[0].StatusCode, rs[1].StatusCode)
	}
	if b, _ := io.ReadAll(rs[1].Body); !strings.HasPrefix(string(b), `{"type":"error"`) {
		t.Fatalf("the bad request after a good one got %s, want the Anthropic shape", b)
	}

	m, text := scrape(t, f)
	if o, a := m[`detour_rejected_requests_total{reason="malformed_http",surface="openai"}`],
		m[`detour_rejected_requests_total{reason="malformed_http",surface="anthropic"}`]; o != 2 || a != 4 {
		t.Errorf("malformed_http counted %v (openai), %v (anthropic); want 2 and 4\n%s", o, a, text)
	}
}
