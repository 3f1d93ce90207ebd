package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/openai"
)

// sampleCase is one line of testdata/errors/sample.jsonl (a copy of
// ../shared/errors/sample.jsonl: real provider failures, each with its source).
type sampleCase struct {
	ID       string            `json:"id"`
	Provider string            `json:"provider"`
	Status   *int              `json:"status"`
	Headers  map[string]string `json:"headers"`
	Body     string            `json:"body"`
	Phase    string            `json:"phase"`
	Expect   string            `json:"expect"`
}

func loadSamples(t *testing.T) []sampleCase {
	t.Helper()
	f, err := os.Open("../testdata/errors/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sampleCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c sampleCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// curlText renders a case as `curl -si` prints it.
func curlText(c sampleCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/2 %d\r\n", *c.Status)
	keys := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "content-length" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, c.Headers[k])
	}
	b.WriteString("\r\n" + c.Body)
	return b.String()
}

// TestExplain_AgreesWithRouterOnEverySample serves each real failure from an
// HTTP server, sends one request through the router (with a healthy second
// candidate), and checks that `detour explain` on the same bytes names the
// same kind and action as the router's first ledger line, and the kind the
// sample expects.
func TestExplain_AgreesWithRouterOnEverySample(t *testing.T) {
	for _, c := range loadSamples(t) {
		if c.Status == nil {
			continue // no HTTP response to capture: covered by classify's transport tests
		}
		t.Run(c.ID, func(t *testing.T) {
			now := time.Now()
			ex, err := Explain([]byte(curlText(c)), c.Provider, now)
			if err != nil {
				t.Fatalf("Explain: %v", err)
			}
			if want := strings.ToLower(c.Expect); string(ex.Kind) != want {
				t.Errorf("explain kind = %s, sample expects %s (reason %q)", ex.Kind, want, ex.Reason)
			}

			bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.Headers {
					if k != "content-length" {
						w.Header().Set(k, v)
					}
				}
				w.WriteHeader(*c.Status)
				w.Write([]byte(c.Body))
			}))
			defer bad.Close()
			good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
			}))
			defer good.Close()
			route := &router.Route{Name: "r", Chain: []router.Target{
				{Provider: c.Provider, Model: "m", Client: config.NewClient(sampleDialect(c.Provider), bad.URL, "test-key-123456", nil, nil)},
				{Provider: "backup", Model: "m", Client: &openai.Client{BaseURL: good.URL, APIKey: "test-key-123456"}},
			}}
			mem := &ledger.Memory{}
			r := &router.Router{Ledger: mem, Clock: noSleep{}}
			r.Complete(context.Background(), route, prompt(), router.Options{})
			first := mem.Records()[0]
			if first.Kind != string(ex.Kind) || first.Action != ex.Action {
				t.Errorf("router: kind %s action %s; explain: kind %s action %s", first.Kind, first.Action, ex.Kind, ex.Action)
			}
		})
	}
}

// sampleDialect is the dialect a sample's provider speaks.
func sampleDialect(provider string) config.Dialect {
	switch provider {
	case "anthropic", "gemini":
		return config.Dialect(provider)
	}
	return config.OpenAI
}

// TestExplain_CLIEverySampleByProvider runs `detour explain --provider NAME
// --json` on every sample, as a user would, and checks the expected kind.
func TestExplain_CLIEverySampleByProvider(t *testing.T) {
	for _, c := range loadSamples(t) {
		if c.Status == nil {
			continue
		}
		code, out, errOut := run(t, nil, curlText(c), "explain", "--provider", c.Provider, "--json")
		if code != ExitOK {
			t.Errorf("%s: exit %d: %s", c.ID, code, errOut)
			continue
		}
		var got Explanation
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: not JSON: %v", c.ID, err)
		}
		if want := strings.ToLower(c.Expect); string(got.Kind) != want {
			t.Errorf("%s: explain --provider %s says %s, sample expects %s (%s)", c.ID, c.Provider, got.Kind, want, got.Reason)
		}
	}
}

