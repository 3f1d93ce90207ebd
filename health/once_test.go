package health

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestOnce_ClaimReplayRefuse(t *testing.T) {
	recs := &MemoryRecords{}
	o := Once{Records: recs, Poll: time.Millisecond}
	ctx := context.Background()
	c, kept, err := o.Begin(ctx, "k", "req-a", true)
	if err != nil || c == nil || kept != nil {
		t.Fatalf("first Begin = %v, %s, %v; want a claim", c, kept, err)
	}
	if _, _, err := o.Begin(ctx, "k", "req-a", false); !errors.Is(err, ErrOnceInFlight) {
		t.Fatalf("a repeat that will not wait, while in flight: %v, want ErrOnceInFlight", err)
	}
	if _, _, err := o.Begin(ctx, "k", "req-b", true); !errors.Is(err, ErrOnceReused) {
		t.Fatalf("another request under the key: %v, want ErrOnceReused", err)
	}
	done := make(chan json.RawMessage)
	go func() { // a repeat waits for the first
		_, v, _ := o.Begin(ctx, "k", "req-a", true)
		done <- v
	}()
	time.Sleep(5 * time.Millisecond)
	if err := c.Finish(map[string]int{"answer": 42}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if v := <-done; string(v) != `{"answer":42}` {
		t.Fatalf("the waiting repeat got %s, want the first one's value", v)
	}
	if c, v, _ := o.Begin(ctx, "k", "req-a", false); c != nil || string(v) != `{"answer":42}` {
		t.Fatalf("a later repeat: claim %v, value %s", c, v)
	}
}

func TestOnce_AbandonLetsTheNextServeAfresh(t *testing.T) {
	recs := &MemoryRecords{}
	o := Once{Records: recs}
	c, _, _ := o.Begin(context.Background(), "k", "r", true)
	c.Abandon()
	if c2, _, err := o.Begin(context.Background(), "k", "r", true); err != nil || c2 == nil {
		t.Fatalf("after Abandon: %v, %v; want a new claim", c2, err)
	}
	// A record nobody can read is dropped and the key claimed afresh.
	_ = recs.Put("bad", []byte("{not json"), time.Hour)
	if c3, _, err := o.Begin(context.Background(), "bad", "r", true); err != nil || c3 == nil {
		t.Fatalf("an unreadable record: %v, %v; want a claim", c3, err)
	}
}

func TestOnce_WaitEndsWithTheContext(t *testing.T) {
	o := Once{Records: &MemoryRecords{}, Poll: time.Millisecond}
	o.Begin(context.Background(), "k", "r", true) //nolint:errcheck // the first, never finished
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, _, err := o.Begin(ctx, "k", "r", true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the context: %v, want its error", err)
	}
}
