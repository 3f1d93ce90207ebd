package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// Contracts over the real gateway and the simulator (issue 33, item 4):
// data terms and capabilities are read apart, the status of a request no
// target serves does not depend on which target happened to be parked,
// and every skip is a ledger line whatever ended the request.

// toolsBody is a chat request that uses tools, to route.
func toolsBody(route string) string {
	return `{"model":"` + route + `","messages":[{"role":"user","content":"weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`
}

// hiBody is a chat request that uses nothing a target may lack.
func hiBody(route string) string {
	return `{"model":"` + route + `","messages":[{"role":"user","content":"hi"}]}`
}

// contractGateway serves yaml (its %[1]s the simulator's URL) in front of
// simulated providers ps.
func contractGateway(t *testing.T, yaml string, ps ...sim.Provider) (*httptest.Server, *ledger.Memory, *sim.Server) {
	t.Helper()
	srv, err := sim.NewServer(ps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts, book := yamlGateway(t, srv, yaml)
	return ts, book, srv
}

// lines are the ledger lines of request id as "provider/model status",
// in order.
func lines(book *ledger.Memory, id string) []string {
	var out []string
	for _, r := range book.Records() {
		if r.RequestID == id {
			out = append(out, r.Provider+"/"+r.Model+" "+r.Status)
		}
	}
	return out
}

// A provider that states a data term (offers: [zero_retention]) says
// nothing of its models' capabilities: a request with tools is sent to
// it, not skipped as if it had declared it offers nothing else. One that
// declares a capability beside the term has declared its capabilities,
// and is skipped for tools.
func TestContract_DataTermsSayNothingOfCapabilities(t *testing.T) {
	ts, book, srv := contractGateway(t, `providers:
  caps:  {base_url: %[1]s/caps/v1, key_env: UP_KEY, offers: [zero_retention, images]}
  terms: {base_url: %[1]s/terms/v1, key_env: UP_KEY, offers: [zero_retention]}
  other: {base_url: %[1]s/other/v1, key_env: UP_KEY, offers: [tools]}
routes:
  private:
    chain: [caps/m, other/m, terms/m]
    requires: [zero_retention]
`, sim.Provider{Name: "caps"}, sim.Provider{Name: "terms"}, sim.Provider{Name: "other"})
	resp, body := postResp(t, ts, "/v1/chat/completions", []byte(toolsBody("private")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: want terms/m's answer, its tools unknown\n%s", resp.StatusCode, body)
	}
	id := resp.Header.Get("X-Request-Id")
	want := []string{"caps/m skipped_contract", "other/m skipped_contract", "terms/m ok"}
	if got := lines(book, id); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("ledger %q, want %q", got, want)
	}
	for _, r := range book.Records() {
		switch r.Provider {
		case "caps":
			if !strings.Contains(r.Reason, "cannot honour tools") || strings.Contains(r.Reason, "zero_retention") {
				t.Errorf("caps skipped for %q: want tools alone (it states zero_retention)", r.Reason)
			}
		case "other":
			if !strings.Contains(r.Reason, "zero_retention") || strings.Contains(r.Reason, "tools") {
				t.Errorf("other skipped for %q: want zero_retention alone (it offers tools)", r.Reason)
			}
		}
	}
	if n := srv.Stats().Requests("terms", ""); n != 1 {
		t.Errorf("terms got %d sends, want 1", n)
	}
}

// The same request gets the same class of status whether the head was
// parked before it came or is parked by it: a 429 or 503 with Retry-After
// while a target that could serve it is parked, a 400 naming the
// capability only when no target could ever serve it. Every skip of
// either request is a ledger line, beside the error's text.
func TestContract_StatusDoesNotDependOnWhichTargetIsParked(t *testing.T) {
	for _, row := range []struct {
		name string
		// headOffers is the head's offers: line ("": unknown).
		headOffers string
		fault      sim.Fault
		status     int
		code       string
		// first and parked are the ledger lines of the request sent with
		// the head unparked, then parked.
		first, parked []string
	}{
		{name: "wall: the head could serve it", fault: sim.Fault{Kind: sim.DailyQuota, RetryAfter: 10 * time.Minute},
			status: http.StatusTooManyRequests, code: "all_candidates_rate_limited",
			first:  []string{"head/m http_429", "next/m skipped_contract"},
			parked: []string{"head/m skipped_parked", "next/m skipped_contract"}},
		{name: "overloaded: the head could serve it", fault: sim.Fault{Kind: sim.Unavailable},
			status: http.StatusServiceUnavailable, code: "all_candidates_failed",
			first:  []string{"head/m http_503", "head/m http_503", "next/m skipped_contract"},
			parked: []string{"head/m skipped_parked", "next/m skipped_contract"}},
		{name: "no target could ever serve it", headOffers: ", offers: [images]",
			fault:  sim.Fault{Kind: sim.DailyQuota, RetryAfter: 10 * time.Minute},
			status: http.StatusBadRequest, code: "unsupported_request",
			first:  []string{"head/m skipped_contract", "next/m skipped_contract"},
			parked: []string{"head/m skipped_contract", "next/m skipped_contract"}},
	} {
		t.Run(row.name, func(t *testing.T) {
			ts, book, srv := contractGateway(t, `providers:
  head: {base_url: %[1]s/head/v1, key_env: UP_KEY`+row.headOffers+`}
  next: {base_url: %[1]s/next/v1, key_env: UP_KEY, offers: [images]}
  spare: {base_url: %[1]s/spare/v1, key_env: UP_KEY}
routes:
  tools:
    chain: [head/m, next/m]
    budget: {base_backoff: 1ms, max_backoff: 5ms, max_per_target: 2}
  plain:
    chain: [head/m, spare/m]
    budget: {base_backoff: 1ms, max_backoff: 5ms, max_per_target: 2}
`, sim.Provider{Name: "head", Profile: sim.Always(row.fault)}, sim.Provider{Name: "next"}, sim.Provider{Name: "spare"})
			ask := func(body string) (*http.Response, string) {
				t.Helper()
				resp, out := postResp(t, ts, "/v1/chat/completions", []byte(body))
				return resp, string(out)
			}
			check := func(when string, parked bool, resp *http.Response, body string, want []string) {
				t.Helper()
				if resp.StatusCode != row.status || !strings.Contains(body, `"code":"`+row.code+`"`) {
					t.Errorf("%s: status %d, want %d %s\n%s", when, resp.StatusCode, row.status, row.code, body)
				}
				if row.status == http.StatusBadRequest {
					if !strings.Contains(body, "cannot honour tools") {
						t.Errorf("%s: the 400 does not name the capability: %s", when, body)
					}
				} else if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); (err != nil || s < 1) &&
					(parked || row.status == http.StatusTooManyRequests) {
					// A 429 always says how long to wait; a 503 when a
					// park says it (two 503s without a Retry-After name
					// no wait).
					t.Errorf("%s: Retry-After %q, want a wait", when, resp.Header.Get("Retry-After"))
				}
				if got := lines(book, resp.Header.Get("X-Request-Id")); strings.Join(got, "; ") != strings.Join(want, "; ") {
					t.Errorf("%s: ledger %q, want %q", when, got, want)
				}
			}
			resp, body := ask(toolsBody("tools"))
			check("head not parked", false, resp, body, row.first)
			// Park the head for sure, whatever the first request did: a
			// request it can serve, answered by the spare.
			if resp, body := ask(hiBody("plain")); resp.StatusCode != http.StatusOK {
				t.Fatalf("plain request: status %d\n%s", resp.StatusCode, body)
			}
			sends := srv.Stats().Requests("head", "")
			resp, body = ask(toolsBody("tools"))
			check("head parked", true, resp, body, row.parked)
			if n := srv.Stats().Requests("head", ""); n != sends {
				t.Errorf("the parked head got %d sends", n-sends)
			}
		})
	}
}
