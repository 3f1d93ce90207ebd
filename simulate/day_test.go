package simulate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDayProfile_ReproducesTheMeasuredDay sends 400 requests to each target
// of the day, each in its provider's own dialect, and checks the failure
// rates of DESIGN.md and the shape of each provider's failures.
func TestDayProfile_ReproducesTheMeasuredDay(t *testing.T) {
	const n = 400
	r := newRig(t, "memory", DayProfile(42)...)
	cases := []struct {
		provider, model string
		rate            float64 // share of failed requests
		statuses        []int   // the failure statuses allowed
		has             string  // in every failure body
	}{
		{GroqFree, GroqModel, 0.39, []int{429}, "on tokens per day (TPD)"},
		{GeminiFree, GeminiModel, 0.86, []int{429, 503}, `"status": "`},
		{OpenRouter, OpenRouterExpensive, 1, []int{402}, "This request requires more credits, or fewer max_tokens."},
		{OpenRouter, OpenRouterCheap, 0, nil, ""},
		{MistralPayg, MistralModel, 0.42, []int{429}, `"type":"rate_limited"`},
		{DeepSeek, DeepSeekModel, 0, nil, ""},
		{Together, TogetherModel, 0, nil, ""},
		{Anthropic, AnthropicModel, 0.05, []int{529}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}`},
	}
	for _, c := range cases {
		failed := 0
		seen := map[int]int{}
		quotas := map[string]int{}
		for i := 0; i < n; i++ {
			resp, body := r.mustAsk(t, c.provider, c.model, i%2 == 0)
			if resp.StatusCode == 200 {
				continue
			}
			failed++
			seen[resp.StatusCode]++
			if !strings.Contains(string(body), c.has) {
				t.Errorf("%s/%s: failure body lacks %q: %s", c.provider, c.model, c.has, body)
			}
			switch c.provider {
			case MistralPayg:
				if ra := resp.Header.Get("Retry-After"); ra != "1" && ra != "2" {
					t.Errorf("mistral 429 Retry-After %q, want 1 or 2", ra)
				}
			case GeminiFree:
				for _, q := range []string{quotaPerMinute, quotaPerDay} {
					if strings.Contains(string(body), q) {
						quotas[q]++
					}
				}
				if strings.Contains(string(body), quotaPerMinute) && !strings.Contains(string(body), `"retryDelay": "2s"`) {
					t.Errorf("gemini per-minute 429 without a 2s RetryInfo: %s", body)
				}
			}
		}
		if c.provider == GeminiFree && (quotas[quotaPerMinute] == 0 || quotas[quotaPerDay] == 0 || quotas[quotaPerMinute]+quotas[quotaPerDay] != seen[429]) {
			t.Errorf("gemini 429s by quota %v of %d, want per-minute and per-day ones", quotas, seen[429])
		}
		if got := float64(failed) / n; math.Abs(got-c.rate) > 0.07 {
			t.Errorf("%s/%s: failure rate %.2f, want about %.2f", c.provider, c.model, got, c.rate)
		}
		for st := range seen {
			if !contains(c.statuses, st) {
				t.Errorf("%s/%s: status %d not in %v", c.provider, c.model, st, c.statuses)
			}
		}
		if len(c.statuses) > 1 && len(seen) < len(c.statuses) {
			t.Errorf("%s/%s: only statuses %v seen, want a mix of %v", c.provider, c.model, seen, c.statuses)
		}
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestDayProfile_SameSeedSameDay(t *testing.T) {
	day := func(seed uint64) []Kind {
		r := newRig(t, "memory", DayProfile(seed)...)
		for i := 0; i < 50; i++ {
			r.mustAsk(t, GroqFree, GroqModel, false)
			r.mustAsk(t, GeminiFree, GeminiModel, false)
		}
		var out []Kind
		for _, rec := range r.srv.Stats().Records {
			out = append(out, rec.Kind)
		}
		return out
	}
	if diff := cmp.Diff(day(1), day(1)); diff != "" {
		t.Errorf("seed 1 twice (-first +second):\n%s", diff)
	}
	if cmp.Equal(day(1), day(2)) {
		t.Error("seeds 1 and 2 gave the same day")
	}
}

func TestDayProfile_FailuresAreFastAnswersSlower(t *testing.T) {
	r := newRig(t, "memory", DayProfile(42)...)
	r.mustPost(t, OpenRouter, chatBody(OpenRouterExpensive, false))
	r.mustPost(t, DeepSeek, chatBody(DeepSeekModel, false))
	got := r.clock.Sleeps()
	// 402 after 120 ms; the answer after 600 ms + 5 chunks x 30 ms.
	if diff := cmp.Diff([]time.Duration{120 * time.Millisecond, 750 * time.Millisecond}, got); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
}

// TestDayProfile_SpeaksEveryDialect checks that the day holds a target of
// each dialect, every provider's Dialect set for a client to pick, and that
// each answers a request in its own format at its own base URL.
func TestDayProfile_SpeaksEveryDialect(t *testing.T) {
	day := DayProfile(7)
	want := map[string]Dialect{GroqFree: DialectOpenAI, GeminiFree: DialectGemini, OpenRouter: DialectOpenAI,
		MistralPayg: DialectOpenAI, DeepSeek: DialectOpenAI, Together: DialectOpenAI, Anthropic: DialectAnthropic}
	got := map[string]Dialect{}
	for _, p := range day {
		got[p.Name] = p.Dialect
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dialects (-want +got):\n%s", diff)
	}
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "o"}, Provider{Name: "a", Dialect: DialectAnthropic}, Provider{Name: "g", Dialect: DialectGemini})
		for _, c := range []struct {
			name, has string
		}{
			{"o", `"content": "Hello from o/m."`},
			{"a", `"text":"Hello from a/m."`},
			{"g", `"text": "Hello from g/m."`},
		} {
			resp, body := r.mustAsk(t, c.name, "m", false)
			if resp.StatusCode != 200 || !strings.Contains(string(body), c.has) {
				t.Errorf("%s (%s at %s): %d %s", c.name, r.srv.Dialect(c.name), r.srv.BaseURL(c.name), resp.StatusCode, body)
			}
		}
	})
}
