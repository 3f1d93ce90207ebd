//go:build pprof

package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// This file is built with -tags pprof only: the profiler's packages add
// about half a megabyte of code to the binary, which is resident in every
// detour serve, and turn on the runtime's heap sampling.

// pprofBuilt says whether this binary can serve profiles.
const pprofBuilt = true

// servePprof serves net/http/pprof's handlers on addr, a listener of its
// own; stop closes it. It turns heap profiling on at Go's default rate
// (cmd/detour turns it off): the heap profile covers what was allocated
// from then on.
func servePprof(addr string, env Env) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: listen: %w", err)
	}
	runtime.MemProfileRate = 512 * 1024
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed at stop
	fmt.Fprintf(env.Stderr, "detour serve: profiles on http://%s/debug/pprof/\n", ln.Addr())
	return func() { srv.Close() }, nil
}
