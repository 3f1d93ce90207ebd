package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// prow is one ledger line reduced to what the phase table asserts.
type prow struct {
	Target, Status, Action, Phase string
}

func (h *harness) phaseRows() []prow {
	var out []prow
	for _, r := range h.ledger.Records() {
		out = append(out, prow{r.Provider + "/" + r.Model, r.Status, r.Action, r.Phase})
	}
	return out
}

// TestRouter_CommitPhases runs one request per row and checks each ledger
// line's status, action and phase, the phase the request ended in (the
// Result's, or the Error's), and the sends each provider got: an outcome
// that is unknown after the send is never replayed for a request with side
// effects, and nothing is replayed once output reached the caller. It is
// long by its table, one row per case.
func TestRouter_CommitPhases(t *testing.T) {
	a := spec{provider: "alpha", model: "m1", family: "fam"}
	b := spec{provider: "beta", model: "m1", family: "fam"}
	tests := []struct {
		name          string
		chain         []spec
		stream        bool
		tools         bool
		nonIdempotent bool
		faults        []sim.Fault // alpha's script
		want          []prow
		wantPhase     policy.Phase // the Result's or the Error's
		wantErr       error
		sends         [2]int // requests alpha and beta received
	}{
		{
			name: "timeout after the send, not idempotent: fails closed, no second send", chain: []spec{a, b},
			nonIdempotent: true, faults: []sim.Fault{f(sim.Hang)},
			want:      []prow{{"alpha/m1", "header_timeout", "fail", "unknown"}},
			wantPhase: policy.PhaseUnknown, wantErr: router.ErrAllFailed, sends: [2]int{1, 0},
		},
		{
			name: "timeout after the send, idempotent: fails over", chain: []spec{a, b},
			faults: []sim.Fault{f(sim.Hang)},
			want: []prow{
				{"alpha/m1", "header_timeout", "failover", "unknown"},
				{"beta/m1", "ok", "return", "committed"},
			},
			wantPhase: policy.PhaseCommitted, sends: [2]int{1, 1},
		},
		{
			name: "reset before the status, not idempotent: no retry", chain: []spec{a, b},
			nonIdempotent: true, faults: []sim.Fault{f(sim.Reset)},
			want:      []prow{{"alpha/m1", "net_reset", "fail", "unknown"}},
			wantPhase: policy.PhaseUnknown, wantErr: router.ErrAllFailed, sends: [2]int{1, 0},
		},
		{
			name: "reset before the status, idempotent: retries", chain: []spec{a, b},
			faults: []sim.Fault{f(sim.Reset)},
			want: []prow{
				{"alpha/m1", "net_reset", "retry", "unknown"},
				{"alpha/m1", "ok", "return", "committed"},
			},
			wantPhase: policy.PhaseCommitted, sends: [2]int{2, 0},
		},
		{
			name: "non-streamed body cut after its status, not idempotent: no retry", chain: []spec{a, b},
			nonIdempotent: true, faults: []sim.Fault{f(sim.StreamCut)},
			want:      []prow{{"alpha/m1", "net_reset", "fail", "unknown"}},
			wantPhase: policy.PhaseUnknown, wantErr: router.ErrAllFailed, sends: [2]int{1, 0},
		},
		{
			name: "an error status says what happened: not idempotent still retries", chain: []spec{a, b},
			nonIdempotent: true, faults: []sim.Fault{f(sim.Unavailable)},
			want: []prow{
				{"alpha/m1", "http_503", "retry", "sent"},
				{"alpha/m1", "ok", "return", "committed"},
			},
			wantPhase: policy.PhaseCommitted, sends: [2]int{2, 0},
		},
		{
			name: "success: committed", chain: []spec{a, b},
			want:      []prow{{"alpha/m1", "ok", "return", "committed"}},
			wantPhase: policy.PhaseCommitted, sends: [2]int{1, 0},
		},
		{
			name: "skip: none", chain: []spec{{provider: "alpha", model: "m1", family: "fam", noKey: true}, b},
			nonIdempotent: true,
			want: []prow{
				{"alpha/m1", "skipped_no_key", "skip", "none"},
				{"beta/m1", "ok", "return", "committed"},
			},
			wantPhase: policy.PhaseCommitted, sends: [2]int{0, 1},
		},
		{
			name:  "stream cut after a tool call's first delta reached the caller: tool_started, no replay",
			chain: []spec{a, b}, stream: true, tools: true, faults: []sim.Fault{{Kind: sim.StreamCut, Chunks: 1}},
			want:      []prow{{"alpha/m1", "net_truncated", "fail", "tool_started"}},
			wantPhase: policy.PhaseToolStarted, sends: [2]int{1, 0},
		},
		{
			name:  "stream cut after content reached the caller: output_started, no replay",
			chain: []spec{a, b}, stream: true, faults: []sim.Fault{{Kind: sim.StreamCut, Chunks: 2}},
			want:      []prow{{"alpha/m1", "net_truncated", "fail", "output_started"}},
			wantPhase: policy.PhaseOutputStarted, sends: [2]int{1, 0},
		},
		{
			name:  "stream cut before any output, not idempotent: sent, retried invisibly",
			chain: []spec{a, b}, stream: true, nonIdempotent: true, faults: []sim.Fault{{Kind: sim.StreamCut, Chunks: 1}},
			want: []prow{
				{"alpha/m1", "net_truncated", "retry", "sent"},
				{"alpha/m1", "ok", "return", "committed"},
			},
			wantPhase: policy.PhaseCommitted, sends: [2]int{2, 0},
		},
		{
			name: "stream silent before its status, not idempotent: fails closed", chain: []spec{a, b},
			stream: true, nonIdempotent: true, faults: []sim.Fault{f(sim.Hang)},
			want:      []prow{{"alpha/m1", "header_timeout", "fail", "unknown"}},
			wantPhase: policy.PhaseUnknown, wantErr: router.ErrAllFailed, sends: [2]int{1, 0},
		},
		{
			name: "stream success: committed", chain: []spec{a, b}, stream: true, nonIdempotent: true,
			want:      []prow{{"alpha/m1", "ok", "return", "committed"}},
			wantPhase: policy.PhaseCommitted, sends: [2]int{1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, tt.chain...)
			route.HeaderTimeout = 30 * time.Millisecond // real time: the watch's timers
			if len(tt.faults) > 0 {
				h.script("alpha", "m1", tt.faults...)
			}
			req := prompt("hello")
			if tt.tools {
				req.Tools = []llm.Tool{{Name: "get_weather",
					Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
			}
			opts := router.Options{NonIdempotent: tt.nonIdempotent}
			var phase policy.Phase
			var err error
			if tt.stream {
				req.Stream = true
				var res *router.StreamResult
				if res, err = h.router.Stream(context.Background(), route, req, opts); err == nil {
					if res.Phase != policy.PhaseSent {
						t.Errorf("phase when Stream returns = %q, want sent", res.Phase)
					}
					var content, tool bool // what reached the caller
					for {
						c, serr := res.Stream.Next()
						if serr != nil {
							if serr != io.EOF && !errors.Is(serr, llm.ErrStreamTruncated) {
								t.Errorf("stream error %v", serr)
							}
							break
						}
						content, tool = content || c.Content != "", tool || len(c.ToolCalls) > 0
					}
					res.Stream.Close()
					phase = res.Phase
					if (tt.wantPhase == policy.PhaseToolStarted && !tool) || (tt.wantPhase == policy.PhaseOutputStarted && !content) {
						t.Errorf("caller got content %v, a tool call %v: not what phase %s says", content, tool, tt.wantPhase)
					}
				}
			} else {
				var res *router.Result
				if res, err = h.router.Complete(context.Background(), route, req, opts); err == nil {
					phase = res.Phase
				}
			}
			if tt.wantErr != nil {
				var re *router.Error
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &re) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				phase = re.Phase
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(tt.want, h.phaseRows()); diff != "" {
				t.Errorf("ledger (-want +got):\n%s", diff)
			}
			if phase != tt.wantPhase {
				t.Errorf("request phase = %q, want %q", phase, tt.wantPhase)
			}
			st := h.srv.Stats()
			if got := [2]int{st.Requests("alpha", ""), st.Requests("beta", "")}; got != tt.sends {
				t.Errorf("requests alpha, beta = %v, want %v", got, tt.sends)
			}
		})
	}
}

// refused answers every request as a host that refuses connections does.
type refused struct{}

func (refused) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// A connection never made sent nothing: phase none, and even a request
// with side effects is retried and moves on.
func TestRouter_RefusedConnectionIsPhaseNone(t *testing.T) {
	h, route := newHarness(t, spec{provider: "alpha", model: "m1"}, spec{provider: "beta", model: "m1"})
	route.Chain[0].Client = config.NewClient(config.OpenAI, "http://alpha.invalid/v1", testKey,
		&http.Client{Transport: refused{}}, nil)
	res, err := h.router.Complete(context.Background(), route, prompt("hello"), router.Options{NonIdempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []prow{
		{"alpha/m1", "net_refused", "retry", "none"},
		{"alpha/m1", "net_refused", "failover", "none"},
		{"beta/m1", "ok", "return", "committed"},
	}
	if diff := cmp.Diff(want, h.phaseRows()); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	if res.Phase != policy.PhaseCommitted || res.Attempts[0].Phase != policy.PhaseNone {
		t.Errorf("result phase %q, first attempt's %q", res.Phase, res.Attempts[0].Phase)
	}
}
