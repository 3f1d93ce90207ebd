package probe_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/probe"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

var epoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

const key = "sk-probe-test-0123456789"

// world is a head target on a free tier and a paid fallback at another
// provider (or, with sameProvider, a second model at the same one), both
// simulated over real HTTP, one router and one prober sharing a breaker,
// a fake clock and a memory ledger.
type world struct {
	t      *testing.T
	srv    *simulate.Server
	clk    *clock.Fake
	led    *ledger.Memory
	hb     *health.Breaker
	r      *router.Router
	route  *router.Route
	prober *probe.Prober
}

func newWorld(t *testing.T, headDialect simulate.Dialect, sameProvider bool) *world {
	t.Helper()
	provs := []simulate.Provider{{Name: "free", Key: key, Dialect: headDialect, Models: []string{"head", "spare"}}}
	if !sameProvider {
		provs = append(provs, simulate.Provider{Name: "paid", Key: key, Dialect: simulate.DialectAnthropic, Models: []string{"spare"}})
	}
	srv, err := simulate.Start(provs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w := &world{t: t, srv: srv, clk: clock.NewFake(epoch), led: &ledger.Memory{}}
	srv.Clock = w.clk
	w.hb = health.New(health.Settings{})
	w.r = &router.Router{Health: w.hb, Ledger: w.led, Clock: w.clk, Rand: func() float64 { return 0 }}
	hc := &http.Client{Transport: http.DefaultTransport}
	dialectWord := map[simulate.Dialect]string{simulate.DialectOpenAI: "openai", simulate.DialectAnthropic: "anthropic", simulate.DialectGemini: "gemini"}
	target := func(provider, model string, d simulate.Dialect) router.Target {
		return router.Target{Provider: provider, Model: model, Dialect: dialectWord[d], Pool: "free", KeyEnv: "K",
			PriceIn: 1, PriceOut: 2, Client: config.NewClient(config.Dialect(dialectWord[d]), srv.BaseURL(provider), key, hc, nil)}
	}
	fallback := target("paid", "spare", simulate.DialectAnthropic)
	if sameProvider {
		fallback = target("free", "spare", headDialect)
	}
	w.route = &router.Route{Name: "chat", Chain: []router.Target{target("free", "head", headDialect), fallback}}
	w.prober = &probe.Prober{Health: w.hb, Ledger: w.led, Clock: w.clk}
	return w
}

// ask sends one request and returns the target that answered and the
// request's first ledger record.
func (w *world) ask() (answered string, first ledger.Record) {
	w.t.Helper()
	n := len(w.led.Records())
	res, err := w.r.Complete(context.Background(), w.route, &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, MaxTokens: 16}, router.Options{})
	if err != nil {
		w.t.Fatalf("request failed: %v", err)
	}
	return res.Target.ID(), w.led.Records()[n]
}

func (w *world) checks(generate bool) []probe.Check {
	var cs []probe.Check
	for i := range w.route.Chain {
		cs = append(cs, probe.Check{Target: &w.route.Chain[i], Generate: generate})
	}
	return cs
}

