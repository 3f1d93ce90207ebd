package classify

import "testing"

// FuzzScrubPrefilter holds the cheap test in front of Scrub's regular
// expressions to them: whatever one of them matches, mayHoldSecret lets
// through.
func FuzzScrubPrefilter(f *testing.F) {
	for _, s := range []string{"sk-abcdefghijklmnop1234", "Bearer abcdefgh123", "BEARER\tx.y~z+/-abc", "https://x/?key=AIzaSyA",
		"gsk_abcdefghijklmnopqr", "no secret here", "xai-ABCDEFGHIJKLMNOP", "hf_abcdefghijklmnop", "csk-abcdefghijklmnop", "bEaReR 12345678"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if mayHoldSecret(s) {
			return
		}
		for _, re := range secretPatterns() {
			if re.MatchString(s) {
				t.Fatalf("%q matches %s but mayHoldSecret says no", s, re)
			}
		}
	})
}
