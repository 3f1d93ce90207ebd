package gateway_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// rsEvents reads a whole Responses stream with the official SDK: its
// events, the text of its output_text deltas joined, and its error.
func rsEvents(t *testing.T, f *rsFixture, p responses.ResponseNewParams, opts ...option.RequestOption) (
	events []responses.ResponseStreamEventUnion, text string, err error) {
	t.Helper()
	s := f.client().Responses.NewStreaming(ctx(t), p, opts...)
	var b strings.Builder
	for s.Next() {
		ev := s.Current()
		events = append(events, ev)
		if ev.Type == "response.output_text.delta" {
			b.WriteString(ev.Delta)
		}
	}
	return events, b.String(), s.Err()
}

// types returns the events' types, with runs of one delta type as one.
func types(events []responses.ResponseStreamEventUnion) []string {
	var out []string
	for _, ev := range events {
		if n := len(out); n > 0 && out[n-1] == ev.Type && strings.HasSuffix(ev.Type, ".delta") {
			continue
		}
		out = append(out, ev.Type)
	}
	return out
}

// checkSequence fails unless the events are numbered 0, 1, 2, ...
func checkSequence(t *testing.T, events []responses.ResponseStreamEventUnion) {
	t.Helper()
	for i, ev := range events {
		if ev.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
	}
}

// A text stream from either dialect: the event sequence the SDK knows,
// deltas that join into the answer of response.completed, and its usage.
func TestSDKResponses_StreamText(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{Answer: echo}, sim.Provider{Answer: echo})
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed"}
	for _, route := range []string{"gpt", "claude"} {
		t.Run(route, func(t *testing.T) {
			var hr *http.Response
			events, text, err := rsEvents(t, f, responses.ResponseNewParams{Model: route, Instructions: openai.String("be brief"),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello out there")}}, option.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			if got := types(events); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("events %v\nwant %v", got, want)
			}
			checkSequence(t, events)
			if n := strings.Count(text, " "); text != "sys=be brief prompt=hello out there" || n < 2 {
				t.Errorf("deltas joined = %q", text)
			}
			done := events[len(events)-1].AsResponseCompleted().Response
			u := done.Usage
			if done.OutputText() != text || done.Status != responses.ResponseStatusCompleted || u.InputTokens == 0 ||
				u.OutputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
				t.Errorf("response.completed %s", done.RawJSON())
			}
			for _, ev := range events {
				if ev.Type == "response.output_text.done" && (ev.Text != text || ev.ItemID != done.Output[0].ID) {
					t.Errorf("output_text.done %s", ev.RawJSON())
				}
			}
			if hr.Header.Get("X-Detour-Route") != route || hr.Header.Get("Content-Type") != "text/event-stream" {
				t.Errorf("headers %v", hr.Header)
			}
		})
	}
}

