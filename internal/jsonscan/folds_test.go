package jsonscan

import (
	"strings"
	"testing"
)

// foldNames are field names of the decoders that call Folds.
var foldNames = []string{"id", "model", "stream", "messages", "choices", "delta", "content", "tool_calls", "finish_reason", "usage", "K"}

// foldsRef is Folds without its length check: strings.EqualFold on each.
func foldsRef(key string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// A key that folds to a name through a rune of another length (ſ to s,
// the Kelvin sign to K) still matches: encoding/json would fill the field.
func TestFolds_MatchesAcrossRuneLengths(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"ſtream", true},   // U+017F LATIN SMALL LETTER LONG S, 2 bytes
		{"\u212a", true},   // KELVIN SIGN folds to K, 3 bytes
		{"STREAM", true},   // ASCII, other case
		{"streams", false}, // ASCII, longer
		{"ſtreams", false}, // non-ASCII, no name
		{"", false},        // empty
		{"FINISH_REASON", true},
	} {
		if got := Folds(tc.key, foldNames...); got != tc.want || got != foldsRef(tc.key, foldNames...) {
			t.Errorf("Folds(%q) = %v, want %v (strings.EqualFold says %v)", tc.key, got, tc.want, foldsRef(tc.key, foldNames...))
		}
	}
}

func FuzzFolds(f *testing.F) {
	for _, s := range []string{"ſtream", "\u212a", "Model", "tool_Calls", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := Folds(key, foldNames...), foldsRef(key, foldNames...); got != want {
			t.Fatalf("Folds(%q) = %v, strings.EqualFold on each name says %v", key, got, want)
		}
	})
}
