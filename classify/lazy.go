package classify

import (
	"regexp"
	"sync"
)

// lazyRegexp returns expr compiled on first use, not at every start of
// detour: most runs classify no failure, and compiling the package's
// patterns took about a millisecond and 300 KB at start-up.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
