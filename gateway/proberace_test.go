package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/probe"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// p1Target is p1/m as the probe sees it, over the fixture's providers.
func (f *fixture) p1Target() *router.Target {
	return &router.Target{Provider: "p1", Model: "m", Family: "fam", Dialect: "openai",
		Client: config.NewClient(config.OpenAI, f.upURL+"/p1/v1", upstreamKey+"1", nil, nil)}
}

func hi(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
}

// A probe never races live traffic: while a live gateway request is out to
// a target as its half-open probe, `detour probe` sends nothing to it; and
// while a probe's lease is out, live requests pass the target by.
func TestProbe_NeverRacesALiveRequestInFlight(t *testing.T) {
	hb := health.New(health.Settings{})
	f := newFixture(t, setup{health: hb})
	now := time.Now()
	hb.Park("p1/m", now.Add(20*time.Millisecond), "test wall", now)
	time.Sleep(30 * time.Millisecond) // the park has ended: the next send is the half-open probe
	enqueue(f, "p1", "m", sim.Fault{Kind: sim.SlowFirstToken, Delay: 400 * time.Millisecond})

	done := make(chan error, 1)
	var model string
	go func() {
		got, err := f.openai(option.WithMaxRetries(0)).Chat.Completions.New(context.Background(), hi("default"))
		if err == nil {
			model = got.Model
		}
		done <- err
	}()
	waitFor(t, "the live request to reach p1", func() bool { return f.sim.Stats().Requests("p1", "m") == 1 })

	pr := &probe.Prober{Health: hb, Ledger: &ledger.Memory{}}
	res := pr.One(context.Background(), probe.Check{Target: f.p1Target()})
	if res.Method != probe.MethodNone || f.sim.Stats().ModelReads("p1") != 0 {
		t.Fatalf("probe %+v and %d model reads while a live request was p1's half-open probe", res, f.sim.Stats().ModelReads("p1"))
	}
	if err := <-done; err != nil || model != "m" {
		t.Fatalf("live request: %v (model %q)", err, model)
	}
	if st, _ := hb.State("p1/m", time.Now()); st != health.Closed {
		t.Fatalf("p1/m is %s after its half-open request answered", st)
	}

	// Now the other way round: a probe's lease is out on a parked p1.
	now = time.Now()
	hb.Park("p1/m", now.Add(time.Hour), "test wall", now)
	permit, _, ok := hb.BeginProbe("p1/m", now)
	if !ok {
		t.Fatal("no probe lease on a parked target")
	}
	f.sim.ClearStats()
	got, err := f.openai(option.WithMaxRetries(0)).Chat.Completions.New(context.Background(), hi("default"))
	if err != nil || got.Model != "m" || f.sim.Stats().Requests("p1", "m") != 0 || f.sim.Stats().Requests("p2", "m") != 1 {
		t.Fatalf("live request during the probe: %v; p1 got %d, p2 %d", err, f.sim.Stats().Requests("p1", "m"), f.sim.Stats().Requests("p2", "m"))
	}
	hb.EndProbe("p1/m", permit, true, health.Outcome{}, time.Now())
	f.sim.ClearStats()
	if _, err := f.openai(option.WithMaxRetries(0)).Chat.Completions.New(context.Background(), hi("default")); err != nil || f.sim.Stats().Requests("p1", "m") != 1 {
		t.Fatalf("after the probe released p1: %v, p1 got %d", err, f.sim.Stats().Requests("p1", "m"))
	}
}
