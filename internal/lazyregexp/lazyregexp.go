// Package lazyregexp compiles a package's regular expressions on first
// use instead of at every start of detour: most runs of a command use few
// of them, and compiling them all took about a millisecond and hundreds of
// kilobytes at start-up (GODEBUG=inittrace=1).
package lazyregexp

import (
	"regexp"
	"sync"
)

// New returns a function that returns expr compiled, compiling it on the
// first call; it panics then, as regexp.MustCompile does, if expr is not
// valid. Safe for concurrent use.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
