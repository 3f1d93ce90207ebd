package classify

import (
	"strings"
	"time"

	"github.com/detourhq/detour/internal/lazyregexp"
	"github.com/detourhq/detour/llm"
)

// Google's daily quotas. "Requests per day (RPD) quotas reset at midnight
// Pacific time" (ai.google.dev/gemini-api/docs/rate-limits), so a Gemini
// 429 that names a per-day quota is a wall until then, whatever short
// RetryInfo or "Please retry in 7.97s" it carries (PROVIDERS.md Gemini;
// §3.2; sample gemini-429-limit-zero).

// googleLimitZero matches a quota line of a Gemini message that grants
// nothing: "Quota exceeded for metric:
// generativelanguage.googleapis.com/..., limit: 0, model: ..." (sample
// gemini-429-limit-zero; continuedev/continue#10066).
var googleLimitZero = lazyregexp.New(`generativelanguage\.googleapis\.com/\S+, limit: 0\b`)

// dailyReset returns the end of a wall that is a Google daily quota: a
// QuotaFailure quotaId with "PerDay" (GenerateRequestsPerDayPerProjectPerModel-FreeTier),
// or a free-tier metric with "limit: 0" (no quota at all for this model
// today; the next day's is the first chance). The end is the next
// midnight in US Pacific time after now, or until when that is later.
// ok is false for any other failure.
func dailyReset(kind Kind, e *llm.ProviderError, fx facts, until, now time.Time) (time.Time, bool) {
	if kind != Wall {
		return time.Time{}, false
	}
	daily := googleLimitZero().MatchString(strings.ToLower(e.Message))
	for _, id := range fx.quotaIDs {
		if strings.Contains(strings.ToLower(id), "perday") {
			daily = true
		}
	}
	if !daily {
		return time.Time{}, false
	}
	t := nextPacificMidnight(now)
	if until.After(t) {
		t = until
	}
	return t, true
}

// nextPacificMidnight returns the first midnight of US Pacific time
// (America/Los_Angeles) after now.
//
// It applies the US rule in force since 2007 itself (PDT, UTC−7, from the
// second Sunday of March at 02:00 local time to the first Sunday of
// November at 02:00 local time; PST, UTC−8, otherwise) rather than
// loading the zone: classify stays pure and gives the same answer on a
// machine without tzdata (time.LoadLocation fails there) and without
// embedding the 450 KB time/tzdata in every binary. A future change of
// the US rule would need this function changed; the test compares it with
// the tz database.
func nextPacificMidnight(now time.Time) time.Time {
	off := pacificOffset(now)
	y, m, d := now.UTC().Add(off).Date()
	// Midnight of the next local day, as if the offset were UTC's.
	wall := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	// The switches happen at 02:00, never at midnight: the offset in force
	// at that midnight is the one at its UTC instant under either offset.
	return wall.Add(-pacificOffset(wall.Add(-off)))
}

// pacificOffset is US Pacific time's offset from UTC at t.
func pacificOffset(t time.Time) time.Duration {
	t = t.UTC()
	y := t.Year()
	// 02:00 PST is 10:00 UTC; 02:00 PDT is 09:00 UTC.
	start := time.Date(y, time.March, nthSunday(y, time.March, 2), 10, 0, 0, 0, time.UTC)
	end := time.Date(y, time.November, nthSunday(y, time.November, 1), 9, 0, 0, 0, time.UTC)
	if !t.Before(start) && t.Before(end) {
		return -7 * time.Hour
	}
	return -8 * time.Hour
}

// nthSunday is the day of the month of the n-th Sunday of month m of year y.
func nthSunday(y int, m time.Month, n int) int {
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Weekday()
	return 1 + (7-int(first))%7 + 7*(n-1)
}
