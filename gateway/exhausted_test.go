package gateway_test

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	sim "github.com/detourhq/detour/simulate"
)

// exhaustRoutes are three candidates, two at p1 and one at p2, each sent
// to once: limited and slow fail fast, slow waits 100 ms for headers.
const exhaustRoutes = `  limited:
    chain: [p1/m, p1/m2, p2/m]
    budget: {max_per_target: 1}
  slow:
    chain: [p1/m, p1/m2, p2/m]
    header_timeout: 100ms
    budget: {max_per_target: 1}
`

// always makes every provider answer every request with fault.
func always(fault sim.Fault) func(*sim.Provider) {
	return func(p *sim.Provider) { p.Profile = sim.Always(fault) }
}

// rateLimited is a per-minute 429 asking for 20 s, with retry-after,
// retry-after-ms and x-ratelimit-reset-requests.
var rateLimited = sim.Fault{Kind: sim.RateLimit, RetryAfter: 20 * time.Second}

// checkRetryHeaders checks h says x-should-retry: false and a wait of 1
// to maxSecs seconds, in Retry-After (whole seconds) and retry-after-ms
// alike.
func checkRetryHeaders(t *testing.T, h http.Header, maxSecs int) {
	t.Helper()
	if g := h.Get("X-Should-Retry"); g != "false" {
		t.Errorf("x-should-retry = %q, want false", g)
	}
	secs, err1 := strconv.Atoi(h.Get("Retry-After"))
	ms, err2 := strconv.Atoi(h.Get("Retry-After-Ms"))
	if err1 != nil || err2 != nil || secs < 1 || secs > maxSecs || ms < 1 || ms > maxSecs*1000 ||
		int(math.Ceil(float64(ms)/1000)) != secs {
		t.Errorf("Retry-After %q, retry-after-ms %q: want the same wait of 1..%d s", h.Get("Retry-After"),
			h.Get("Retry-After-Ms"), maxSecs)
	}
}

// inOrder checks that msg names each target, in that order.
func inOrder(t *testing.T, msg string, targets ...string) {
	t.Helper()
	at := 0
	for i, target := range targets {
		j := strings.Index(msg[at:], strconv.Itoa(i+1)+". "+target+": ")
		if j < 0 {
			t.Errorf("message %q does not list %d. %s after position %d", msg, i+1, target, at)
			return
		}
		at += j + 1
	}
}

// With the SDKs' default retries on, a chain whose every candidate is
// rate limited (two models at one provider, one at another) reaches the
// app as one 429 (openai-go and anthropic-sdk-go have no RateLimitError
// type: a *Error with StatusCode 429), with the providers' wait, after
// exactly one HTTP request per call.
func TestExhausted_AllRateLimitedIsOne429WithRetryAfter(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		f := newFixture(t, setup{routes: exhaustRoutes, tweak: always(rateLimited)})
		p := userHi()
		p.Model = "limited"
		_, err := f.openai().Chat.Completions.New(ctx(t), p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("err = %v, want a 429 *openai.Error", err)
		}
		if apiErr.Type != "rate_limit_error" || apiErr.Code != "all_candidates_rate_limited" {
			t.Errorf("type %q, code %q", apiErr.Type, apiErr.Code)
		}
		checkRetryHeaders(t, apiErr.Response.Header, 20)
		inOrder(t, apiErr.Message, "p1/m", "p1/m2", "p2/m")
		if n := f.chats.Load(); n != 1 {
			t.Errorf("the SDK sent %d requests, want exactly 1", n)
		}
		if n := f.sim.Stats().Total(); n != 3 {
			t.Errorf("%d upstream sends, want one per candidate", n)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		f := newFixture(t, setup{routes: exhaustRoutes, tweak: always(rateLimited)})
		p := messageHi()
		p.Model = "limited"
		_, err := f.anthropic().Messages.New(ctx(t), p)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("err = %v, want a 429 *anthropic.Error", err)
		}
		if apiErr.Type() != "rate_limit_error" {
			t.Errorf("type %q", apiErr.Type())
		}
		checkRetryHeaders(t, apiErr.Response.Header, 20)
		inOrder(t, apiErr.Message, "p1/m", "p1/m2", "p2/m")
		if n := f.chats.Load(); n != 1 {
			t.Errorf("the SDK sent %d requests, want exactly 1", n)
		}
	})
}

