package detour_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/detour"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// feed returns a channel holding items, closed after them.
func feed(items ...detour.Item) <-chan detour.Item {
	in := make(chan detour.Item, len(items))
	for _, it := range items {
		in <- it
	}
	close(in)
	return in
}

// numbered returns n items with ids "0".."n-1", each asking its own text.
func numbered(n int) []detour.Item {
	items := make([]detour.Item, n)
	for i := range items {
		id := strconv.Itoa(i)
		items[i] = detour.Item{ID: id, Request: hello("item " + id)}
	}
	return items
}

// collect reads out until it is closed, failing the test if that takes
// longer than 10 s.
func collect(t *testing.T, out <-chan detour.Outcome) []detour.Outcome {
	t.Helper()
	var got []detour.Outcome
	timeout := time.After(10 * time.Second)
	for {
		select {
		case o, ok := <-out:
			if !ok {
				return got
			}
			got = append(got, o)
		case <-timeout:
			t.Fatalf("the outcome channel was not closed within 10s (%d outcomes so far)", len(got))
		}
	}
}

func TestBatch_AnswersEveryItemExactlyOnce(t *testing.T) {
	sim, c := fixture(t, simulate.Latency{FirstToken: time.Millisecond})
	const n = 60
	got := collect(t, c.Batch(context.Background(), "default", feed(numbered(n)...), 7))

	seen := map[string]int{}
	for _, o := range got {
		seen[o.ID]++
		if o.Err != nil {
			t.Errorf("item %s: %v", o.ID, o.Err)
			continue
		}
		if o.Result == nil || o.Result.Response.Message.Content != "Hello from free/m." {
			t.Errorf("item %s: result %+v, want free/m's answer", o.ID, o.Result)
		}
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("%d outcomes for %d distinct ids, want %d of each", len(got), len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("item %s: %d outcomes, want 1", id, k)
		}
	}
	if sent := sim.Stats().Total(); sent != n {
		t.Errorf("the providers got %d requests, want %d: one per item", sent, n)
	}
}

func TestBatch_OutcomesComeAsTheyFinishNotInInputOrder(t *testing.T) {
	sim := startSim(t,
		simulate.Provider{Name: "slow", Latency: simulate.Latency{FirstToken: 300 * time.Millisecond}},
		simulate.Provider{Name: "fast"})
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(`
providers:
  slow: {base_url: %s, key_env: FREE_KEY}
  fast: {base_url: %s, key_env: PAID_KEY}
routes:
  default: {chain: [fast/m]}
`, sim.BaseURL("slow"), sim.BaseURL("fast"))))
	if err != nil {
		t.Fatal(err)
	}
	c, err := detour.New(cfg, detour.WithGetenv(keys))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	// The first item goes to the slow provider; the rest, sent alongside,
	// finish first and must not wait for it.
	items := numbered(5)
	items[0].Route = "slow/m"
	got := collect(t, c.Batch(context.Background(), "default", feed(items...), len(items)))

	if len(got) != len(items) {
		t.Fatalf("%d outcomes, want %d", len(got), len(items))
	}
	if last := got[len(got)-1].ID; last != "0" {
		t.Errorf("the last outcome is item %s, want item 0 (the slow one): outcomes wait on each other", last)
	}
	for _, o := range got {
		want := "Hello from fast/m."
		if o.ID == "0" {
			want = "Hello from slow/m."
		}
		if o.Err != nil || o.Result.Response.Message.Content != want {
			t.Errorf("item %s: %v, %v; want %q: an outcome carries another item's answer", o.ID, o.Result, o.Err, want)
		}
	}
}

