package lazyregexp

import "testing"

// The expression is compiled once, on the first call, and the same
// *regexp.Regexp comes back after it; an invalid one panics at that call,
// not before.
func TestNew_CompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+$`)
	first := re()
	if !first.MatchString("aaa") || first.MatchString("b") || re() != first {
		t.Fatalf("New(`^a+$`) = %v, then %v", first, re())
	}
	bad := New(`(`) // no panic here
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression did not panic at its first use")
		}
	}()
	bad()
}
