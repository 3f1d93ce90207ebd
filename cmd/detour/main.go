// Command detour routes LLM calls down a chain of providers. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/detourhq/detour/cli"
)

func main() {
	// Heap profiling samples a stack every 512 KiB allocated and keeps a
	// 1.4 MiB bucket table; only `serve --pprof` reads it, and turns it on.
	runtime.MemProfileRate = 0
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{})
	stop()
	os.Exit(code)
}
