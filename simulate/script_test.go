package simulate

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// statuses sends n plain requests for model and returns their statuses.
func (r *rig) statuses(t *testing.T, provider, model string, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		resp, _ := r.mustPost(t, provider, chatBody(model, false))
		out[i] = resp.StatusCode
	}
	return out
}

// kinds returns the kinds served, in order, to provider and model.
func kindsServed(s Stats, provider, model string) []Kind {
	var out []Kind
	for _, r := range s.Records {
		if r.Provider == provider && (model == "" || r.Model == model) {
			out = append(out, r.Kind)
		}
	}
	return out
}

func TestScript_ConsumedInOrderThenOK(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(RateLimit, Unavailable, OK, ServerError, NoCredits)})
		got := r.statuses(t, "p", "m", 7)
		if diff := cmp.Diff([]int{429, 503, 200, 500, 402, 200, 200}, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		want := []Kind{RateLimit, Unavailable, OK, ServerError, NoCredits, OK, OK}
		if diff := cmp.Diff(want, kindsServed(r.srv.Stats(), "p", "m")); diff != "" {
			t.Errorf("kinds (-want +got):\n%s", diff)
		}
	})
}

func TestScript_ModelScriptsComeFirstAndStayPerModel(t *testing.T) {
	r := newRig(t, "memory", Provider{Name: "p",
		Script:       Faults(ServerError),
		ModelScripts: map[string][]Fault{"a": Faults(RateLimit, RateLimit), "b": Faults(NoCredits)},
	})
	got := []int{}
	for _, m := range []string{"a", "b", "b", "a", "a", "b"} {
		resp, _ := r.mustPost(t, "p", chatBody(m, false))
		got = append(got, resp.StatusCode)
	}
	// a:429, b:402, b: provider script 500, a:429, a:200, b:200
	if diff := cmp.Diff([]int{429, 402, 500, 429, 200, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestScript_Enqueue(t *testing.T) {
	r := newRig(t, "memory", Provider{Name: "p"})
	if err := r.srv.Enqueue("p", "", Faults(Unavailable)...); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Enqueue("p", "x", Faults(RateLimit)...); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Enqueue("nobody", "", Faults(OK)...); err == nil {
		t.Error("Enqueue to an unknown provider succeeded")
	}
	if err := r.srv.Enqueue("p", "", Fault{Kind: "explode"}); err == nil {
		t.Error("Enqueue of an unknown kind succeeded")
	}
	got := append(r.statuses(t, "p", "x", 2), r.statuses(t, "p", "y", 2)...)
	if diff := cmp.Diff([]int{429, 503, 200, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestProfile_SameSeedSameFaults(t *testing.T) {
	profile := func(seed uint64) Provider {
		return Provider{Name: "p", Profile: &Profile{Seed: seed, Rules: []Rule{{Chances: []Chance{
			{Fault{Kind: RateLimit, RetryAfter: time.Second}, 0.3},
			{Fault{Kind: Unavailable}, 0.2},
		}}}}}
	}
	run := func(seed uint64, noise bool) []Kind {
		r := newRig(t, "memory", profile(seed))
		for i := 0; i < 60; i++ {
			r.mustPost(t, "p", chatBody("m", false))
			if noise && i%3 == 0 {
				r.mustPost(t, "p", chatBody("other", false)) // traffic to another target
			}
		}
		return kindsServed(r.srv.Stats(), "p", "m")
	}
	a, b := run(7, false), run(7, true)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different faults (-quiet +noisy):\n%s", diff)
	}
	if c := run(8, false); cmp.Equal(a, c) {
		t.Errorf("seeds 7 and 8 drew the same %d faults", len(a))
	}
	counts := map[Kind]int{}
	for _, k := range a {
		counts[k]++
	}
	if counts[RateLimit] == 0 || counts[Unavailable] == 0 || counts[OK] == 0 {
		t.Errorf("60 draws gave %v", counts)
	}
}

func TestProfile_RulesMatchModels(t *testing.T) {
	expensive := func(m string) bool { return strings.Contains(m, "claude") || strings.Contains(m, "gpt-5") }
	r := newRig(t, "memory", Provider{Name: "router", Style: StyleOpenRouter, Profile: &Profile{Rules: []Rule{
		{Models: []string{"pinned/broken"}, Chances: Chances(map[Kind]float64{Unavailable: 1})},
		{Match: expensive, Chances: []Chance{{Fault{Kind: NoCredits}, 1}}},
	}}})
	for _, c := range []struct {
		model  string
		status int
	}{
		{"anthropic/claude-sonnet-4", 402}, {"openai/gpt-5", 402}, {"pinned/broken", 503}, {"meta-llama/llama-3.3-70b-instruct", 200},
	} {
		if got := r.statuses(t, "router", c.model, 3); !cmp.Equal(got, []int{c.status, c.status, c.status}) {
			t.Errorf("%s: %v, want %d each time", c.model, got, c.status)
		}
	}
}

func TestProfile_ChancesAreSortedAndAlwaysAlways(t *testing.T) {
	got := Chances(map[Kind]float64{Unavailable: 0.1, RateLimit: 0.42, DailyQuota: 0.05})
	want := []Chance{{Fault{Kind: DailyQuota}, 0.05}, {Fault{Kind: RateLimit}, 0.42}, {Fault{Kind: Unavailable}, 0.1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Chances (-want +got):\n%s", diff)
	}
	r := newRig(t, "memory", Provider{Name: "p", Profile: Always(Fault{Kind: InsufficientQuota})})
	if got := r.statuses(t, "p", "m", 5); !cmp.Equal(got, []int{429, 429, 429, 429, 429}) {
		t.Errorf("Always: %v", got)
	}
}

func TestNewServer_RejectsBadProviders(t *testing.T) {
	cases := []struct {
		name      string
		providers []Provider
		has       string
	}{
		{"empty name", []Provider{{}}, "invalid provider name"},
		{"slash", []Provider{{Name: "a/b"}}, "invalid provider name"},
		{"duplicate", []Provider{{Name: "a"}, {Name: "a"}}, "listed twice"},
		{"style", []Provider{{Name: "a", Style: "anthropic"}}, "unknown style"},
		{"dialect", []Provider{{Name: "a", Dialect: "cohere"}}, "unknown dialect"},
		{"style of another dialect", []Provider{{Name: "a", Dialect: DialectGemini, Style: StyleGemini}}, "applies to the openai dialect only"},
		{"script kind", []Provider{{Name: "a", Script: []Fault{{Kind: "boom"}}}}, "unknown fault kind"},
		{"model script kind", []Provider{{Name: "a", ModelScripts: map[string][]Fault{"m": {{Kind: "boom"}}}}}, "unknown fault kind"},
		{"probability", []Provider{{Name: "a", Profile: &Profile{Rules: []Rule{{Chances: []Chance{{P: 1.5}}}}}}}, "outside [0,1]"},
		{"sum", []Provider{{Name: "a", Profile: &Profile{Rules: []Rule{{Chances: []Chance{{Fault{Kind: RateLimit}, 0.6}, {Fault{Kind: Reset}, 0.6}}}}}}}, "more than 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewServer(c.providers...)
			if err == nil || !strings.Contains(err.Error(), c.has) {
				t.Errorf("error %v, want one with %q", err, c.has)
			}
		})
	}
}

func TestStats_CountsEveryTargetAndNothingForAParkedOne(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way,
			Provider{Name: "a", Script: Faults(RateLimit, RateLimit)},
			Provider{Name: "b"},
			Provider{Name: "parked"},
		)
		r.statuses(t, "a", "m1", 3)
		r.statuses(t, "a", "m2", 1)
		r.mustPost(t, "b", chatBody("m1", true))
		st := r.srv.Stats()
		checks := []struct {
			name      string
			got, want int
		}{
			{"total", st.Total(), 5},
			{"a", st.Requests("a", ""), 4},
			{"a/m1", st.Requests("a", "m1"), 3},
			{"a/m1 429", st.Served("a", "m1", RateLimit), 2},
			{"a ok", st.Served("a", "", OK), 2},
			{"m1 anywhere", st.Requests("", "m1"), 4},
			{"b", st.Requests("b", ""), 1},
			{"parked", st.Requests("parked", ""), 0},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
			}
		}
		if rec := st.Records[4]; rec.Provider != "b" || !rec.Stream || !rec.At.Equal(epoch) {
			t.Errorf("last record %+v", rec)
		}
		r.srv.ClearStats()
		if n := r.srv.Stats().Total(); n != 0 {
			t.Errorf("after ClearStats: %d", n)
		}
	})
}

func TestServer_ConcurrentRequests(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Profile: &Profile{Seed: 3, Rules: []Rule{{Chances: Chances(map[Kind]float64{RateLimit: 0.3, StreamCut: 0.1, Reset: 0.1})}}}})
		var wg sync.WaitGroup
		for i := 0; i < 40; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				resp, err := r.post(t, t.Context(), "p", chatBody(fmt.Sprintf("m%d", i%4), i%2 == 0))
				if err == nil {
					readEvents(resp.Body)
					resp.Body.Close()
				}
			}(i)
		}
		wg.Wait()
		if n := r.srv.Stats().Total(); n != 40 {
			t.Errorf("total %d, want 40", n)
		}
	})
}

