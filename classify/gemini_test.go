package classify

import (
	"testing"
	"time"
	_ "time/tzdata" // the tz database, for the test only

	"github.com/detourhq/detour/llm"
)

// TestNextPacificMidnight_MatchesTZDatabase compares the fixed US rule with
// America/Los_Angeles every 20 minutes over four years, DST switches
// included.
func TestNextPacificMidnight_MatchesTZDatabase(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	want := func(now time.Time) time.Time {
		l := now.In(la)
		return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, la)
	}
	end := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	for now := time.Date(2025, 1, 1, 0, 7, 0, 0, time.UTC); now.Before(end); now = now.Add(20 * time.Minute) {
		if got, w := nextPacificMidnight(now), want(now); !got.Equal(w) {
			t.Fatalf("nextPacificMidnight(%v) = %v, want %v", now, got.In(la), w)
		}
	}
}

func TestNextPacificMidnight(t *testing.T) {
	tests := []struct {
		name      string
		now, want time.Time
	}{
		{"PST evening", time.Date(2026, 1, 15, 7, 59, 59, 0, time.UTC), time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)},
		{"exactly midnight PST", time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC), time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC)},
		{"PDT", time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC), time.Date(2025, 8, 22, 7, 0, 0, 0, time.UTC)},
		// 2026-03-08 is the second Sunday of March: that midnight is still PST,
		// the next one is PDT.
		{"night before DST", time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), time.Date(2026, 3, 8, 8, 0, 0, 0, time.UTC)},
		{"DST day", time.Date(2026, 3, 8, 9, 30, 0, 0, time.UTC), time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC)},
		// 2026-11-01 is the first Sunday of November.
		{"end of DST day", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextPacificMidnight(tt.now); !got.Equal(tt.want) {
				t.Errorf("nextPacificMidnight(%v) = %v, want %v", tt.now, got, tt.want)
			}
		})
	}
}

// TestClassify_GeminiPerDayWallsUntilPacificMidnight: a per-day quota is a
// wall until the daily reset, not for its short RetryInfo (body from
// googleapis/python-genai#2044 as PROVIDERS.md quotes it).
func TestClassify_GeminiPerDayWallsUntilPacificMidnight(t *testing.T) {
	now := time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)
	e := &llm.ProviderError{
		Dialect: "gemini", Status: 429, Type: "RESOURCE_EXHAUSTED",
		Code:    "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
		Message: "You exceeded your current quota, please check your plan and billing details.",
		Body:    []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}`),
		Phase:   llm.PhaseResponse,
	}
	f := Classify(e, now)
	want := time.Date(2025, 8, 22, 7, 0, 0, 0, time.UTC)
	if f.Kind != Wall || !f.Until.Equal(want) || f.RetryAfter != 47*time.Second {
		t.Fatalf("Classify = %s until %v wait %v, want wall until %v wait 47s", f.Kind, f.Until, f.RetryAfter, want)
	}
	if f.Reason != "429 daily quota exhausted; resets in 18h19m" {
		t.Errorf("Reason = %q", f.Reason)
	}
}

// TestClassify_DailyResetLeavesOthersAlone: the daily reset touches
// neither other walls nor transient failures.
func TestClassify_DailyResetLeavesOthersAlone(t *testing.T) {
	now := time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)
	perMinute := &llm.ProviderError{Status: 429, Type: "RESOURCE_EXHAUSTED",
		Body: []byte(`{"error":{"details":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},{"retryDelay":"37s"}]}}`)}
	if f := Classify(perMinute, now); f.Kind != Transient || !f.Until.Equal(now.Add(37*time.Second)) {
		t.Errorf("per minute: %s until %v", f.Kind, f.Until)
	}
	badKey := &llm.ProviderError{Status: 400, Type: "INVALID_ARGUMENT", Code: "API_KEY_INVALID", Message: "API key not valid."}
	if f := Classify(badKey, now); f.Kind != Wall || !f.Until.IsZero() {
		t.Errorf("bad key: %s until %v", f.Kind, f.Until)
	}
}
