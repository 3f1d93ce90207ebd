package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/scenario"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
	sim "github.com/detourhq/detour/simulate"
)

// scale is the time of the end-to-end runs against the suite's full
// scale: a tenth, so a minute-long outage takes six seconds.
const scale = 0.1

// slack is what real HTTP, the race detector and two busy cores may add to
// a row's upper time bound.
const slack = time.Second

func scaled(d time.Duration) time.Duration { return scaledBy(d, scale) }

func scaledBy(d time.Duration, k float64) time.Duration { return time.Duration(float64(d) * k) }

// rowScale is the time of row's run: scale, or full scale for a row that
// tests a built-in default.
func rowScale(row scenario.Row) float64 {
	if row.RealTime {
		return 1
	}
	return scale
}

func scaleFaults(fs []sim.Fault, k float64) []sim.Fault {
	out := make([]sim.Fault, len(fs))
	for i, f := range fs {
		f.RetryAfter, f.Delay, f.Gap = scaledBy(f.RetryAfter, k), scaledBy(f.Delay, k), scaledBy(f.Gap, k)
		out[i] = f
	}
	return out
}

// e2e is a gateway in front of the row's providers, both on loopback.
type e2e struct {
	sim    *sim.Server
	ts     *httptest.Server
	ledger *ledger.Memory
	chats  atomic.Int64
}

// newE2E starts the row's providers and a gateway whose route "scenario"
// is [p/model-a, X/model-b], at a tenth of the row's times. wrap, when
// set, wraps the providers' handler.
func newE2E(t *testing.T, row scenario.Row, pl scenario.Placement, hs health.Settings, wrap func(*sim.Server) http.Handler) *e2e {
	t.Helper()
	return newE2EIn(t, row, pl, hs, wrap, "", "")
}

// newE2EIn is newE2E with provider p speaking dialect dp and q dialect dq
// ("" is chat completions), in the simulator and in the config alike.
func newE2EIn(t *testing.T, row scenario.Row, pl scenario.Placement, hs health.Settings, wrap func(*sim.Server) http.Handler,
	dp, dq sim.Dialect) *e2e {
	t.Helper()
	pb := scenario.ProviderB(pl)
	provs := []sim.Provider{{Name: scenario.ProviderA, NoPrefill: row.NoPrefill, Dialect: dp}}
	if pb != scenario.ProviderA {
		provs = append(provs, sim.Provider{Name: pb, NoPrefill: row.NoPrefill, Dialect: dq})
	}
	dialect := func(d sim.Dialect) string {
		if d == "" {
			return ""
		}
		return ", dialect: " + string(d) // the simulator's names are config's
	}
	srv, err := sim.NewServer(provs...)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	up := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); up.Close() })
	faultsA := row.A
	if row.Every != nil {
		faultsA = scenario.Faults(*row.Every, 12)
	}
	middle := row.Middle
	k := rowScale(row)
	chain := "p/model-a"
	type queue struct {
		prov, model string
		fs          []sim.Fault
	}
	queues := []queue{{scenario.ProviderA, scenario.ModelA, faultsA}, {pb, scenario.ModelB, row.B}}
	for i, f := range middle {
		chain += ", p/" + scenario.MiddleModel(i)
		queues = append(queues, queue{scenario.ProviderA, scenario.MiddleModel(i), scenario.Faults(f, 12)})
	}
	for _, q := range queues {
		if len(q.fs) > 0 {
			if err := srv.Enqueue(q.prov, q.model, scaleFaults(q.fs, k)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	lim := row.Limits
	if lim == (scenario.Limits{}) {
		lim = scenario.DefaultLimits
	}
	offersA := ""
	if row.ReasoningA {
		offersA = ", offers: [reasoning]"
	}
	// A's declared quotas, as a user writes them (scenario.QuotaSourceA).
	var quota []string
	for _, w := range []struct {
		name string
		n    int
	}{{"rpm", row.QuotaA.RPM}, {"rph", row.QuotaA.RPH}, {"rpd", row.QuotaA.RPD},
		{"tpm", row.QuotaA.TPM}, {"tph", row.QuotaA.TPH}, {"tpd", row.QuotaA.TPD}} {
		if w.n != 0 {
			quota = append(quota, fmt.Sprintf("%s: %d", w.name, w.n))
		}
	}
	if len(quota) > 0 {
		offersA += ", limits: {" + strings.Join(quota, ", ") + "}"
	}
	// A limit the row leaves at zero is left out: the built-in default.
	limits := ""
	for _, l := range []struct {
		name string
		d    time.Duration
	}{{"header_timeout", lim.HeaderTimeout}, {"first_token", lim.FirstToken}, {"idle_timeout", lim.IdleTimeout},
		{"max_duration", lim.MaxDuration}} {
		if l.d != 0 {
			limits += fmt.Sprintf("    %s: %s\n", l.name, scaledBy(l.d, k))
		}
	}
	yaml := fmt.Sprintf(`providers:
  p: {base_url: %[1]s/p/v1, key_env: P_KEY, pool: free%[13]s}
  q: {base_url: %[1]s/q/v1, key_env: Q_KEY, pool: credit%[14]s}
targets:
  p/model-a: {context: %[2]d%[10]s}
  %[3]s/model-b: {context: %[4]d}
routes:
  scenario:
    chain: [%[11]s, %[3]s/model-b]
    budget: {deadline: %[5]s, reserve: %[6]s, base_backoff: %[7]s, max_backoff: %[8]s, max_retry_wait: %[12]s}
    buffered: %[9]v
`, up.URL, row.ContextA, pb, row.ContextB, scaledBy(lim.Deadline, k), scaledBy(lim.Reserve, k), scaledBy(500*time.Millisecond, k),
		scaledBy(8*time.Second, k), row.Mode == scenario.Buffered, offersA, chain, scaledBy(policy.Interactive().MaxRetryWait, k),
		dialect(dp), dialect(dq)) + limits
	cfg, err := config.Parse("detour.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	env := map[string]string{"P_KEY": upstreamKey + "p", "Q_KEY": upstreamKey + "q"}
	e := &e2e{sim: srv, ledger: &ledger.Memory{}}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] },
		Ledger: e.ledger, Health: health.New(hs)})
	if err != nil {
		t.Fatal(err)
	}
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			e.chats.Add(1)
		}
		gw.ServeHTTP(w, r)
	}))
	t.Cleanup(e.ts.Close)
	return e
}

