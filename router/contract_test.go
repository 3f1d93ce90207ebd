package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// A target that declares what it offers is skipped for a capability it
// lacks, before any send; one that declares nothing is sent to.
func TestContract_OffersAndCapabilities(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "text-only"}, spec{provider: "p2", model: "vision"}, spec{provider: "p3", model: "unknown"})
	route.Chain[0].Offers = []string{"tools"}
	route.Chain[1].Offers = []string{"tools", "images", "json_schema"}
	req := prompt("what is in this image?")
	req.Needs = []string{"image input"}
	// Sent as the client wrote it (same dialect): the image itself is no
	// matter of translation, only of what the model offers.
	req.Raw = &llm.Raw{Dialect: "openai", Body: []byte(`{"model":"x","messages":[{"role":"user","content":"what is in this image?"}]}`)}
	res, err := h.router.Complete(context.Background(), route, req, router.Options{})
	if err != nil || res.Target.ID() != "p2/vision" {
		t.Fatalf("res %v err %v: want the target that offers images", res, err)
	}
	if s, want := rowWords(h.rows()), "p1/text-only skipped_contract skip,p2/vision ok return"; s != want {
		t.Fatalf("ledger %s, want %s", s, want)
	}
	if r := h.ledger.Records()[0].Reason; !strings.Contains(r, "images") {
		t.Errorf("skip reason %q does not name the capability", r)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 0 {
		t.Errorf("the skipped target got %d sends", n)
	}
	// JSON schema output: p1 does not offer it, p3 says nothing (sent to).
	h.newLedger()
	route.Chain = route.Chain[:1:1]
	route.Chain = append(route.Chain, router.Target{Provider: "p3", Model: "unknown", Client: route.Chain[0].Client})
	req = prompt("json please")
	req.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	res, err = h.router.Complete(context.Background(), route, req, router.Options{})
	if err != nil || res.Target.ID() != "p3/unknown" {
		t.Fatalf("res %v err %v: want the target whose offers are unknown", res, err)
	}
}

// A route's requirements (data terms) are met only by targets that
// state them (Terms): an unknown never meets one. When none does, the request
// fails closed naming what is missing.
func TestContract_RouteRequirements(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
	route.Requires = []string{"zero_retention"}
	route.Chain[1].Terms = []string{"zero_retention", "no_training"}
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.ID() != "p2/b" {
		t.Fatalf("res %v err %v: want the target that offers zero retention", res, err)
	}
	h.newLedger()
	route.Chain[1].Terms = []string{"no_training"}
	_, err = h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	var re *router.Error
	if !errors.Is(err, router.ErrFailClosed) || !errors.Is(err, router.ErrUnsupported) || !errors.As(err, &re) {
		t.Fatalf("err %v: want a fail-closed unsupported request", err)
	}
	if !strings.Contains(re.Candidates[0].Reason, "zero_retention") || h.srv.Stats().Total() != 1 {
		t.Errorf("candidates %+v, %d sends: want both skipped for zero_retention, no new send", re.Candidates, h.srv.Stats().Total())
	}
}

// A request that does not fit a target's known output cap or context is
// skipped for it; the one that fits answers.
func TestContract_Sizes(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "small", context: 100}, spec{provider: "p2", model: "big", context: 100000})
	route.Chain[0].MaxOutput = 32
	req := prompt(strings.Repeat("long prompt ", 100)) // ~1200 chars, ~300 tokens
	req.MaxTokens = 16
	res, err := h.router.Complete(context.Background(), route, req, router.Options{})
	if err != nil || res.Target.ID() != "p2/big" {
		t.Fatalf("res %v err %v", res, err)
	}
	if r := h.ledger.Records()[0]; r.Status != "skipped_contract" || !strings.Contains(r.Reason, "input tokens") {
		t.Errorf("first record %+v: want a skip for the context", r)
	}
	h.newLedger()
	req = prompt("short")
	req.MaxTokens = 64
	if res, err = h.router.Complete(context.Background(), route, req, router.Options{}); err != nil || res.Target.ID() != "p2/big" {
		t.Fatalf("res %v err %v", res, err)
	}
	if r := h.ledger.Records()[0]; !strings.Contains(r.Reason, "max_tokens 64 (its output cap is 32)") {
		t.Errorf("first record %+v: want a skip for the output cap", r)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 0 {
		t.Errorf("p1 got %d sends", n)
	}
}

// Every skip is a ledger line, whatever ended the request: the skips of
// the candidates after a head that failed closed, after a head that left
// none to move to, and of a request whose caller left before any send,
// each with its hop, and the same as the final error names.
func TestContract_EverySkipIsALedgerLine(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fault   *sim.Fault // the head's answer; nil: the caller left first
		wantErr error
		want    string
	}{
		{name: "the head fails closed", fault: &sim.Fault{Kind: sim.BadRequest}, wantErr: router.ErrFailClosed,
			want: "p1/m http_400 fail,p2/m skipped_contract skip,p3/m skipped_parked skip"},
		{name: "the head walls and none is left to move to", fault: &sim.Fault{Kind: sim.NoCredits}, wantErr: router.ErrAllFailed,
			want: "p1/m http_402 fail,p2/m skipped_contract skip,p3/m skipped_parked skip"},
		{name: "the caller left before any send", wantErr: router.ErrCanceled,
			want: "p2/m skipped_contract skip,p3/m skipped_parked skip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"}, spec{provider: "p3", model: "m"})
			route.Chain[1].Offers = []string{"images"}
			h.health.Park("p3/m", epoch.Add(time.Hour), "429 rate limited", epoch)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.fault != nil {
				h.script("p1", "m", *tt.fault)
			} else {
				cancel()
			}
			req := prompt("weather?")
			req.Tools = []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}}
			_, err := h.router.Complete(ctx, route, req, router.Options{})
			var re *router.Error
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &re) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if got := rowWords(h.rows()); got != tt.want {
				t.Errorf("ledger %s\nwant   %s", got, tt.want)
			}
			recs := h.ledger.Records()
			for _, c := range re.Candidates {
				if !strings.HasPrefix(c.Status, "skipped") {
					continue
				}
				found := false
				for _, r := range recs {
					found = found || r.Provider+"/"+r.Model == c.Target && r.Status == c.Status && r.Reason == c.Reason
				}
				if !found {
					t.Errorf("the error names %s %s (%s), the ledger has no such line", c.Target, c.Status, c.Reason)
				}
			}
			for _, r := range recs {
				if want := map[string]int{"p1": 0, "p2": 1, "p3": 2}[r.Provider]; r.Hop != want {
					t.Errorf("%s/%s at hop %d, want %d", r.Provider, r.Model, r.Hop, want)
				}
			}
		})
	}
}
