package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// nativeDialects are the dialects other than OpenAI's, whose connection
// faults and latencies the OpenAI tests (conn_test.go) do not reach.
var nativeDialects = []Dialect{DialectAnthropic, DialectGemini}

func TestDialects_HangResetAndSlowFirstToken(t *testing.T) {
	for _, d := range nativeDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: d, Latency: Latency{FirstToken: 300 * time.Millisecond},
					Script: []Fault{{Kind: Hang}, {Kind: Reset}, {Kind: SlowFirstToken, Delay: 45 * time.Second}}})
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				resp, err := r.ask(t, ctx, "p", "m", true)
				cancel()
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got a %d response from a hung provider", resp.StatusCode)
				}
				if !isTimeout(err) {
					t.Errorf("hang: %v, want the context's deadline", err)
				}
				if _, err := r.ask(t, context.Background(), "p", "m", false); !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("reset: %v", err)
				}
				start := time.Now()
				if resp, _ := r.mustAsk(t, "p", "m", true); resp.StatusCode != 200 {
					t.Errorf("slow first token: status %d", resp.StatusCode)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("a fake-clock delay took %v of real time", d)
				}
				if diff := cmp.Diff([]time.Duration{45 * time.Second, 300 * time.Millisecond}, r.clock.Sleeps()); diff != "" {
					t.Errorf("sleeps (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestDialects_Latency(t *testing.T) {
	lat := Latency{Error: 130 * time.Millisecond, FirstToken: 400 * time.Millisecond, PerChunk: 20 * time.Millisecond}
	for _, d := range nativeDialects {
		t.Run(string(d), func(t *testing.T) {
			r := newRig(t, "memory", Provider{Name: "p", Dialect: d, Latency: lat, Script: Faults(RateLimit)})
			r.mustAsk(t, "p", "m", false) // 429: Error latency
			r.mustAsk(t, "p", "m", false) // answer: FirstToken + 5 pieces x PerChunk
			r.mustAsk(t, "p", "m", true)  // stream: FirstToken, then PerChunk between events
			got := r.clock.Sleeps()
			want := []time.Duration{130 * time.Millisecond, 500 * time.Millisecond, 400 * time.Millisecond, 20 * time.Millisecond}
			if len(got) < len(want) {
				t.Fatalf("sleeps %v", got)
			}
			if diff := cmp.Diff(want, got[:len(want)]); diff != "" {
				t.Errorf("first sleeps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDialects_ConcurrentRequests(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		profile := &Profile{Seed: 3, Rules: []Rule{{Chances: Chances(map[Kind]float64{RateLimit: 0.2, StreamCut: 0.1, StreamError: 0.1, Reset: 0.1})}}}
		r := newRig(t, way,
			Provider{Name: "o", Profile: profile},
			Provider{Name: "a", Dialect: DialectAnthropic, Profile: profile},
			Provider{Name: "g", Dialect: DialectGemini, Profile: profile},
		)
		var wg sync.WaitGroup
		for i := 0; i < 60; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				resp, err := r.ask(t, t.Context(), []string{"o", "a", "g"}[i%3], fmt.Sprintf("m%d", i%4), i%2 == 0)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}(i)
		}
		wg.Wait()
		st := r.srv.Stats()
		if got := []int{st.Total(), st.Requests("o", ""), st.Requests("a", ""), st.Requests("g", "")}; !cmp.Equal(got, []int{60, 20, 20, 20}) {
			t.Errorf("total, o, a, g = %v, want 60, 20 each", got)
		}
	})
}