// Outages answer 503 and silence 504, each once to an SDK with its
// default retries.
func TestExhausted_StatusSaysWhatLeftNoCandidate(t *testing.T) {
	for _, row := range []struct {
		name, route string
		fault       sim.Fault
		status      int
		oaType      string
		code        string
		anType      string
	}{
		{"outage", "limited", sim.Fault{Kind: sim.Unavailable}, 503, "server_error", "all_candidates_failed", "overloaded_error"},
		{"silence", "slow", sim.Fault{Kind: sim.Hang}, 504, "server_error", "all_candidates_timed_out", "timeout_error"},
		{"rate limits", "limited", rateLimited, 429, "rate_limit_error", "all_candidates_rate_limited", "rate_limit_error"},
	} {
		t.Run(row.name, func(t *testing.T) {
			f := newFixture(t, setup{routes: exhaustRoutes, tweak: always(row.fault)})
			p := userHi()
			p.Model = row.route
			_, err := f.openai().Chat.Completions.New(ctx(t), p)
			var oaErr *openai.Error
			if !errors.As(err, &oaErr) || oaErr.StatusCode != row.status || oaErr.Type != row.oaType || oaErr.Code != row.code {
				t.Errorf("openai: %v, want %d %s %s", err, row.status, row.oaType, row.code)
			}
			m := messageHi()
			m.Model = row.route
			_, err = f.anthropic().Messages.New(ctx(t), m)
			var anErr *anthropic.Error
			if !errors.As(err, &anErr) || anErr.StatusCode != row.status || string(anErr.Type()) != row.anType {
				t.Errorf("anthropic: %v, want %d %s", err, row.status, row.anType)
			}
			if n := f.chats.Load(); n != 2 {
				t.Errorf("the SDKs sent %d requests for 2 calls", n)
			}
		})
	}
}

// The message names every candidate in chain order with what happened to
// it (failed, skipped, not tried) and its reason once (DESIGN.md rule 5).
func TestExhausted_MessageListsEveryCandidateOnce(t *testing.T) {
	// p1's account is out of quota (insufficient_quota), so p1/m2 is
	// skipped; p2/m is overloaded, and the budget of two sends leaves
	// p3/other untried.
	f := newFixture(t, setup{
		routes: `  mixed:
    chain: [p1/m, p1/m2, p2/m, p3/other]
    budget: {max_attempts: 2, max_per_target: 1}
`,
		p1: []sim.Fault{{Kind: sim.InsufficientQuota}},
		p2: []sim.Fault{{Kind: sim.Unavailable}},
	})
	resp, body := f.post("/v1/chat/completions", strings.Replace(chatBody, "default", "mixed", 1))
	if resp.StatusCode != 503 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	msg, _ := errorShape(t, false, body)["message"].(string)
	inOrder(t, msg, "p1/m", "p1/m2", "p2/m", "p3/other")
	for _, want := range []string{"1. p1/m: failed (1 send): ", "2. p1/m2: skipped: ", "3. p2/m: failed (1 send): ",
		"4. p3/other: not tried: "} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "not tried: not tried") {
		t.Errorf("message %q", msg)
	}
	// Each reason once: no part of a candidate's reason repeats another.
	_, list, _ := strings.Cut(msg, ": 1. ")
	for _, seg := range strings.Split(list, "; ") {
		parts := strings.Split(seg, " — ")
		for i := range parts {
			for j := range parts {
				a, b := strings.ToLower(strings.TrimRight(parts[i], ". ")), strings.ToLower(strings.TrimRight(parts[j], ". "))
				if i != j && b != "" && strings.Contains(a, b) {
					t.Errorf("candidate %q says %q twice", seg, parts[j])
				}
			}
		}
	}
	for _, r := range f.ledger.Records() {
		if r.Action != "skip" && !strings.Contains(msg, strings.TrimSuffix(r.Reason, "…")) {
			t.Errorf("message %q lacks %s's reason %q", msg, r.Provider+"/"+r.Model, r.Reason)
		}
	}
}

