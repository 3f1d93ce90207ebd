package clock

import (
	"context"
	"testing"
	"time"
)

func TestFake_SleepAdvancesAndRecords(t *testing.T) {
	start := time.Unix(1000, 0)
	c := NewFake(start)
	if !c.Sleep(context.Background(), 30*time.Second) {
		t.Fatal("Sleep on a live context reported cancel")
	}
	c.Advance(time.Second)
	if got := c.Now().Sub(start); got != 31*time.Second {
		t.Fatalf("clock moved %s, want 31s", got)
	}
	if s := c.Sleeps(); len(s) != 1 || s[0] != 30*time.Second {
		t.Fatalf("Sleeps() = %v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c.Sleep(ctx, time.Hour) || len(c.Sleeps()) != 1 {
		t.Fatal("Sleep on a cancelled context must not wait or record")
	}
}

func TestReal_SleepWakesOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Or(nil).Sleep(ctx, time.Hour) }()
	cancel()
	if <-done {
		t.Fatal("Sleep reported a full wait after cancel")
	}
	if !(Real{}).Sleep(context.Background(), time.Millisecond) {
		t.Fatal("a short Sleep should complete")
	}
}
