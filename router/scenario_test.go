package router_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/scenario"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// scene is one row's world: the providers in memory, a router on the
// bubble's clock, and the route [A, B].
type scene struct {
	srv    *sim.Server
	router *router.Router
	ledger *ledger.Memory
	health *health.Breaker
	route  *router.Route
	pl     scenario.Placement
}

// newScene builds the row's route in placement pl. It must run inside a
// synctest bubble: every timer and the providers' waits run on its clock.
func newScene(t *testing.T, row scenario.Row, pl scenario.Placement, hs health.Settings) *scene {
	t.Helper()
	return newSceneIn(t, row, pl, hs, "", "")
}

// newSceneIn is newScene with provider p speaking dialect dp and q
// dialect dq ("" is chat completions).
func newSceneIn(t *testing.T, row scenario.Row, pl scenario.Placement, hs health.Settings, dp, dq sim.Dialect) *scene {
	t.Helper()
	provs := []sim.Provider{{Name: scenario.ProviderA, NoPrefill: row.NoPrefill, Dialect: dp}}
	if pb := scenario.ProviderB(pl); pb != scenario.ProviderA {
		provs = append(provs, sim.Provider{Name: pb, NoPrefill: row.NoPrefill, Dialect: dq})
	}
	dialectOf := map[string]config.Dialect{scenario.ProviderA: config.OpenAI, "q": config.OpenAI}
	if dp != "" {
		dialectOf[scenario.ProviderA] = config.Dialect(dp) // the simulator's names are config's
	}
	if dq != "" {
		dialectOf["q"] = config.Dialect(dq)
	}
	srv, err := sim.NewServer(provs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	lim := row.Limits
	if lim == (scenario.Limits{}) {
		lim = scenario.DefaultLimits
	}
	hc := &http.Client{Transport: srv.Transport()}
	route := &router.Route{Name: "scenario", HeaderTimeout: lim.HeaderTimeout, FirstToken: lim.FirstToken,
		IdleTimeout: lim.IdleTimeout, MaxDuration: lim.MaxDuration, Buffered: row.Mode == scenario.Buffered,
		Budget: policy.Budget{Deadline: lim.Deadline, Reserve: lim.Reserve}}
	type cand struct {
		prov, model string
		context     int
	}
	cands := []cand{{scenario.ProviderA, scenario.ModelA, row.ContextA}}
	for i := range row.Middle {
		cands = append(cands, cand{scenario.ProviderA, scenario.MiddleModel(i), 0})
	}
	cands = append(cands, cand{scenario.ProviderB(pl), scenario.ModelB, row.ContextB})
	for _, tg := range cands {
		route.Chain = append(route.Chain, router.Target{Provider: tg.prov, Model: tg.model, Context: tg.context,
			Dialect: string(dialectOf[tg.prov]), Client: config.NewClient(dialectOf[tg.prov], srv.BaseURL(tg.prov), testKey, hc, nil)})
	}
	if row.ReasoningA {
		route.Chain[0].Offers = []string{"reasoning"}
	}
	if !row.QuotaA.IsZero() { // as config declares targets.p/model-a.limits
		route.Chain[0].Quotas = []router.Quota{{Key: scenario.ProviderA + "/" + scenario.ModelA, Source: scenario.QuotaSourceA,
			Limits: row.QuotaA}}
	}
	sc := &scene{srv: srv, ledger: &ledger.Memory{}, health: health.New(hs), route: route, pl: pl}
	sc.router = &router.Router{Health: sc.health, Ledger: sc.ledger, Rand: func() float64 { return 0 }}
	faultsA := row.A
	if row.Every != nil {
		faultsA = scenario.Faults(*row.Every, 12)
	}
	sc.enqueue(t, scenario.ProviderA, scenario.ModelA, faultsA)
	for i, f := range row.Middle {
		sc.enqueue(t, scenario.ProviderA, scenario.MiddleModel(i), scenario.Faults(f, 12))
	}
	sc.enqueue(t, scenario.ProviderB(pl), scenario.ModelB, row.B)
	return sc
}

func (sc *scene) enqueue(t *testing.T, prov, model string, faults []sim.Fault) {
	t.Helper()
	if len(faults) > 0 {
		if err := sc.srv.Enqueue(prov, model, faults...); err != nil {
			t.Fatal(err)
		}
	}
}

// outcome is what a row's request came to.
type outcome struct {
	answer string // "a", "b" or ""
	text   string
	usage  llm.Usage
	// degraded and dropped are what the Result says of the answer, a
	// stream's once it ended.
	degraded bool
	dropped  []string
	err      error // the router's error, or the stream's
	took     time.Duration
	outcome  scenario.Outcome
}

// send runs the row's request and reads the answer to its end.
func (sc *scene) send(row scenario.Row) outcome {
	req := &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}
	start := time.Now()
	var o outcome
	who := func(t *router.Target) string {
		switch t.Model {
		case scenario.ModelA:
			return "a"
		case scenario.ModelB:
			return "b"
		}
		return t.Model
	}
	if row.Mode == scenario.Complete {
		res, err := sc.router.Complete(context.Background(), sc.route, req, router.Options{})
		o.took, o.err = time.Since(start), err
		if err == nil {
			o.answer, o.text, o.usage, o.outcome = who(res.Target), res.Response.Message.Content, res.Response.Usage, scenario.Answered
			o.degraded, o.dropped = res.Degraded, res.Dropped
		}
	} else {
		req.Stream = true
		res, err := sc.router.Stream(context.Background(), sc.route, req, router.Options{})
		if err == nil {
			o.answer = who(res.Target)
			var b strings.Builder
			for {
				c, err := res.Stream.Next()
				if c.Usage != nil {
					o.usage = *c.Usage
				}
				b.WriteString(c.Content)
				if err == io.EOF {
					o.outcome = scenario.Answered
					break
				}
				if err != nil {
					o.err, o.outcome = err, scenario.Cut
					break
				}
			}
			res.Stream.Close()
			o.text, o.degraded, o.dropped = b.String(), res.Degraded, res.Dropped
		} else {
			o.err = err
		}
		o.took = time.Since(start)
	}
	switch {
	case o.outcome != "":
	case errors.Is(o.err, router.ErrFailClosed):
		o.outcome = scenario.FailedClosed
	case errors.Is(o.err, router.ErrAllFailed):
		o.outcome = scenario.AllFailed
	}
	return o
}