// send runs the row's request through the official OpenAI SDK, with its
// default retries: a gateway answer that made it retry would show as
// extra sends.
func (e *e2e) send(ctx context.Context, row scenario.Row) (got struct {
	outcome  scenario.Outcome
	answer   string
	text     string
	usage    bool
	took     time.Duration
	err      error
	provider string
	status   int
	// degraded and dropped are what x-detour-degraded and
	// x-detour-dropped said, a stream's trailers over its headers.
	degraded bool
	dropped  []string
}) {
	c := openai.NewClient(option.WithBaseURL(e.ts.URL+"/v1"), option.WithAPIKey("unused"))
	params := openai.ChatCompletionNewParams{Model: "scenario", MaxTokens: openai.Int(64),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	start := time.Now()
	var resp *http.Response
	who := func() string {
		if resp == nil {
			return ""
		}
		switch m := resp.Header.Get("X-Detour-Model") + resp.Trailer.Get("X-Detour-Model"); m {
		case scenario.ModelA:
			return "a"
		case scenario.ModelB:
			return "b"
		default:
			return m
		}
	}
	if row.Mode == scenario.Complete {
		cc, err := c.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
		got.took, got.err = time.Since(start), err
		if err == nil {
			got.outcome, got.answer, got.text = scenario.Answered, who(), cc.Choices[0].Message.Content
			got.usage = cc.Usage.PromptTokens > 0 && cc.Usage.CompletionTokens > 0
		}
	} else {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := c.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		var b strings.Builder
		n := 0
		for st.Next() {
			ch := st.Current()
			n++
			if len(ch.Choices) > 0 {
				b.WriteString(ch.Choices[0].Delta.Content)
			}
			if ch.Usage.PromptTokens > 0 && ch.Usage.CompletionTokens > 0 {
				got.usage = true
			}
		}
		got.took, got.err, got.text = time.Since(start), st.Err(), b.String()
		st.Close()
		got.answer = who()
		switch {
		case got.err == nil:
			got.outcome = scenario.Answered
		case n > 0:
			got.outcome = scenario.Cut
		}
	}
	if resp != nil {
		h := func(k string) string {
			if v, ok := resp.Trailer[http.CanonicalHeaderKey(k)]; ok && len(v) > 0 {
				return v[0]
			}
			return resp.Header.Get(k)
		}
		got.degraded = h("X-Detour-Degraded") == "true"
		if d := h("X-Detour-Dropped"); d != "" {
			got.dropped = strings.Split(d, ", ")
		}
	}
	if got.outcome == "" {
		var ae *openai.Error
		if errors.As(got.err, &ae) {
			got.status = ae.StatusCode
		}
		switch {
		case errors.As(got.err, &ae) && ae.StatusCode == http.StatusBadRequest:
			got.outcome = scenario.FailedClosed
		case errors.As(got.err, &ae) && ae.StatusCode >= 429:
			got.outcome = scenario.AllFailed
		}
	}
	return got
}

// TestScenario_Gateway runs the fault-scenario suite end to end: the
// official OpenAI SDK, the gateway and the fake providers over loopback
// HTTP, at a tenth of the suite's times.
func TestScenario_Gateway(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about a minute")
	}
	for _, row := range scenario.Rows() {
		for _, pl := range scenario.Placements {
			t.Run(string(pl)+"/"+row.Name, func(t *testing.T) {
				t.Parallel()
				e := newE2E(t, row, pl, health.Settings{}, nil)
				n := max(row.Requests, 1)
				var obs []scenario.Observed
				var lastErr error
				for range n {
					g := e.send(context.Background(), row)
					lastErr = g.err
					obs = append(obs, scenario.Observed{Outcome: g.outcome, Answer: g.answer, Text: g.text, Usage: g.usage,
						Took: g.took, HTTPStatus: g.status, Degraded: g.degraded, Dropped: g.dropped})
				}
				recs := e.ledger.Records()
				o := scenario.Combine(obs)
				scenario.Observe(&o, e.sim.Stats(), recs, pl)
				for _, bad := range row.Expect(pl).Check(o, rowScale(row), slack) {
					t.Error(bad)
				}
				if got := e.chats.Load(); got != int64(n) {
					t.Errorf("the SDK sent %d requests, want %d", got, n)
				}
				if t.Failed() {
					for _, l := range scenario.Lines(recs) {
						t.Log(l)
					}
					t.Logf("error: %v", lastErr)
				}
			})
		}
	}
}

