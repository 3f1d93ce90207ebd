// Command detour routes LLM calls down a chain of providers. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/detourhq/detour/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{})
	stop()
	os.Exit(code)
}
