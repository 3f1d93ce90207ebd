package classify

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// maxHint is the longest wait any hint may name; longer values are rejected
// as nonsense rather than overflowing a time.Duration.
const maxHint = 100 * 365 * 24 * time.Hour

// durationUnits are the units ParseDuration knows, in nanoseconds.
var durationUnits = map[string]float64{
	"ns": 1,
	"us": 1e3,
	"µs": 1e3, // U+00B5
	"μs": 1e3, // U+03BC
	"ms": 1e6,
	"s":  1e9,
	"m":  60e9,
	"h":  3600e9,
	"d":  86400e9,
}

// ParseDuration reads a wait or reset duration as providers write it:
//
//   - Go-like unit chains: "6m0s", "1s", "20ms", "7m12.3s", "2h1m",
//     "9m38.016s", "1.984999999s" (OpenAI and Groq x-ratelimit-reset-*,
//     "Please try again in ..." text);
//   - the same with spaces between parts: "6m 11.52s" (Groq, continue#10920);
//   - protobuf durations: "37s", "7.967587226s" (Gemini RetryInfo);
//   - bare seconds, whole or fractional: "45", "33011.382867097855"
//     (Retry-After, Cerebras x-ratelimit-reset-*-day).
//
// Units are ns, us (µs), ms, s, m, h and d, case-insensitive. ok is false for
// an empty or malformed value, a negative one (a sign is never accepted),
// NaN or infinity, and a value beyond 100 years.
func ParseDuration(s string) (d time.Duration, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	// Bare seconds end in a digit; a unit-suffixed value ("6m0s") is not
	// tried as a float (a failed ParseFloat allocates its error: this runs
	// on every answer's rate-limit headers).
	if c := s[len(s)-1]; c >= '0' && c <= '9' || c == '.' {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if s[0] == '-' || s[0] == '+' || strings.ContainsAny(s, "eEinfINFxX_") {
				return 0, false
			}
			return fromNanos(f * 1e9)
		}
	}
	var total float64
	parts := 0
	for i := 0; i < len(s); {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		j := i
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		if j == i {
			return 0, false
		}
		num := s[i:j]
		if strings.Count(num, ".") > 1 || num == "." {
			return 0, false
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, false
		}
		k := j
		for k < len(s) && s[k] != ' ' && (s[k] < '0' || s[k] > '9') && s[k] != '.' {
			k++
		}
		unit, found := durationUnits[strings.ToLower(s[j:k])]
		if !found {
			return 0, false
		}
		total += v * unit
		if total > float64(maxHint) {
			return 0, false
		}
		parts++
		i = k
	}
	if parts == 0 {
		return 0, false
	}
	return fromNanos(total)
}

// fromNanos turns a float count of nanoseconds into a Duration, rejecting
// negatives, NaN, infinities and values beyond maxHint.
func fromNanos(ns float64) (time.Duration, bool) {
	if math.IsNaN(ns) || ns < 0 || ns > float64(maxHint) {
		return 0, false
	}
	return time.Duration(math.Round(ns)), true
}

// fmtDur writes d for a reason: "644ms", "8.64s", "7m12s", "23h59m".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	d = d.Round(time.Minute)
	h, m := int64(d/time.Hour), int64(d%time.Hour/time.Minute)
	if m == 0 {
		return strconv.FormatInt(h, 10) + "h"
	}
	return strconv.FormatInt(h, 10) + "h" + strconv.FormatInt(m, 10) + "m"
}
