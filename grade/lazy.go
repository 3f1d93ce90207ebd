package grade

import (
	"regexp"
	"sync"
)

// lazyRegexp returns expr compiled on first use: only eval grades, and
// every other command of detour would compile the package's patterns at
// start-up for nothing.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
