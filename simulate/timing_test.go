package simulate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

func TestLateFirstToken_HeadersAtOnceThenDelay(t *testing.T) {
	// The events that come with the headers, before the wait.
	preamble := map[Dialect][]string{
		DialectOpenAI:    {`"delta":{"role":"assistant","content":"","refusal":null}`},
		DialectAnthropic: {"event: message_start\n", "event: content_block_start\n", "event: ping\n"},
		DialectGemini:    nil,
		DialectResponses: {"event: response.created\n", "event: response.in_progress\n", "event: response.output_item.added\n",
			"event: response.content_part.added\n"},
	}
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: d, Latency: Latency{FirstToken: 300 * time.Millisecond},
					Script: []Fault{{Kind: LateFirstToken, Delay: 20 * time.Second}}})
				gate := newGateClock()
				r.srv.Clock = gate
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				type answer struct {
					resp *http.Response
					err  error
				}
				got := make(chan answer, 1)
				go func() {
					resp, err := r.ask(t, ctx, "p", "m", true)
					got <- answer{resp, err}
				}()
				// The headers and the events before any content come while the
				// provider is parked in the Delay (its FirstToken is not waited).
				parked := false
				checkWait := func(d time.Duration) {
					if d != 20*time.Second {
						t.Fatalf("first wait %v, want the Delay 20s", d)
					}
					parked = true
				}
				var resp *http.Response
				for resp == nil {
					select {
					case a := <-got:
						if a.err != nil {
							t.Fatal(a.err)
						}
						resp = a.resp
					case d := <-gate.asked:
						checkWait(d)
					case <-time.After(5 * time.Second):
						t.Fatal("no headers")
					}
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("headers: %d %v", resp.StatusCode, resp.Header)
				}
				early := readFrames(t, resp.Body, frameEnd(d), len(preamble[d]))
				if n := strings.Count(string(early), frameEnd(d)); n != len(preamble[d]) {
					t.Errorf("%d events with the headers, want %d: %q", n, len(preamble[d]), early)
				}
				for _, p := range preamble[d] {
					if !strings.Contains(string(early), p) {
						t.Errorf("no %q with the headers: %q", p, early)
					}
				}
				if !parked {
					select {
					case d := <-gate.asked:
						checkWait(d)
					case <-time.After(5 * time.Second):
						t.Fatal("the provider never waited")
					}
				}
				close(gate.release)
				rest, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				full := append(early, rest...)
				if want := okBody(t, d, Fault{}, true); string(full) != string(want) {
					t.Errorf("stream differs from OK's:\n--- ok\n%s\n--- late\n%s", want, full)
				}
				s := summarize(drain(decodeStream(t, d, replay(resp.Header, full))))
				if s.err != nil || s.text != "Hello from p/m." || s.usage == nil || s.usage.OutputTokens != 4 {
					t.Errorf("decoded: %+v", s)
				}
			})
		})
	}
}

func TestLateFirstToken_PlainAnswerIsASlowFirstToken(t *testing.T) {
	for _, d := range allDialects {
		r := newRig(t, "memory", Provider{Name: "p", Dialect: d, Latency: Latency{FirstToken: 300 * time.Millisecond},
			Script: []Fault{{Kind: LateFirstToken, Delay: 20 * time.Second}}})
		if resp, _ := r.mustAsk(t, "p", "m", false); resp.StatusCode != 200 {
			t.Errorf("%s: status %d", d, resp.StatusCode)
		}
		if diff := cmp.Diff([]time.Duration{20 * time.Second, 300 * time.Millisecond}, r.clock.Sleeps()); diff != "" {
			t.Errorf("%s: sleeps (-want +got):\n%s", d, diff)
		}
	}
}

// seventy is the text of a 70-piece answer of p/m.
var seventy = func() string {
	var b strings.Builder
	b.WriteString("Hello from p/m.")
	for k := 6; k <= 70; k++ {
		fmt.Fprintf(&b, " %d", k)
	}
	return b.String()
}()