func TestExplain_CLIJSONAndErrors(t *testing.T) {
	raw := "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 20\r\n\r\n" +
		`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 20s.","type":"tokens","code":"rate_limit_exceeded"}}`
	code, out, errOut := run(t, nil, raw, "explain", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Kind        string   `json:"kind"`
		RetryAfterS *float64 `json:"retry_after_s"`
		Action      string   `json:"action"`
		Reason      string   `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	// A 20 s wait is over max_retry_wait (5 s) with a candidate left: the
	// target is parked until then and the next candidate asked at once.
	if got.Kind != "transient" || got.RetryAfterS == nil || *got.RetryAfterS != 20 || got.Action != "failover" || got.Reason == "" {
		t.Fatalf("explain --json = %+v", got)
	}
	code, out, _ = run(t, nil, raw, "explain")
	if code != ExitOK || !strings.Contains(out, "kind:    transient") || !strings.Contains(out, "action:  failover") {
		t.Fatalf("text output:\n%s", out)
	}
	code, _, errOut = run(t, nil, "not a response", "explain")
	if code != ExitUsage || !strings.Contains(errOut, "curl -si") {
		t.Fatalf("garbage input: exit %d, stderr %q", code, errOut)
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/2 429\r\nretry-after: 3\r\n\r\n{}"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 402 Payment Required\n\n{\"error\":{}}"))
	f.Add([]byte("HTTP/1.1 200 Connection established\r\n\r\nHTTP/2 200\r\ncontent-type: text/event-stream\r\n\r\ndata: {}\n\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ex, err := Explain(raw, "", time.Unix(0, 0))
		if err == nil && ex == nil {
			t.Fatal("nil explanation without error")
		}
	})
}

// TestExplain_StatusAlone: a failure whose body says nothing detour knows
// is explained as read from the status alone, in text and JSON; one whose
// body spoke is not.
func TestExplain_StatusAlone(t *testing.T) {
	raw := "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\r\n" + `{"error":{"message":"upstream went away"}}`
	code, out, errOut := run(t, nil, raw, "explain")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "basis:   read from the status alone") || !strings.Contains(out, "; read from the status alone") {
		t.Fatalf("text output lacks the status-alone basis:\n%s", out)
	}
	code, out, _ = run(t, nil, raw, "explain", "--json")
	var got struct {
		Kind        string `json:"kind"`
		Reason      string `json:"reason"`
		StatusAlone bool   `json:"status_alone"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != ExitOK || err != nil {
		t.Fatalf("explain --json: exit %d, %v\n%s", code, err, out)
	}
	if got.Kind != "transient" || !got.StatusAlone || !strings.HasSuffix(got.Reason, "read from the status alone") {
		t.Fatalf("explain --json = %+v", got)
	}
	spoke := "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\r\n" + `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`
	_, out, _ = run(t, nil, spoke, "explain")
	if strings.Contains(out, "status alone") {
		t.Fatalf("a body detour knows explained as status alone:\n%s", out)
	}
}

// TestExplain_ParkTimeAndUpstreamRequestID: a wall that names no reset
// shows the park health.wall_cooldown gives it (the final line's "the time
// above" is on screen), and the provider's own request id is shown from its
// header, or from an Anthropic error body's request_id, in text and JSON.
func TestExplain_ParkTimeAndUpstreamRequestID(t *testing.T) {
	raw := "HTTP/2 402\r\ncontent-type: application/json\r\nx-request-id: req_7f3a9\r\n\r\n" +
		`{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/credits","code":402}}`
	before := time.Now()
	code, out, errOut := run(t, nil, raw, "explain", "--provider", "openrouter")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"parked:  until ", "(in 5m0s)", "health.wall_cooldown", "request: req_7f3a9", "no sends until the time above"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = run(t, nil, raw, "explain", "--provider", "openrouter", "--json")
	var got struct {
		Kind              string     `json:"kind"`
		Scope             string     `json:"scope"`
		ParkUntil         *time.Time `json:"park_until"`
		ParkDefault       bool       `json:"park_default"`
		UpstreamRequestID string     `json:"upstream_request_id"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Kind != "wall" || got.Scope != "account" || !got.ParkDefault || got.UpstreamRequestID != "req_7f3a9" || got.ParkUntil == nil {
		t.Fatalf("explain --json = %+v", got)
	}
	if d := got.ParkUntil.Sub(before); d < 5*time.Minute-time.Second || d > 5*time.Minute+time.Minute {
		t.Errorf("park_until %s is %s after the run, want health's default wall cooldown (5m)", got.ParkUntil, d)
	}

	// Anthropic names its request in the body of an error.
	body := "HTTP/1.1 529\r\ncontent-type: application/json\r\n\r\n" +
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	_, out, _ = run(t, nil, body, "explain", "--provider", "anthropic")
	if !strings.Contains(out, "request: req_011CSHoEeqs5C35K2UUqR7Fy") {
		t.Errorf("Anthropic body request_id not shown:\n%s", out)
	}
	// A reset named by the provider is not the default.
	named := "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 3600\r\n\r\n" +
		`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	_, out, _ = run(t, nil, named, "explain")
	if strings.Contains(out, "names no reset") || strings.Contains(out, "request:") {
		t.Errorf("a response with a reset and no id explained with the default park or an id:\n%s", out)
	}
}
