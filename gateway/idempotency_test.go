package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/redisstore"
	"github.com/detourhq/detour/internal/redistest"
	sim "github.com/detourhq/detour/simulate"
)

const chatHi = `{"model":"default","messages":[{"role":"user","content":"hi"}]}`

// A repeat of an Idempotency-Key gets the first answer with no second
// send: after it completed (official SDK and raw HTTP, plain and
// streamed), and while it is in flight (10 clients at once).
func TestIdempotency_OneKeyOneSend(t *testing.T) {
	t.Run("after completion, official SDK", func(t *testing.T) {
		f := newFixture(t, setup{})
		c := f.openai(option.WithHeader("Idempotency-Key", "op-1"))
		first, err := c.Chat.Completions.New(ctx(t), userHi())
		if err != nil {
			t.Fatal(err)
		}
		var raw *http.Response
		again, err := c.Chat.Completions.New(ctx(t), userHi(), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != first.ID || again.Choices[0].Message.Content != first.Choices[0].Message.Content {
			t.Fatalf("the repeat got %s %q, want the first answer %s %q", again.ID, again.Choices[0].Message.Content,
				first.ID, first.Choices[0].Message.Content)
		}
		if raw.Header.Get("Idempotent-Replayed") != "true" || raw.Header.Get("X-Detour-Provider") != "p1" {
			t.Errorf("replay headers %v", raw.Header)
		}
		if n := f.sim.Stats().Requests("p1", ""); n != 1 {
			t.Fatalf("p1 got %d requests for one key, want 1", n)
		}
		if n := len(f.ledger.Records()); n != 1 {
			t.Errorf("%d ledger lines, want 1: a replay sends nothing", n)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		f := newFixture(t, setup{})
		body := `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		r1, b1 := f.post("/v1/chat/completions", body, "Idempotency-Key", "op-s")
		r2, b2 := f.post("/v1/chat/completions", body, "Idempotency-Key", "op-s")
		if r1.StatusCode != 200 || r2.StatusCode != 200 || b1 != b2 || !strings.Contains(b2, "data: [DONE]") {
			t.Fatalf("first %d %q\nrepeat %d %q", r1.StatusCode, b1, r2.StatusCode, b2)
		}
		if r2.Header.Get("Content-Type") != "text/event-stream" || r2.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay headers %v", r2.Header)
		}
		if n := f.sim.Stats().Requests("p1", ""); n != 1 {
			t.Fatalf("p1 got %d requests, want 1", n)
		}
	})
	t.Run("10 clients at once", func(t *testing.T) {
		slow := sim.Fault{Kind: sim.SlowFirstToken, Delay: 300 * time.Millisecond}
		f := newFixture(t, setup{p1: []sim.Fault{slow}})
		var wg sync.WaitGroup
		bodies := make([]string, 10)
		codes := make([]int, 10)
		for i := range 10 {
			wg.Go(func() {
				r, b := f.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-10")
				codes[i], bodies[i] = r.StatusCode, b
			})
		}
		wg.Wait()
		for i := range 10 {
			if codes[i] != 200 || bodies[i] != bodies[0] {
				t.Fatalf("client %d: %d %q, want 200 and the first answer %q", i, codes[i], bodies[i], bodies[0])
			}
		}
		if n := f.sim.Stats().Requests("p1", ""); n != 1 {
			t.Fatalf("p1 got %d requests for 10 clients with one key, want 1", n)
		}
	})
}

// The same key with another body is a 422; with idempotency_in_flight:
// conflict, a repeat in flight is a 409; a failed request lets its key go.
func TestIdempotency_RefusalsAndFailures(t *testing.T) {
	f := newFixture(t, setup{})
	f.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-x")
	resp, body := f.post("/v1/chat/completions", strings.Replace(chatHi, "hi", "bye", 1), "Idempotency-Key", "op-x")
	if resp.StatusCode != 422 || !strings.Contains(body, `"code":"idempotency_key_reused"`) || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("another body, same key: %d %s", resp.StatusCode, body)
	}
	resp, body = f.post("/v1/chat/completions", chatHi, "Idempotency-Key", strings.Repeat("k", 256))
	if resp.StatusCode != 400 || !strings.Contains(body, "at most 255") {
		t.Fatalf("a 256-byte key: %d %s", resp.StatusCode, body)
	}

	down := sim.Fault{Kind: sim.Unavailable}
	f = newFixture(t, setup{p1: []sim.Fault{down}, p2: []sim.Fault{down}, p3: []sim.Fault{down},
		routes: "  once:\n    chain: [p1/m, p2/m, p3/other]\n    budget: {max_per_target: 1}\n"})
	once := strings.Replace(chatHi, "default", "once", 1)
	if resp, _ := f.post("/v1/chat/completions", once, "Idempotency-Key", "op-f"); resp.StatusCode == 200 {
		t.Fatal("the failing chain answered")
	}
	before := f.sim.Stats().Total()
	if resp, body := f.post("/v1/chat/completions", once, "Idempotency-Key", "op-f"); resp.StatusCode != 200 ||
		resp.Header.Get("Idempotent-Replayed") != "" || f.sim.Stats().Total() == before {
		t.Fatalf("the repeat of a failed request: %d %s: want it served afresh", resp.StatusCode, body)
	}

	slow := sim.Fault{Kind: sim.SlowFirstToken, Delay: 300 * time.Millisecond}
	f = newFixture(t, setup{p1: []sim.Fault{slow}, gateway: defaultGateway + "  idempotency_in_flight: conflict\n"})
	got := make(chan int, 1)
	go func() {
		r, _ := f.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-c")
		got <- r.StatusCode
	}()
	waitFor(t, "the first request to reach p1", func() bool { return f.sim.Stats().Requests("p1", "") == 1 })
	resp, body = f.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-c")
	if resp.StatusCode != 409 || !strings.Contains(body, "in flight") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a repeat in flight with conflict: %d %s", resp.StatusCode, body)
	}
	if c := <-got; c != 200 {
		t.Fatalf("the first request: %d", c)
	}
}

// Two gateways sharing a Redis health store share idempotency records: a
// repeat at the other replica sends nothing.
func TestIdempotency_AcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	replica := func() *fixture {
		st, err := redisstore.Open(redisstore.Options{URL: rs.URL(), Namespace: "idem"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		waitFor(t, "the store to be up", func() bool { return st.Status().Up })
		return newFixture(t, setup{health: health.NewWithStore(health.Settings{}, st)})
	}
	a, b := replica(), replica()
	r1, b1 := a.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-r")
	r2, b2 := b.post("/v1/chat/completions", chatHi, "Idempotency-Key", "op-r")
	if r1.StatusCode != 200 || r2.StatusCode != 200 || b1 != b2 || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replica a: %d %s\nreplica b: %d %s", r1.StatusCode, b1, r2.StatusCode, b2)
	}
	if n := b.sim.Stats().Total(); n != 0 {
		t.Fatalf("replica b's upstream got %d requests for a key replica a answered", n)
	}
}

// A kept answer is replayed with the keys detour holds now redacted: a
// key a reload added since the answer was kept never reaches the client.
func TestIdempotency_ReplayRedactsKeysAddedSince(t *testing.T) {
	const secret = "Hello from p1/m" // the simulator's answer, now a key
	f := newFixture(t, setup{env: map[string]string{"P4_KEY": secret}})
	body := `{"model":"default","messages":[{"role":"user","content":"hi"}]}`
	r1, b1 := f.post("/v1/chat/completions", body, "Idempotency-Key", "op-k")
	if r1.StatusCode != 200 || !strings.Contains(b1, secret) {
		t.Fatalf("first answer %d %q", r1.StatusCode, b1)
	}
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(`providers:
  p1: {base_url: %[1]s/p1/v1, key_env: P1_KEY, pool: free}
  p2: {base_url: %[1]s/p2/v1, key_env: P2_KEY, pool: credit}
  p3: {base_url: %[1]s/p3/v1, key_env: P3_KEY, pool: prepaid}
  p4: {base_url: %[1]s/p4/v1, key_env: P4_KEY, pool: prepaid}
targets:
  p1/m: {family: fam, price: {in: 1, out: 2}}
  p2/m: {family: fam, price: {in: 2, out: 4}}
  p3/other: {family: other, price: {in: 3, out: 6}}
routes:
  default:
    chain: [p1/m, p2/m, p3/other]
  solo:
    chain: [p1/m]
gateway:
%[2]s`, f.upURL, defaultGateway)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.gw.Reload(cfg, gateway.ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	r2, b2 := f.post("/v1/chat/completions", body, "Idempotency-Key", "op-k")
	if r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the repeat was not a replay: %d %v", r2.StatusCode, r2.Header)
	}
	if strings.Contains(b2, secret) || !strings.Contains(b2, "[redacted]") {
		t.Errorf("the replay carries the key a reload added: %q", b2)
	}
}
