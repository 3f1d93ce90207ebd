//go:build !pprof

package cli

// pprofBuilt says whether this binary can serve profiles: built with -tags
// pprof (see pprof.go).
const pprofBuilt = false

// servePprof is never called in a build without the profiler: runServe
// refuses --pprof first.
func servePprof(string, Env) (stop func(), err error) {
	panic("unreachable: built without -tags pprof")
}