func TestBatch_NeverExceedsItsConcurrency(t *testing.T) {
	for _, tt := range []struct {
		name        string
		concurrency int
		want        int
	}{
		{name: "three", concurrency: 3, want: 3},
		{name: "one", concurrency: 1, want: 1},
		{name: "zero means one", concurrency: 0, want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			count := &inFlight{delegate: http.DefaultTransport}
			sim, c := fixture(t, simulate.Latency{FirstToken: 15 * time.Millisecond},
				detour.WithHTTPClient(&http.Client{Transport: count}))
			const n = 24
			got := collect(t, c.Batch(context.Background(), "default", feed(numbered(n)...), tt.concurrency))
			if len(got) != n {
				t.Fatalf("%d outcomes, want %d", len(got), n)
			}
			if peak := count.Peak(); peak != tt.want {
				t.Errorf("at most %d requests were in flight at once, want exactly %d (concurrency %d)",
					peak, tt.want, tt.concurrency)
			}
			if sent := sim.Stats().Total(); sent != n {
				t.Errorf("the providers got %d requests, want %d", sent, n)
			}
		})
	}
}

func TestBatch_CancelStopsTakingItemsAndClosesTheChannel(t *testing.T) {
	sim, c := fixture(t, simulate.Latency{FirstToken: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// An endless input, never closed: after the cancel, Batch must close
	// its channel all the same.
	in := make(chan detour.Item)
	taken := make(chan int, 1)
	stop := make(chan struct{})
	go func() {
		n := 0
		defer func() { taken <- n }()
		for {
			select {
			case in <- detour.Item{ID: strconv.Itoa(n), Request: hello("item")}:
				n++
			case <-stop:
				return
			}
		}
	}()

	const concurrency, cancelAfter = 4, 6
	out := c.Batch(ctx, "default", in, concurrency)
	var got []detour.Outcome
	for o := range out {
		got = append(got, o)
		if len(got) == cancelAfter {
			cancel()
		}
		if len(got) > 1000 {
			t.Fatal("the batch did not stop after its context was cancelled")
		}
	}

	// The channel is closed, so every worker is gone: the producer's
	// count is final once it stops, and must match the outcomes.
	close(stop)
	n := <-taken

	if n != len(got) {
		t.Errorf("%d items taken but %d outcomes: every item taken gets exactly one", n, len(got))
	}
	if n > cancelAfter+concurrency {
		t.Errorf("%d items taken, want at most %d: the cancel should stop the taking", n, cancelAfter+concurrency)
	}
	canceled := 0
	for _, o := range got[cancelAfter:] {
		switch {
		case o.Err == nil:
		case errors.Is(o.Err, router.ErrCanceled):
			canceled++
		default:
			t.Errorf("item %s: %v, want an answer or an error wrapping router.ErrCanceled", o.ID, o.Err)
		}
	}
	if canceled == 0 {
		t.Errorf("no outcome after the cancel says router.ErrCanceled; outcomes after it: %d", len(got)-cancelAfter)
	}
	if sent := sim.Stats().Total(); sent > n {
		t.Errorf("the providers got %d requests for %d items taken", sent, n)
	}
}

func TestBatch_CancelledBeforeStartTakesNothing(t *testing.T) {
	sim, c := fixture(t, simulate.Latency{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := make(chan detour.Item, 3)
	for _, it := range numbered(3) {
		in <- it
	}
	if got := collect(t, c.Batch(ctx, "default", in, 2)); len(got) != 0 {
		t.Errorf("%d outcomes, want none: a cancelled batch takes no item", len(got))
	}
	if len(in) != 3 {
		t.Errorf("%d items left in the input, want all 3", len(in))
	}
	if sent := sim.Stats().Total(); sent != 0 {
		t.Errorf("the providers got %d requests, want 0", sent)
	}
}

func TestBatch_EmptyInputClosesAtOnce(t *testing.T) {
	_, c := fixture(t, simulate.Latency{})
	if got := collect(t, c.Batch(context.Background(), "default", feed(), 4)); len(got) != 0 {
		t.Errorf("%d outcomes for no items", len(got))
	}
}

func TestBatch_BatchKeySendsEachItemOnceAcrossRuns(t *testing.T) {
	sim, c := fixture(t, simulate.Latency{})
	const n = 5
	for run := range 2 {
		got := collect(t, c.Batch(context.Background(), "default", feed(numbered(n)...), 3, detour.BatchKey("job-1/")))
		if len(got) != n {
			t.Fatalf("run %d: %d outcomes, want %d", run, len(got), n)
		}
		for _, o := range got {
			if o.Err != nil {
				t.Fatalf("run %d, item %s: %v", run, o.ID, o.Err)
			}
			if replayed := o.Result.Replayed; replayed != (run == 1) {
				t.Errorf("run %d, item %s: Replayed = %v, want %v", run, o.ID, replayed, run == 1)
			}
		}
	}
	if sent := sim.Stats().Total(); sent != n {
		t.Errorf("the providers got %d requests over two runs, want %d: a rerun sends nothing", sent, n)
	}

	// Another job's prefix is another operation: sent again.
	collect(t, c.Batch(context.Background(), "default", feed(numbered(1)...), 1, detour.BatchKey("job-2/")))
	if sent := sim.Stats().Total(); sent != n+1 {
		t.Errorf("the providers got %d requests, want %d: another prefix is another operation", sent, n+1)
	}
}

func TestBatch_IdempotentItemKeyedByItsID(t *testing.T) {
	sim, c := fixture(t, simulate.Latency{})
	items := []detour.Item{
		{ID: "same", Request: hello("one"), Idempotent: true},
		{ID: "other", Request: hello("one")}, // not idempotent: sent
	}
	collect(t, c.Batch(context.Background(), "default", feed(items...), 1))
	got := collect(t, c.Batch(context.Background(), "default", feed(items...), 1))
	for _, o := range got {
		if o.Err != nil {
			t.Fatalf("item %s: %v", o.ID, o.Err)
		}
		if want := o.ID == "same"; o.Result.Replayed != want {
			t.Errorf("item %s: Replayed = %v, want %v", o.ID, o.Result.Replayed, want)
		}
	}
	if sent := sim.Stats().Total(); sent != 3 {
		t.Errorf("the providers got %d requests, want 3 (the idempotent item once, the other twice)", sent)
	}

	// The same ID with another request is a mistake, told per item.
	got = collect(t, c.Batch(context.Background(), "default",
		feed(detour.Item{ID: "same", Request: hello("two"), Idempotent: true}), 1))
	if len(got) != 1 || !errors.Is(got[0].Err, router.ErrIdempotencyReused) {
		t.Errorf("outcomes %+v, want one error wrapping router.ErrIdempotencyReused", got)
	}
}

func TestBatch_BadItemsFailAloneAndTheRestAreAnswered(t *testing.T) {
	sim, c := fixture(t, simulate.Latency{})
	items := []detour.Item{
		{ID: "ok", Request: hello("fine")},
		{ID: "no-request"},
		{ID: "bad-route", Route: "nowhere", Request: hello("fine")},
		{ID: "", Request: hello("fine"), Idempotent: true},
		{ID: "own-target", Route: "paid/m", Request: hello("fine")},
	}
	got := map[string]detour.Outcome{}
	for _, o := range collect(t, c.Batch(context.Background(), "default", feed(items...), 2)) {
		got[o.ID] = o
	}
	if len(got) != len(items) {
		t.Fatalf("%d outcomes, want %d", len(got), len(items))
	}
	for _, tt := range []struct {
		id     string
		answer string // "" means an error
		is     error
	}{
		{id: "ok", answer: "Hello from free/m."},
		{id: "no-request"},
		{id: "bad-route", is: config.ErrUnknownRoute},
		{id: ""},
		{id: "own-target", answer: "Hello from paid/m."},
	} {
		o := got[tt.id]
		switch {
		case tt.answer != "" && (o.Err != nil || o.Result.Response.Message.Content != tt.answer):
			t.Errorf("item %q: %v, %v; want %q", tt.id, o.Result, o.Err, tt.answer)
		case tt.answer == "" && (o.Err == nil || o.Result != nil):
			t.Errorf("item %q: %v, %v; want an error and no result", tt.id, o.Result, o.Err)
		case tt.is != nil && !errors.Is(o.Err, tt.is):
			t.Errorf("item %q: %v, want an error wrapping %v", tt.id, o.Err, tt.is)
		}
	}
	if sent := sim.Stats().Total(); sent != 2 {
		t.Errorf("the providers got %d requests, want 2: bad items send nothing", sent)
	}
}
