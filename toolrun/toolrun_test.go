package toolrun_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/toolrun"
)

var charge = llm.ToolCall{ID: "call_1", Name: "charge_card", Arguments: `{"amount":20}`}

// A call that succeeded is never run again: its kept result comes back.
func TestRunAll_SucceededRunsOnce(t *testing.T) {
	var runs atomic.Int32
	r := &toolrun.Runner{Run: func(context.Context, llm.ToolCall) (string, error) {
		runs.Add(1)
		return "charged", nil
	}}
	for range 3 {
		msgs, err := r.RunAll(context.Background(), "order-1", []llm.ToolCall{charge})
		if err != nil || len(msgs) != 1 || msgs[0].Content != "charged" || msgs[0].ToolCallID != "call_1" || msgs[0].Role != llm.RoleTool {
			t.Fatalf("RunAll = %+v, %v", msgs, err)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want once", runs.Load())
	}
}

// A tool started, then a timeout: the call is not run again, and the
// reconcile hook (never a model) settles it.
func TestRunAll_TimeoutGoesToReconcile(t *testing.T) {
	var runs, reconciles atomic.Int32
	r := &toolrun.Runner{
		Run: func(ctx context.Context, _ llm.ToolCall) (string, error) {
			runs.Add(1)
			<-ctx.Done() // the card network never answers
			return "", ctx.Err()
		},
		Reconcile: func(_ context.Context, op string, c llm.ToolCall) (string, error) {
			reconciles.Add(1)
			return fmt.Sprintf("found charge for %s/%s", op, c.ID), nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	msgs, err := r.RunAll(ctx, "order-2", []llm.ToolCall{charge})
	if err != nil || msgs[0].Content != "found charge for order-2/call_1" {
		t.Fatalf("RunAll = %+v, %v", msgs, err)
	}
	if _, err := r.RunAll(context.Background(), "order-2", []llm.ToolCall{charge}); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 || reconciles.Load() != 1 {
		t.Fatalf("runs %d, reconciles %d: want the tool run once and reconciled once", runs.Load(), reconciles.Load())
	}
}

// With no reconcile hook an unknown outcome stops the operation, every
// time, and the tool is not run again.
func TestRunAll_UnknownWithoutReconcileStops(t *testing.T) {
	var runs atomic.Int32
	r := &toolrun.Runner{Run: func(context.Context, llm.ToolCall) (string, error) {
		runs.Add(1)
		return "", errors.New("connection reset after the request was sent")
	}}
	for range 2 {
		if _, err := r.RunAll(context.Background(), "order-3", []llm.ToolCall{charge}); !errors.Is(err, toolrun.ErrUnknownOutcome) {
			t.Fatalf("err %v, want ErrUnknownOutcome", err)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want once", runs.Load())
	}
}

// A call the tool says it did not run may run again; a call a crashed
// process left started never is; a journal that cannot answer runs
// nothing.
func TestRunAll_NotRunStartedAndBrokenJournal(t *testing.T) {
	var runs atomic.Int32
	fail := true
	recs := &health.MemoryRecords{}
	j := &toolrun.RecordsJournal{Records: recs}
	r := &toolrun.Runner{Journal: j, Run: func(context.Context, llm.ToolCall) (string, error) {
		runs.Add(1)
		if fail {
			fail = false
			return "", fmt.Errorf("card declined before any charge: %w", toolrun.ErrNotRun)
		}
		return "charged", nil
	}}
	if _, err := r.RunAll(context.Background(), "order-4", []llm.ToolCall{charge}); !errors.Is(err, toolrun.ErrNotRun) {
		t.Fatalf("first: %v", err)
	}
	if msgs, err := r.RunAll(context.Background(), "order-4", []llm.ToolCall{charge}); err != nil || msgs[0].Content != "charged" {
		t.Fatalf("after a call that did not run: %+v %v", msgs, err)
	}
	j.Set("order-5", "call_1", toolrun.Entry{State: toolrun.Started}) //nolint:errcheck // memory
	if _, err := r.RunAll(context.Background(), "order-5", []llm.ToolCall{charge}); !errors.Is(err, toolrun.ErrUnknownOutcome) {
		t.Fatalf("a call left started: %v", err)
	}
	if runs.Load() != 2 {
		t.Fatalf("runs %d, want 2", runs.Load())
	}
	broken := &toolrun.Runner{Journal: brokenJournal{}, Run: func(context.Context, llm.ToolCall) (string, error) {
		t.Fatal("ran with a journal that cannot record")
		return "", nil
	}}
	if _, err := broken.RunAll(context.Background(), "order-6", []llm.ToolCall{charge}); err == nil {
		t.Fatal("a broken journal ran the tool")
	}
}

type brokenJournal struct{}

func (brokenJournal) Get(string, string) (toolrun.Entry, bool, error) {
	return toolrun.Entry{}, false, nil
}
func (brokenJournal) Set(string, string, toolrun.Entry) error { return errors.New("disk full") }