// The rule of the issue: a target parked by a wall is probed with no
// generation call, returns to service, and the next request goes to it
// first. Tried with the fallback at another provider and at the same one,
// and with each dialect's free read.
func TestProbe_ParkedByWallReturnsToTheHeadOfTheChain(t *testing.T) {
	for _, c := range []struct {
		name string
		d    simulate.Dialect
		same bool
		wall simulate.Kind
	}{
		// The key is refused once (revoked, then restored): a wall of
		// the account.
		{"openai head, 401, fallback elsewhere", simulate.DialectOpenAI, false, simulate.Unauthorized},
		{"anthropic head, 401, fallback elsewhere", simulate.DialectAnthropic, false, simulate.Unauthorized},
		// The model is refused once (a deployment gap): a wall of the
		// target, so the fallback may be at the same provider.
		{"anthropic head, 404, fallback at the same provider", simulate.DialectAnthropic, true, simulate.ModelNotFound},
		{"gemini head, 404, fallback elsewhere", simulate.DialectGemini, false, simulate.ModelNotFound},
		{"gemini head, 404, fallback at the same provider", simulate.DialectGemini, true, simulate.ModelNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.d, c.same)
			if err := w.srv.Enqueue("free", "head", simulate.Fault{Kind: c.wall}); err != nil {
				t.Fatal(err)
			}
			if got, _ := w.ask(); got == "free/head" {
				t.Fatalf("first request answered by %s, want the fallback (the head hit a 401)", got)
			}
			w.clk.Advance(time.Second)
			if got, first := w.ask(); got == "free/head" || first.Status != ledger.StatusSkippedParked {
				t.Fatalf("second request: answered by %s, first record %s; want the head skipped as parked", got, first.Status)
			}
			chats := w.srv.Stats().Requests("free", "head")

			res := w.prober.Run(context.Background(), w.checks(false))
			head := res[0]
			if head.Method != probe.MethodMetadata || head.Status != ledger.StatusProbeOK || head.Before != "open" || head.After != "closed" || len(head.Released) == 0 {
				t.Fatalf("probe of the head = %+v; want a metadata read that closed it", head)
			}
			st := w.srv.Stats()
			if got := st.Requests("free", "head"); got != chats {
				t.Fatalf("the probe sent %d chat requests to the head; want none", got-chats)
			}
			if st.ModelReads("free") == 0 {
				t.Fatal("the probe made no model read")
			}
			if got, first := w.ask(); got != "free/head" || first.Provider != "free" || first.Model != "head" || first.Status != ledger.StatusOK {
				t.Fatalf("after the probe: answered by %s, first record %s/%s %s; want the head first, answering", got, first.Provider, first.Model, first.Status)
			}
			probes := 0
			for _, r := range w.led.Records() {
				if strings.HasPrefix(r.Status, "probe_") {
					probes++
					if r.Action != "probe" || r.Route != "" || r.TokensOut != 0 || r.Cost != 0 {
						t.Errorf("probe record %+v: want action probe, no route, no tokens, no cost", r)
					}
				}
			}
			if probes != len(w.route.Chain) {
				t.Errorf("%d probe records, want one per target (%d)", probes, len(w.route.Chain))
			}
		})
	}
}

// A quota wall is not something a model list can vouch for: without a
// route's probe: generate, nothing is sent and the park stays; with it,
// one one-token generation decides, at most once per GenerateEvery.
func TestProbe_QuotaWallWaitsOrGeneratesOnce(t *testing.T) {
	w := newWorld(t, simulate.DialectOpenAI, false)
	if err := w.srv.Enqueue("free", "head", simulate.Fault{Kind: simulate.InsufficientQuota}); err != nil {
		t.Fatal(err)
	}
	w.ask()
	before := w.srv.Stats()
	res := w.prober.One(context.Background(), w.checks(false)[0])
	if res.Method != probe.MethodNone || res.After != "open" || !strings.Contains(res.Note, "quota") {
		t.Fatalf("probe of a quota-walled head without generate = %+v; want nothing sent, still parked, a note", res)
	}
	if after := w.srv.Stats(); after.Total() != before.Total() || after.ModelReads("") != before.ModelReads("") {
		t.Fatal("a probe that cannot vouch for a quota wall still sent something")
	}

	res = w.prober.One(context.Background(), w.checks(true)[0])
	if res.Method != probe.MethodGenerate || res.Status != ledger.StatusProbeOK || res.After != "closed" {
		t.Fatalf("probe with generate = %+v; want one generation that closed it", res)
	}
	if got := w.srv.Stats().Requests("free", "head") - before.Requests("free", "head"); got != 1 {
		t.Fatalf("%d generations sent, want 1", got)
	}
	// It records the provider's request id (the simulator's x-request-id), as
	// every attempt with a response does (issue 33).
	if recs := w.led.Records(); recs[len(recs)-1].ProviderRequestID == "" {
		t.Errorf("generation probe record %+v: no upstream_request_id", recs[len(recs)-1])
	}
	// Parked again at once: the next generation waits GenerateEvery.
	w.hb.Done("free/head", mustAllow(t, w.hb, "free/head", w.clk.Now()), health.Outcome{Kind: "wall", Status: "http_429", Until: w.clk.Now().Add(3 * time.Hour)}, w.clk.Now())
	w.clk.Advance(10 * time.Minute)
	res = w.prober.One(context.Background(), w.checks(true)[0])
	if res.Method != probe.MethodNone || !strings.Contains(res.Note, "less than") {
		t.Fatalf("second generation probe within GenerateEvery = %+v; want none sent", res)
	}
}

