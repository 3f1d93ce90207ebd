package ledgergen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/detourhq/detour/ledger"
)

// Write writes exactly Lines ledger lines, OneOff of them each with a
// target of its own, the same bytes for the same Options.
func TestWrite_LinesTargetsAndRepeatable(t *testing.T) {
	o := Options{Lines: 5000, OneOff: 1200, Seed: 9}
	var a, b bytes.Buffer
	n, err := Write(&a, o)
	if err != nil || n != int64(a.Len()) {
		t.Fatalf("wrote %d, %v; buffer %d", n, err, a.Len())
	}
	Write(&b, o)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same Options gave other bytes")
	}
	lines := 0
	seen := map[string]int{}
	sc := bufio.NewScanner(&a)
	for sc.Scan() {
		var r ledger.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		lines++
		seen[r.Provider+"/"+r.Model]++
	}
	once := 0
	for _, n := range seen {
		if n == 1 {
			once++
		}
	}
	if lines != o.Lines || once != o.OneOff || len(seen) > o.OneOff+7 {
		t.Errorf("%d lines, %d targets seen once, %d in all; want %d, %d, and a few more", lines, once, len(seen), o.Lines, o.OneOff)
	}
}