// TestScenario_GatewayResponsesTarget runs the suite with a target of
// the Responses API (config's dialect openai-responses): as the primary A
// (in both placements; in the same provider, B is another of its
// models), and as the fallback B at another provider. Every fault takes
// that dialect's shape (a content filter is a response.incomplete, a
// mid-stream error a response.failed event), and the outcomes are the
// suite's, but for one row whose expectation is chat completions' own
// (Row.ForDialect).
func TestScenario_GatewayResponsesTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about a minute")
	}
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
					t.Parallel()
					e := newE2EIn(t, row, pl, health.Settings{}, nil, run.dp, run.dq)
					n := max(row.Requests, 1)
					var obs []scenario.Observed
					var lastErr error
					for range n {
						g := e.send(context.Background(), row)
						lastErr = g.err
						obs = append(obs, scenario.Observed{Outcome: g.outcome, Answer: g.answer, Text: g.text, Usage: g.usage,
							Took: g.took, HTTPStatus: g.status, Degraded: g.degraded, Dropped: g.dropped})
					}
					recs := e.ledger.Records()
					o := scenario.Combine(obs)
					scenario.Observe(&o, e.sim.Stats(), recs, pl)
					for _, bad := range row.Expect(pl).Check(o, rowScale(row), slack) {
						t.Error(bad)
					}
					if t.Failed() {
						for _, l := range scenario.Lines(recs) {
							t.Log(l)
						}
						t.Logf("error: %v", lastErr)
					}
				})
			}
		}
	}
}

// TestScenario_GatewayOutage: A is down for 6 s with a request every
// 400 ms (the suite's minute, a request every 4 s, at a tenth): every
// request is answered, and A gets at most one send per open window.
func TestScenario_GatewayOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: several seconds")
	}
	o := scenario.DefaultOutage
	for _, pl := range scenario.Placements {
		t.Run(string(pl), func(t *testing.T) {
			t.Parallel()
			var start time.Time
			var down atomic.Bool
			down.Store(true)
			wrap := func(srv *sim.Server) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(strings.NewReader(string(body)))
					if down.Load() && strings.Contains(string(body), `"model":"`+scenario.ModelA+`"`) {
						srv.Enqueue(scenario.ProviderA, scenario.ModelA, sim.Fault{Kind: sim.Unavailable}) //nolint:errcheck // known provider
					}
					srv.ServeHTTP(w, r)
				})
			}
			e := newE2E(t, scenario.Row{Mode: scenario.Complete}, pl,
				health.Settings{OpenFor: scaled(o.OpenFor), FailureThreshold: o.FailureThreshold}, wrap)
			start = time.Now()
			time.AfterFunc(scaled(o.Down), func() { down.Store(false) })
			for i := range o.Requests {
				time.Sleep(time.Until(start.Add(scaled(time.Duration(i) * o.Every))))
				got := e.send(context.Background(), scenario.Row{Mode: scenario.Complete})
				if got.outcome != scenario.Answered {
					t.Fatalf("request %d: %s (%v)", i, got.outcome, got.err)
				}
			}
			var sends []time.Time
			opened := false
			for _, r := range e.ledger.Records() {
				if r.Model != scenario.ModelA {
					continue
				}
				if r.Status == ledger.StatusSkippedParked {
					opened = true
				}
				if r.Action != "skip" && opened && r.Time.Sub(start) < scaled(o.Down) {
					sends = append(sends, r.Time)
				}
			}
			if !opened {
				t.Fatal("A's breaker never opened")
			}
			for i := 1; i < len(sends); i++ {
				if gap := sends[i].Sub(sends[i-1]); gap < scaled(o.OpenFor)-5*time.Millisecond {
					t.Errorf("two sends to A %s apart while open (open_for %s)", gap, scaled(o.OpenFor))
				}
			}
		})
	}
}
