package router_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testKey is the upstream key every harness target uses; no ledger line,
// error or hop may ever contain it (DESIGN rule 12).
const testKey = "sk-test-DO-NOT-LEAK-0123456789abcdef"

// harness is a chain of simulated OpenAI-compatible providers served in
// memory, a router under a fake clock, and a memory ledger.
type harness struct {
	t      *testing.T
	srv    *simulate.Server
	clk    *clock.Fake
	ledger *ledger.Memory
	health *health.Breaker
	router *router.Router
	hops   []router.Hop
}

// spec names a chain entry: "provider/model", with family and key control.
type spec struct {
	provider, model, family string
	noKey                   bool
	context                 int
	dialect                 simulate.Dialect // zero: OpenAI-compatible
}

func newHarness(t *testing.T, chain ...spec) (*harness, *router.Route) {
	t.Helper()
	var provs []simulate.Provider
	seen := map[string]bool{}
	for _, s := range chain {
		if !seen[s.provider] {
			seen[s.provider] = true
			provs = append(provs, simulate.Provider{Name: s.provider, Dialect: s.dialect})
		}
	}
	srv, err := simulate.NewServer(provs...)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, clk: clock.NewFake(epoch), ledger: &ledger.Memory{}}
	srv.Clock = h.clk
	t.Cleanup(func() { srv.Close() })
	h.health = health.New(health.Settings{})
	h.router = &router.Router{
		Health: h.health, Ledger: h.ledger, Clock: h.clk,
		Rand:       func() float64 { return 0 },
		OnFailover: func(hp router.Hop) { h.hops = append(h.hops, hp) },
	}
	hc := &http.Client{Transport: srv.Transport()}
	route := &router.Route{Name: "test"}
	for _, s := range chain {
		tg := router.Target{Provider: s.provider, Model: s.model, Family: s.family, Pool: "free", Dialect: "openai",
			KeyEnv: "TEST_" + s.provider + "_KEY", Context: s.context, PriceIn: 1, PriceOut: 2}
		if !s.noKey {
			tg.Client = config.NewClient(config.Dialect(s.dialect), srv.BaseURL(s.provider), testKey, hc, nil)
		}
		route.Chain = append(route.Chain, tg)
	}
	return h, route
}

// script queues faults for provider/model.
func (h *harness) script(provider, model string, faults ...simulate.Fault) {
	h.t.Helper()
	if err := h.srv.Enqueue(provider, model, faults...); err != nil {
		h.t.Fatal(err)
	}
}

func prompt(text string) *llm.Request {
	return &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// row is one ledger line reduced to what a fault table asserts.
type row struct {
	Target string
	Status string
	Kind   string
	Action string
	Wait   time.Duration
}

func (h *harness) rows() []row {
	var out []row
	for _, r := range h.ledger.Records() {
		out = append(out, row{Target: r.Provider + "/" + r.Model, Status: r.Status, Kind: r.Kind, Action: r.Action,
			Wait: time.Duration(r.WaitSeconds * float64(time.Second)).Round(time.Millisecond)})
	}
	return out
}

// newLedger starts a fresh ledger, so that rows shows only what follows.
func (h *harness) newLedger() {
	h.ledger = &ledger.Memory{}
	h.router.Ledger = h.ledger
}