// A stream whose every candidate fails after keep-alives committed its
// headers ends with an error event of the same type and message as the
// plain answer, and its log line is a WARN that names the outcome.
func TestExhausted_StreamAfterKeepAlivesLogsWarn(t *testing.T) {
	slow := func(p *sim.Provider) {
		p.Profile = sim.Always(rateLimited)
		p.Latency.Error = 60 * time.Millisecond
	}
	f := newFixture(t, setup{routes: exhaustRoutes, gateway: defaultGateway + "  keepalive: 20ms\n", tweak: slow})
	resp, body := f.post("/v1/chat/completions", `{"model":"limited","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, ": ping\n\n") || !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("%d %q: want keep-alives, then an error event", resp.StatusCode, body)
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	var last struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(events[len(events)-1], "data: ")), &last); err != nil {
		t.Fatal(err)
	}
	msg, _ := last.Error["message"].(string)
	if last.Error["type"] != "rate_limit_error" || last.Error["code"] != "all_candidates_rate_limited" {
		t.Errorf("error event %v", last.Error)
	}
	inOrder(t, msg, "p1/m", "p1/m2", "p2/m")
	line := f.logLine(resp.Header.Get("X-Request-Id"))
	for _, want := range []string{"level=WARN", "status=200", "error_status=429", "outcome=all_failed", "error=\"detour: route"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}

	// The same through anthropic-sdk-go: an error event of the same type.
	m := messageHi()
	m.Model = "limited"
	stream := f.anthropic().Messages.NewStreaming(ctx(t), m)
	for stream.Next() {
	}
	var apiErr *anthropic.Error
	if !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "rate_limit_error" || !strings.Contains(apiErr.Message, "2. p1/m2") {
		t.Errorf("anthropic stream: %v, want a rate_limit_error event", stream.Err())
	}

	// A rejection is an error too: WARN.
	resp, _ = f.post("/v1/chat/completions", chatBody, "Authorization", "Bearer wrong-key-000000000000")
	if line := f.logLine(resp.Header.Get("X-Request-Id")); resp.StatusCode != 401 ||
		!strings.Contains(line, "level=WARN") || !strings.Contains(line, "outcome=rejected") {
		t.Errorf("rejection %d logged %q", resp.StatusCode, line)
	}
}

// Before its headers went out, a stream fails as a plain answer does.
func TestExhausted_StreamBeforeHeadersIsAPlain429(t *testing.T) {
	f := newFixture(t, setup{routes: exhaustRoutes, tweak: always(rateLimited)})
	resp, body := f.post("/v1/messages", `{"model":"limited","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 429 || errorShape(t, true, body)["type"] != "rate_limit_error" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	checkRetryHeaders(t, resp.Header, 20)
	if line := f.logLine(resp.Header.Get("Request-Id")); !strings.Contains(line, "level=WARN") ||
		!strings.Contains(line, "status=429") {
		t.Errorf("log line %q", line)
	}
}

// A quota 429 that a route fails closed on reaches the client as a 429,
// the provider's type and code through, and is not sent again.
func TestExhausted_FailClosedQuotaStays429(t *testing.T) {
	f := newFixture(t, setup{routes: `  strict:
    chain: [p1/m, p2/m]
    fail_closed_on: [invalid, policy, wall]
`, p1: []sim.Fault{{Kind: sim.InsufficientQuota}}})
	p := userHi()
	p.Model = "strict"
	_, err := f.openai().Chat.Completions.New(ctx(t), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
		t.Fatalf("err = %v, want the provider's 429 insufficient_quota", err)
	}
	if g := apiErr.Response.Header.Get("X-Should-Retry"); g != "false" || f.chats.Load() != 1 {
		t.Errorf("x-should-retry %q, %d requests", g, f.chats.Load())
	}
	if n := f.sim.Stats().Requests("p2", ""); n != 0 {
		t.Errorf("p2 got %d requests: the route fails closed on walls", n)
	}
}