func mustAllow(t *testing.T, hb *health.Breaker, k string, now time.Time) health.Permit {
	t.Helper()
	p, err := hb.Allow(k, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A probe never races live traffic's half-open probe: while a live request
// holds it, the prober sends nothing for that target, and says what the
// health store shows (a lease out, until when), not who holds it: the
// store cannot tell whether its holder still runs.
func TestProbe_NeverRacesLiveTraffic(t *testing.T) {
	w := newWorld(t, simulate.DialectOpenAI, false)
	if err := w.srv.Enqueue("free", "head", simulate.Fault{Kind: simulate.Unauthorized}); err != nil {
		t.Fatal(err)
	}
	w.ask()
	w.clk.Advance(time.Hour) // the park (wall_cooldown) is over
	live := false            // as the router asks: endpoint, account, target
	for _, k := range []string{w.route.Chain[0].EndpointKey(), w.route.Chain[0].AccountKey(), "free/head"} {
		live = mustAllow(t, w.hb, k, w.clk.Now()).Probe || live
	}
	if !live {
		t.Fatal("want live traffic's half-open probe permit")
	}
	reads := w.srv.Stats().ModelReads("")
	res := w.prober.One(context.Background(), w.checks(false)[0])
	lapse := w.clk.Now().Add(health.DefaultProbeTimeout)
	if res.Method != probe.MethodNone || !res.LeaseUntil.Equal(lapse) || strings.Contains(res.Note, "live traffic") ||
		!strings.Contains(res.Note, "the health store holds a probe of "+w.route.Chain[0].AccountKey()+" out until "+lapse.Format("15:04:05 UTC")) ||
		!strings.HasSuffix(res.Note, "nothing sent") || res.After != "half_open" {
		t.Fatalf("probe while live traffic probes = %+v; want nothing sent, the store's lease and its end", res)
	}
	if w.srv.Stats().ModelReads("") != reads {
		t.Fatal("the prober read the model list while live traffic held the probe")
	}
}

// A failed probe keeps the park and says why; a wall met by a probe of a
// closed target parks it before live traffic meets it.
func TestProbe_FailureKeepsOrParks(t *testing.T) {
	w := newWorld(t, simulate.DialectAnthropic, false)
	bad := w.route.Chain[0]
	bad.Client = config.NewClient("anthropic", w.srv.BaseURL("free"), "sk-wrong-key-00000000", nil, nil)
	res := w.prober.One(context.Background(), probe.Check{Target: &bad})
	if res.Status != ledger.StatusProbeFailed || res.Kind != "wall" || res.After != "open" {
		t.Fatalf("probe with a revoked key = %+v; want probe_failed, wall, parked", res)
	}
	recs := w.led.Records()
	last := recs[len(recs)-1]
	if last.Status != ledger.StatusProbeFailed || last.Kind != "wall" || strings.Contains(last.Reason, "sk-wrong") {
		t.Fatalf("ledger record %+v: want probe_failed, wall, no key in the reason", last)
	}
	if last.ProviderRequestID == "" {
		t.Errorf("ledger record %+v: no upstream_request_id, though the simulator's Anthropic error sends request-id", last)
	}
	if got, _ := w.ask(); got == "free/head" {
		t.Fatal("the request went to a target the probe found walled")
	}
}
