// Package scantest holds a decoding fast path to encoding/json, for the
// differential fuzz tests of the jsonscan fast paths.
//
//	f.Fuzz(func(t *testing.T, data string) {
//		scantest.Check(t, data, parseChunkFast)
//	})
package scantest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check fails t when fast accepted data (filled a zero T and reported
// true) but json.Unmarshal of the same data into a zero T fails or fills
// it differently. A fast path that declines (false) passes: encoding/json
// then decodes the input anyway.
func Check[T any](t testing.TB, data string, fast func(data string, v *T) bool) {
	t.Helper()
	var got T
	if !fast(data, &got) {
		return
	}
	var want T
	if err := json.Unmarshal([]byte(data), &want); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json: %v", data, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("fast path of %q differs from encoding/json (-json +fast):\n%s", data, diff)
	}
}
