package classify

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxReason is the most runes a Failure.Reason has (DESIGN.md rule 3).
const MaxReason = 140

// maxDetail caps Failure.Detail, in runes.
const maxDetail = 4096

// secretPatterns match things that look like API keys, tokens or key-bearing
// URL parameters. Masked keys ("sk-abc***xyz", "****iKey") do not match:
// masking already happened. Compiled on first use, as lazyRegexp.
var secretPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{8,}`),             // Anthropic
		regexp.MustCompile(`\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}`),     // OpenAI, OpenRouter (sk-or-v1-), DeepSeek, ...
		regexp.MustCompile(`\bgsk_[A-Za-z0-9]{16,}`),                  // Groq
		regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{20,}`),               // Google
		regexp.MustCompile(`\bxai-[A-Za-z0-9]{16,}`),                  // xAI
		regexp.MustCompile(`\bhf_[A-Za-z0-9]{16,}`),                   // Hugging Face
		regexp.MustCompile(`\bcsk-[A-Za-z0-9]{16,}`),                  // Cerebras
		regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*`), // Authorization values
		regexp.MustCompile(`(?i)([?&](?:key|api_key|apikey|api-key|access_token|token)=)[^&\s"'#]+`),
	}
})

// Scrub replaces anything in s that looks like an API key or token with
// "[redacted]". Classify applies it to every Reason, Detail and Code, so
// keys never reach the ledger (DESIGN.md rule 12).
func Scrub(s string) string {
	if !mayHoldSecret(s) {
		return s
	}
	for _, re := range secretPatterns() {
		if re.NumSubexp() > 0 {
			s = re.ReplaceAllString(s, "${1}[redacted]")
		} else {
			s = re.ReplaceAllString(s, "[redacted]")
		}
	}
	return s
}

// secretMarkers are literal parts one of which every secretPatterns match
// holds (the bearer and URL parameter patterns are checked apart).
var secretMarkers = []string{"sk-", "gsk_", "AIza", "xai-", "hf_", "csk-"}

// mayHoldSecret reports whether s could match one of secretPatterns: the
// cheap test that spares most reasons the regular expressions.
func mayHoldSecret(s string) bool {
	if strings.IndexByte(s, '=') >= 0 {
		return true
	}
	for _, m := range secretMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	for i := 0; i+len("bearer") <= len(s); i++ {
		if c := s[i]; (c == 'b' || c == 'B') && strings.EqualFold(s[i:i+len("bearer")], "bearer") {
			return true
		}
	}
	return false
}

// OneLine returns s in the form of a Failure.Reason (DESIGN.md rule 3): keys
// scrubbed, folded onto one line, cut to MaxReason runes. Callers that build
// reasons of their own (a skip, a park) use it so every reason obeys the rule.
func OneLine(s string) string { return cut(oneLine(Scrub(s)), MaxReason) }

// oneLine folds s onto one line: valid UTF-8, every run of white space
// (line and paragraph separators included) one space, control characters
// dropped.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, s)
	}
	return s
}

// cut shortens s to at most n runes, ending in "…" when cut.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// reason builds a Failure.Reason: prefix, what and suffix on one line, what
// cut so that the whole fits MaxReason runes; keys scrubbed.
func reason(prefix, what, suffix string) string {
	prefix, what, suffix = oneLine(Scrub(prefix)), oneLine(Scrub(what)), oneLine(Scrub(suffix))
	sep := ""
	if prefix != "" && what != "" {
		sep = " "
	}
	room := MaxReason - utf8.RuneCountInString(prefix) - len(sep) - utf8.RuneCountInString(suffix)
	if room < 8 {
		return cut(prefix+sep+what+suffix, MaxReason)
	}
	return cut(prefix+sep+cut(what, room)+suffix, MaxReason)
}

// detail builds a Failure.Detail from a provider's message or an error's
// text: scrubbed, valid UTF-8, cut to a few KiB. Line breaks are kept.
func detail(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(Scrub(s), "\uFFFD"))
	return cut(s, maxDetail)
}