func TestServer_BaseURLPerDialect(t *testing.T) {
	s, err := NewServer(Provider{Name: "groq"}, Provider{Name: "claude", Dialect: DialectAnthropic},
		Provider{Name: "gem", Dialect: DialectGemini}, Provider{Name: "oai", Dialect: DialectOpenAI})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	suffixes := map[string]string{"groq": "/groq/v1", "claude": "/claude", "gem": "/gem/v1beta", "oai": "/oai/v1", "nobody": "/nobody/v1"}
	for name, suffix := range suffixes {
		if got := s.BaseURL(name); got != MemoryURL+suffix {
			t.Errorf("before Listen: BaseURL(%s) = %s", name, got)
		}
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	for name, suffix := range suffixes {
		if got := s.BaseURL(name); !strings.HasPrefix(got, "http://127.0.0.1:") || got != s.URL+suffix {
			t.Errorf("after Listen: BaseURL(%s) = %s", name, got)
		}
	}
	dialects := map[string]Dialect{"groq": DialectOpenAI, "claude": DialectAnthropic, "gem": DialectGemini, "oai": DialectOpenAI, "nobody": ""}
	for name, want := range dialects {
		if got := s.Dialect(name); got != want {
			t.Errorf("Dialect(%s) = %q, want %q", name, got, want)
		}
	}
	if err := s.Listen(); err == nil {
		t.Error("second Listen succeeded")
	}
}

func TestFault_String(t *testing.T) {
	for f, want := range map[string]string{
		Fault{}.String(): "ok",
		Fault{Kind: RateLimit, RetryAfter: 2e9}.String():                           "rate_limit(retry_after=2s)",
		Fault{Kind: StreamCut, Chunks: 3}.String():                                 "stream_cut(chunks=3)",
		Fault{Pieces: 70, Gap: time.Second}.String():                               "ok(gap=1s,pieces=70)",
		Fault{Kind: StreamStall, Chunks: 2, Gap: 1500 * time.Millisecond}.String(): "stream_stall(chunks=2,gap=1.5s)",
		Fault{Kind: LateFirstToken, Delay: 20 * time.Second}.String():              "late_first_token(delay=20s)",
		Fault{Kind: NoDone}.String():                                               "no_done",
	} {
		if f != want {
			t.Errorf("got %q, want %q", f, want)
		}
	}
}