// A streamed function call: function_call_arguments deltas that join into
// the .done arguments and the completed response's function_call item.
func TestSDKResponses_StreamFunctionCall(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{}, sim.Provider{})
	for _, route := range []string{"gpt", "claude"} {
		t.Run(route, func(t *testing.T) {
			events, _, err := rsEvents(t, f, responses.ResponseNewParams{Model: route, Tools: []responses.ToolUnionParam{rsWeatherTool()},
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")}})
			if err != nil {
				t.Fatal(err)
			}
			checkSequence(t, events)
			var args, done string
			for _, ev := range events {
				switch ev.Type {
				case "response.function_call_arguments.delta":
					args += ev.Delta
				case "response.function_call_arguments.done":
					done = ev.Arguments
				}
			}
			final := events[len(events)-1].AsResponseCompleted().Response
			if len(final.Output) != 1 {
				t.Fatalf("final %s", final.RawJSON())
			}
			call := final.Output[0].AsFunctionCall()
			if args == "" || args != done || call.Arguments != done || call.Name != "get_weather" || call.CallID == "" ||
				!strings.Contains(done, `"city"`) {
				t.Errorf("deltas %q, done %q, item %s", args, done, final.Output[0].RawJSON())
			}
		})
	}
}

// A stream cut after its first output, with nowhere to fail over to, ends
// in a response.failed event and an error the SDK's stream reports (Err),
// never in a clean end.
func TestSDKResponses_StreamCutIsAnError(t *testing.T) {
	cut := []sim.Fault{{Kind: sim.StreamCut, Chunks: 3}, {Kind: sim.StreamCut, Chunks: 3}, {Kind: sim.StreamCut, Chunks: 3}}
	f := newRsFixture(t, rsRoutes, sim.Provider{Script: cut}, sim.Provider{})
	events, text, err := rsEvents(t, f, responses.ResponseNewParams{Model: "gpt",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var se *ssestream.StreamError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "the answer is incomplete") {
		t.Fatalf("err = %v, events %v", err, types(events))
	}
	if text == "" {
		t.Errorf("no text before the cut: events %v", types(events))
	}
	last := events[len(events)-1]
	if last.Type != "response.failed" || last.Response.Status != responses.ResponseStatusFailed || last.Response.Error.Message == "" {
		t.Errorf("last event %s", last.RawJSON())
	}
	checkSequence(t, events)
	if recs := f.ledger.Records(); len(recs) != 1 || recs[0].Status == "ok" {
		t.Errorf("ledger %+v: want the one cut attempt", recs)
	}
}

// wallRoutes are an rsFixture's routes whose first target, oa/m, is the
// one a test walls: same falls back to the same provider's other model,
// cross to the Anthropic-dialect provider.
const wallRoutes = `  same: {chain: [oa/m, oa/m2], budget: {base_backoff: 1ms, max_backoff: 2ms}}
  cross: {chain: [oa/m, an/claude-x], budget: {base_backoff: 1ms, max_backoff: 2ms}}
`

// A wall on the first target fails over before any byte, whole and
// streamed, to the same provider's other model or to another dialect:
// one ledger line per attempt, and the headers name who answered.
func TestSDKResponses_WallFailsOver(t *testing.T) {
	for _, tc := range []struct {
		route, provider, model string
		oa                     sim.Provider
	}{
		// A model's own daily quota is a wall for that model alone.
		{"same", "oa", "m2", sim.Provider{ModelScripts: map[string][]sim.Fault{"m": {{Kind: sim.DailyQuota}, {Kind: sim.DailyQuota}}}}},
		// No credits is a wall for the account: another dialect answers.
		{"cross", "an", "claude-x", sim.Provider{Script: []sim.Fault{{Kind: sim.NoCredits}, {Kind: sim.NoCredits}}}},
	} {
		t.Run(tc.route, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				f := newRsFixture(t, wallRoutes, tc.oa, sim.Provider{})
				p := responses.ResponseNewParams{Model: tc.route, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
				var hr *http.Response
				var model, text string
				if stream {
					events, _, err := rsEvents(t, f, p, option.WithResponseInto(&hr))
					if err != nil {
						t.Fatal(err)
					}
					final := events[len(events)-1].AsResponseCompleted().Response
					model, text = final.Model, final.OutputText()
				} else {
					resp, err := f.client().Responses.New(ctx(t), p, option.WithResponseInto(&hr))
					if err != nil {
						t.Fatal(err)
					}
					model, text = resp.Model, resp.OutputText()
				}
				if model != tc.model || !strings.HasPrefix(text, "Hello from "+tc.provider+"/"+tc.model) {
					t.Errorf("stream %v: answered by %q: %q", stream, model, text)
				}
				h := hr.Header
				if stream {
					h = hr.Header.Clone()
					for k, v := range hr.Trailer {
						h[k] = v
					}
				}
				if h.Get("X-Detour-Route") != tc.route || h.Get("X-Detour-Provider") != tc.provider ||
					h.Get("X-Detour-Model") != tc.model || h.Get("X-Detour-Attempts") != "2" {
					t.Errorf("stream %v: headers %v", stream, h)
				}
				recs := f.ledger.Records()
				if len(recs) != 2 || recs[0].Model != "m" || recs[0].Kind != "wall" || recs[1].Model != tc.model ||
					recs[1].Status != "ok" || !recs[1].Failover && recs[1].Hop != 1 {
					t.Errorf("stream %v: ledger %s", stream, ledgerText(recs))
				}
			}
		})
	}
}

// ledgerText shows records one a line, for a failure message.
func ledgerText(recs []ledger.Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString("\n  " + r.Provider + "/" + r.Model + " " + r.Status + " " + r.Kind + " " + string(r.Action))
	}
	return b.String()
}