// TestScenario_Router runs the fault-scenario suite through the router in
// memory, under synctest's fake clock: the timing bounds are exact, and a
// minute of faults costs milliseconds.
func TestScenario_Router(t *testing.T) {
	for _, row := range scenario.Rows() {
		for _, pl := range scenario.Placements {
			t.Run(string(pl)+"/"+row.Name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					sc := newScene(t, row, pl, health.Settings{})
					var got []outcome
					for range max(row.Requests, 1) {
						got = append(got, sc.send(row))
					}
					checkScene(t, sc, row, pl, got)
				})
			})
		}
	}
}

// TestScenario_RouterResponsesTarget runs the suite with a target of the
// Responses API (dialect openai-responses): as the primary A, in both
// placements, and as the fallback B at another provider. Each fault takes
// that dialect's shape; a row whose expectation is chat completions' own
// is left out (Row.ForDialect).
func TestScenario_RouterResponsesTarget(t *testing.T) {
	for _, run := range []struct {
		name   string
		dp, dq sim.Dialect
		pls    []scenario.Placement
	}{
		{"responses-primary", sim.DialectResponses, "", scenario.Placements},
		{"responses-fallback", "", sim.DialectResponses, []scenario.Placement{scenario.OtherProvider}},
	} {
		for _, row := range scenario.Rows() {
			if ok, _ := row.ForDialect(run.dp); !ok {
				continue
			}
			for _, pl := range run.pls {
				t.Run(run.name+"/"+string(pl)+"/"+row.Name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						sc := newSceneIn(t, row, pl, health.Settings{}, run.dp, run.dq)
						var got []outcome
						for range max(row.Requests, 1) {
							got = append(got, sc.send(row))
						}
						checkScene(t, sc, row, pl, got)
					})
				})
			}
		}
	}
}

// checkScene compares the outcomes of a row's requests with what it
// expects (scenario.Want.Check), and checks the ledger against the
// providers.
func checkScene(t *testing.T, sc *scene, row scenario.Row, pl scenario.Placement, gots []outcome) {
	t.Helper()
	recs := sc.ledger.Records()
	stats := sc.srv.Stats()
	var obs []scenario.Observed
	for _, got := range gots {
		o := scenario.Observed{Outcome: got.outcome, Answer: got.answer, Text: got.text, Took: got.took,
			Usage: got.usage.InputTokens > 0 && got.usage.OutputTokens > 0, Degraded: got.degraded, Dropped: got.dropped}
		var re *router.Error
		if errors.As(got.err, &re) && errors.Is(got.err, router.ErrAllFailed) {
			o.HTTPStatus = map[router.Exhaustion]int{router.RateLimited: 429, router.Unavailable: 503, router.TimedOut: 504}[re.Exhaustion]
		}
		obs = append(obs, o)
	}
	o := scenario.Combine(obs)
	got := gots[len(gots)-1]
	scenario.Observe(&o, stats, recs, pl)
	for _, bad := range row.Expect(pl).Check(o, 1, 0) {
		t.Error(bad)
	}
	checkNoWaitThenSkip(t, recs)
	if sends, got := countRecordSends(recs), stats.Total(); sends != got {
		t.Errorf("ledger records %d sends, providers received %d", sends, got)
	}
	if t.Failed() {
		for _, l := range scenario.Lines(recs) {
			t.Log(l)
		}
		t.Logf("error: %v", got.err)
	}
}