func TestGapAndPieces_SeventyChunksOneSecondApart(t *testing.T) {
	// Events of a 70-piece stream: OpenAI role + 70 + finish + usage (then
	// [DONE], without a wait); Anthropic 3 + 70 + content_block_stop,
	// message_delta, message_stop; Gemini 70; Responses the opening
	// events (one write) + 70 + the .done events (one write) + completed.
	events := map[Dialect]int{DialectOpenAI: 73, DialectAnthropic: 76, DialectGemini: 70, DialectResponses: 73}
	wantUsage := (len(seventy) + 3) / 4
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				f := Fault{Pieces: 70, Gap: time.Second}
				r := newRig(t, way, Provider{Name: "p", Dialect: d, Latency: Latency{FirstToken: 300 * time.Millisecond, PerChunk: 50 * time.Millisecond},
					Script: []Fault{f, f}})
				r.srv.LatencyScale = 0.5
				resp, err := r.ask(t, context.Background(), "p", "m", true)
				if err != nil {
					t.Fatal(err)
				}
				s := summarize(drain(decodeStream(t, d, resp)))
				if s.err != nil || s.deltas != 70 || s.text != seventy || s.finish != llm.FinishStop {
					t.Errorf("stream: %d deltas, text %q, finish %q, err %v", s.deltas, s.text, s.finish, s.err)
				}
				if s.usage == nil || s.usage.OutputTokens != wantUsage {
					t.Errorf("stream usage %+v, want %d output tokens", s.usage, wantUsage)
				}
				// FirstToken is scaled, the Gap is not and replaces PerChunk.
				want := []time.Duration{150 * time.Millisecond}
				for range events[d] - 1 {
					want = append(want, time.Second)
				}
				if diff := cmp.Diff(want, r.clock.Sleeps()); diff != "" {
					t.Errorf("stream sleeps (-want +got):\n%s", diff)
				}

				resp, err = r.ask(t, context.Background(), "p", "m", false)
				if err != nil {
					t.Fatal(err)
				}
				whole, err := decodeResponse(d, resp)
				if err != nil || whole.Message.Content != seventy || whole.Usage.OutputTokens != wantUsage {
					t.Fatalf("plain answer %+v, %v", whole, err)
				}
				if got := r.clock.Sleeps()[len(want):]; !cmp.Equal(got, []time.Duration{150*time.Millisecond + 70*time.Second}) {
					t.Errorf("plain answer sleeps %v, want FirstToken/2 + 70 x 1s", got)
				}
			})
		})
	}
}

func TestPieces_FewerPiecesJoinTheLastOnes(t *testing.T) {
	base := textPieces("Hello from p/m.")
	cases := map[int][]string{
		1: {"Hello from p/m."},
		2: {"Hello", " from p/m."},
		5: {"Hello", " from", " p", "/m", "."},
		7: {"Hello", " from", " p", "/m", ".", " 6", " 7"},
	}
	for n, want := range cases {
		if diff := cmp.Diff(want, fitPieces(base, n)); diff != "" {
			t.Errorf("fitPieces(%d) (-want +got):\n%s", n, diff)
		}
	}
	for _, d := range allDialects {
		r := newRig(t, "memory", Provider{Name: "p", Dialect: d, Script: []Fault{{Pieces: 2}}})
		resp, err := r.ask(t, context.Background(), "p", "m", true)
		if err != nil {
			t.Fatal(err)
		}
		if s := summarize(drain(decodeStream(t, d, resp))); s.deltas != 2 || s.text != "Hello from p/m." || s.err != nil {
			t.Errorf("%s: %+v", d, s)
		}
	}
}

func TestGap_AppliesToTheEventsBeforeAFault(t *testing.T) {
	for _, d := range allDialects {
		r := newRig(t, "memory", Provider{Name: "p", Dialect: d, Script: []Fault{
			{Kind: StreamCut, Chunks: 3, Gap: 2 * time.Second},
			{Kind: StreamMalformed, Chunks: 3, Gap: 3 * time.Second},
			{Kind: StreamError, Chunks: 2, Gap: 4 * time.Second},
		}})
		for range 3 {
			if resp, err := r.ask(t, context.Background(), "p", "m", true); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		want := []time.Duration{2 * time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 4 * time.Second, 4 * time.Second}
		if diff := cmp.Diff(want, r.clock.Sleeps()); diff != "" {
			t.Errorf("%s: sleeps (-want +got):\n%s", d, diff)
		}
	}
}

// TestUsage_KeptByEveryKindThatAnswers reads each streamed answer through
// the dialect's decoder: the usage is there and counts the text.
func TestUsage_KeptByEveryKindThatAnswers(t *testing.T) {
	faults := []Fault{{Kind: OK}, {Kind: NoDone}, {Kind: LateFirstToken, Delay: time.Second},
		{Kind: SlowFirstToken, Delay: time.Second}, {Kind: OK, Pieces: 9, Gap: time.Millisecond}}
	for _, d := range allDialects {
		for _, f := range faults {
			if d == DialectResponses && f.Kind == NoDone {
				continue // the usage comes with the response.completed NoDone leaves out
			}
			r := newRig(t, "memory", Provider{Name: "p", Dialect: d, Script: []Fault{f}})
			resp, err := r.ask(t, context.Background(), "p", "m", true)
			if err != nil {
				t.Fatal(err)
			}
			s := summarize(drain(decodeStream(t, d, resp)))
			if s.usage == nil || s.usage.InputTokens == 0 || s.usage.OutputTokens != (len(s.text)+3)/4 || s.finish != llm.FinishStop {
				t.Errorf("%s %s: text %q usage %+v finish %q", d, f, s.text, s.usage, s.finish)
			}
		}
	}
}
