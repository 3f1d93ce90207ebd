package router_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// recTracer keeps what the router told it, in order.
type recTracer struct {
	starts []router.TraceRequest
	events []string // "attempt STATUS", "end OK|ERR"
	ends   []*router.Result
	errs   []error
	atts   []router.Attempt
}

func (rt *recTracer) StartRequest(_ context.Context, info router.TraceRequest) router.RequestSpan {
	rt.starts = append(rt.starts, info)
	return rt
}

func (rt *recTracer) Attempt(a router.Attempt) {
	rt.events = append(rt.events, "attempt "+a.Status)
	rt.atts = append(rt.atts, a)
}

func (rt *recTracer) End(res *router.Result, err error, _ time.Time) {
	what := "end ok"
	if err != nil {
		what = "end err"
	}
	rt.events = append(rt.events, what)
	rt.ends, rt.errs = append(rt.ends, res), append(rt.errs, err)
}

func TestRouter_TraceSeesEveryAttemptThenTheEnd(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "m"}, spec{provider: "b", model: "m", noKey: true},
		spec{provider: "c", model: "m"})
	h.script("a", "m", simulate.Fault{Kind: simulate.NoCredits})
	tr := &recTracer{}
	h.router.Trace = tr
	req := prompt("hi")
	req.Model = "test"
	res, err := h.router.Complete(context.Background(), route, req, router.Options{RequestID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"attempt http_402", "attempt skipped_no_key", "attempt ok", "end ok"}
	if len(tr.starts) != 1 || tr.starts[0].RequestID != "r1" || tr.starts[0].Route != "test" || tr.starts[0].Model != "test" ||
		tr.starts[0].Stream || !tr.starts[0].Start.Equal(epoch) {
		t.Errorf("starts %+v, want one for r1 on route test at the fake clock's epoch", tr.starts)
	}
	if len(tr.events) != len(want) {
		t.Fatalf("events %q, want %q", tr.events, want)
	}
	for i := range want {
		if tr.events[i] != want[i] {
			t.Errorf("event %d = %q, want %q", i, tr.events[i], want[i])
		}
	}
	if tr.ends[0] != res || tr.errs[0] != nil {
		t.Errorf("End got %p %v, want the Result %p and no error", tr.ends[0], tr.errs[0], res)
	}
	for i, a := range tr.atts {
		if a.Start.IsZero() {
			t.Errorf("attempt %d (%s) has no Start", i, a.Status)
		}
	}
	if ok := tr.atts[2]; ok.Model == "" || ok.Usage.OutputTokens == 0 {
		t.Errorf("the answer's attempt has model %q, usage %+v: want the answer's", ok.Model, ok.Usage)
	}
}

func TestRouter_TraceEndsAFailedRequest(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "m"})
	h.script("a", "m", simulate.Fault{Kind: simulate.BadRequest})
	tr := &recTracer{}
	h.router.Trace = tr
	_, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{})
	if err == nil {
		t.Fatal("no error")
	}
	if len(tr.ends) != 1 || tr.ends[0] != nil || !errors.Is(tr.errs[0], router.ErrFailClosed) {
		t.Errorf("End got %v %v, want no Result and the request's error", tr.ends, tr.errs)
	}
}

func TestRouter_TraceOfAStreamEndsWithIt(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "m"})
	tr := &recTracer{}
	h.router.Trace = tr
	sr, err := h.router.Stream(context.Background(), route, prompt("hi"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.ends) != 0 {
		t.Fatalf("the span ended before the stream: %q", tr.events)
	}
	for {
		if _, err := sr.Stream.Next(); err != nil {
			break
		}
	}
	sr.Stream.Close()
	if len(tr.ends) != 1 || tr.ends[0] != sr.Result || tr.errs[0] != nil || !tr.starts[0].Stream {
		t.Fatalf("events %q: want one end, with the stream's Result and no error", tr.events)
	}
	if a := tr.atts[len(tr.atts)-1]; a.Status != "ok" || a.Model == "" {
		t.Errorf("the stream's attempt: status %q model %q", a.Status, a.Model)
	}
}

// nopTracer traces into nothing, allocating nothing.
type nopTracer struct{}

var nopSpan = &nopTracer{}

func (*nopTracer) StartRequest(context.Context, router.TraceRequest) router.RequestSpan {
	return nopSpan
}
func (*nopTracer) Attempt(router.Attempt)               {}
func (*nopTracer) End(*router.Result, error, time.Time) {}

// TestRouter_TraceHooksAllocateNothing: the router's calls to a Tracer
// allocate nothing of their own, so with Trace nil (which skips them
// behind a nil check) tracing costs no allocation.
func TestRouter_TraceHooksAllocateNothing(t *testing.T) {
	route := benchRoute(&fixedClient{resp: llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: "hi"}}})
	req := prompt("hello")
	allocs := func(tr router.Tracer) float64 {
		r := (&router.Router{Ledger: ledger.Discard, Trace: tr}).Init()
		return testing.AllocsPerRun(200, func() {
			if _, err := r.Complete(context.Background(), route, req, router.Options{RequestID: "x"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	off, nop := allocs(nil), allocs(&nopTracer{})
	if nop != off {
		t.Errorf("%v allocations per request with a tracer that does nothing, %v without: the hooks allocate", nop, off)
	}
}