// checkNoWaitThenSkip: no ledger line shows a wait followed by a skip of
// the same target (DESIGN: no wait without a send).
func checkNoWaitThenSkip(t *testing.T, recs []ledger.Record) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		p, r := recs[i-1], recs[i]
		if p.RequestID == r.RequestID && p.WaitSeconds > 0 && r.Action == "skip" && p.Provider == r.Provider && p.Model == r.Model {
			t.Errorf("waited %.3fs after %s/%s, then skipped it: %s", p.WaitSeconds, p.Provider, p.Model, r.Reason)
		}
	}
}

func countRecordSends(recs []ledger.Record) int {
	n := 0
	for _, r := range recs {
		if r.Action != "skip" {
			n++
		}
	}
	return n
}

// downHandler serves srv, and while down reports true scripts one
// Unavailable for each request to A before passing it on: A is down as a
// whole, whatever the request.
type downHandler struct {
	srv  *sim.Server
	down func() bool
}

func (h downHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	if h.down() && strings.Contains(string(body), `"model":"`+scenario.ModelA+`"`) {
		h.srv.Enqueue(scenario.ProviderA, scenario.ModelA, sim.Fault{Kind: sim.Unavailable}) //nolint:errcheck // a known provider
	}
	h.srv.ServeHTTP(w, r)
}

// TestScenario_RouterOutage: A is down for 60 s with a request every 4 s.
// Every request is answered, none waits for nothing, and A gets at most
// one send per open window of its breaker once it opened: the probe. It
// is long by its steps, one minute of traffic told in order.
func TestScenario_RouterOutage(t *testing.T) {
	o := scenario.DefaultOutage
	for _, pl := range scenario.Placements {
		t.Run(string(pl), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hs := health.Settings{OpenFor: o.OpenFor, FailureThreshold: o.FailureThreshold}
				sc := newScene(t, scenario.Row{Mode: scenario.Complete}, pl, hs)
				start := time.Now()
				hc := &http.Client{Transport: &sim.Transport{Handler: downHandler{srv: sc.srv,
					down: func() bool { return time.Since(start) < o.Down }}}}
				for i := range sc.route.Chain {
					tg := &sc.route.Chain[i]
					tg.Client = config.NewClient(config.OpenAI, sc.srv.BaseURL(tg.Provider), testKey, hc, nil)
				}
				var answeredByA []time.Duration
				for i := range o.Requests {
					at := time.Duration(i) * o.Every
					time.Sleep(at - time.Since(start))
					got := sc.send(scenario.Row{Mode: scenario.Complete})
					if got.outcome != scenario.Answered {
						t.Fatalf("request %d at %s: %s (%v)", i, at, got.outcome, got.err)
					}
					if got.took > time.Second {
						t.Errorf("request %d at %s took %s: a wait for nothing", i, at, got.took)
					}
					if got.answer == "a" {
						answeredByA = append(answeredByA, at)
					}
				}
				recs := sc.ledger.Records()
				checkNoWaitThenSkip(t, recs)
				// Sends to A while it was down, after the breaker opened.
				var sends []time.Time
				opened := false
				for _, r := range recs {
					if r.Model != scenario.ModelA {
						continue
					}
					if r.Status == ledger.StatusSkippedParked {
						opened = true
					}
					if r.Action != "skip" && opened && r.Time.Sub(start) < o.Down {
						sends = append(sends, r.Time)
					}
				}
				if !opened {
					t.Fatal("A's breaker never opened during the outage")
				}
				for i := 1; i < len(sends); i++ {
					if gap := sends[i].Sub(sends[i-1]); gap < o.OpenFor {
						t.Errorf("two sends to A %s apart while it was open (open_for %s): more than one per window", gap, o.OpenFor)
					}
				}
				if len(answeredByA) == 0 || answeredByA[0] > o.Down+o.OpenFor+o.Every {
					t.Errorf("A answered at %v: want it back within one open window after the outage", answeredByA)
				}
				if testing.Verbose() {
					for _, r := range recs {
						t.Logf("%6.1fs %s/%s #%d %s %s: %s", r.Time.Sub(start).Seconds(), r.Provider, r.Model, r.Attempt, r.Status, r.Action, r.Reason)
					}
				}
			})
		})
	}
}
