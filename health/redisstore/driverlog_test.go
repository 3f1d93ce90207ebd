package redisstore

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The client library's failed dials go to the logger LogDriverTo names,
// at debug, not to stderr.
func TestLogDriverTo(t *testing.T) {
	var buf logBuffer
	LogDriverTo(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { LogDriverTo(slog.New(slog.DiscardHandler)) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial fails
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("PING to a closed port answered")
	}
	if got := buf.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "redis client:") {
		t.Fatalf("the library's log went elsewhere; the logger got %q", got)
	}
}
