package classify_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/detourhq/detour/classify"
)

func TestOneLine_FoldsCutsAndScrubs(t *testing.T) {
	in := "parked until 12:00:00\n(429 tokens per day " + strings.Repeat("x", 200) + " sk-abcdefghijklmnopqrstuvwxyz012345)"
	got := classify.OneLine(in)
	if strings.ContainsAny(got, "\r\n") || utf8.RuneCountInString(got) > classify.MaxReason {
		t.Fatalf("OneLine = %q: want one line of at most %d runes", got, classify.MaxReason)
	}
	if !strings.HasPrefix(got, "parked until 12:00:00 (429") || !strings.HasSuffix(got, "…") {
		t.Fatalf("OneLine = %q: want the folded start, cut with …", got)
	}
	if got := classify.OneLine("key sk-abcdefghijklmnopqrstuvwxyz012345 here"); strings.Contains(got, "abcdefghijklmnop") {
		t.Fatalf("OneLine kept a key: %q", got)
	}
}
