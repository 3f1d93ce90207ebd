package router_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// spendStore is a health store in memory that keeps records (as the
// shared stores do), and notes the highest sum a daily counter reached.
type spendStore struct {
	health.MemoryStore
	health.MemoryRecords

	mu  sync.Mutex         // guards top and before
	top map[string]float64 // by key
	// before, when set, runs once before the next Reserve: another
	// process's reservation landing between a send's check and its hold.
	before func(r *health.MemoryRecords)
}

func (s *spendStore) Reserve(key string, amount, limit float64, ttl time.Duration) (float64, bool, error) {
	s.mu.Lock()
	before := s.before
	s.before = nil
	s.mu.Unlock()
	if before != nil {
		before(&s.MemoryRecords)
	}
	sum, ok, err := s.MemoryRecords.Reserve(key, amount, limit, ttl)
	s.note(key, sum)
	return sum, ok, err
}

func (s *spendStore) Add(key string, delta float64, ttl time.Duration) (float64, error) {
	sum, err := s.MemoryRecords.Add(key, delta, ttl)
	s.note(key, sum)
	return sum, err
}

func (s *spendStore) note(key string, sum float64) {
	s.mu.Lock()
	if s.top == nil {
		s.top = map[string]float64{}
	}
	s.top[key] = max(s.top[key], sum)
	s.mu.Unlock()
}

// highest is the highest sum the counter of ceiling key ("route:spend")
// reached today.
func (s *spendStore) highest(key string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.top[dayCounter(key)]
}

// dayCounter is the records key of ceiling key's counter today.
func dayCounter(key string) string { return "spend:" + key + ":" + epoch.Format(time.DateOnly) }

// spent is what the counter of ceiling key ("route:spend") holds today
// (spent and held).
func (s *spendStore) spent(t *testing.T, key string) float64 {
	t.Helper()
	v, ok, err := s.Get(dayCounter(key))
	if err != nil || !ok {
		return 0
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		t.Fatalf("the counter holds %q", v)
	}
	return f
}

// paidClient answers after release is closed (or at once when it is
// nil), with usage of 10 tokens out; it can fail, panic or stream instead.
type paidClient struct {
	release chan struct{}
	entered atomic.Int32
	maxReq  atomic.Int32 // the max_tokens of the last request
	fail    error
	panics  bool
}

func (c *paidClient) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c.entered.Add(1)
	c.maxReq.Store(int32(req.MaxTokens))
	if c.panics {
		panic("a client's bug")
	}
	if c.release != nil {
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.fail != nil {
		return nil, c.fail
	}
	return &llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: "paid"},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 1, OutputTokens: 10}}, nil
}

func (c *paidClient) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	c.entered.Add(1)
	return &chunks{list: []llm.Chunk{
		{Role: llm.RoleAssistant, Content: "pa"},
		{Content: "id"},
		{FinishReason: llm.FinishStop, Usage: &llm.Usage{InputTokens: 1, OutputTokens: 10}},
	}}, nil
}

// chunks is a stream of list, then io.EOF.
type chunks struct{ list []llm.Chunk }

func (s *chunks) Next() (llm.Chunk, error) {
	if len(s.list) == 0 {
		return llm.Chunk{}, io.EOF
	}
	c := s.list[0]
	s.list = s.list[1:]
	return c, nil
}

func (s *chunks) Close() error { return nil }

// spendRig is a route of a paid target, whose worst case is $0.02 (100
// tokens out at $200 a million, nothing in) and whose answer costs
// $0.002, then a free one, under a daily ceiling of $0.50; its health
// store is st.
func spendRig(t *testing.T, paid *paidClient) (*router.Router, *router.Route, *spendStore, *ledger.Memory) {
	t.Helper()
	st := &spendStore{}
	b := health.NewWithStore(health.Settings{}, st)
	if b.RecordsOf() == nil {
		t.Fatal("the test store keeps no records")
	}
	book := &ledger.Memory{}
	r := (&router.Router{Health: b, Ledger: book, Clock: clock.NewFake(epoch), Rand: func() float64 { return 0 }}).Init()
	route := &router.Route{Name: "spend", DailyCost: 0.50, Chain: []router.Target{
		{Provider: "paid", Model: "m", Family: "f", PriceOut: 200, Client: paid},
		{Provider: "free", Model: "m", Family: "f", Client: &fixedClient{resp: llm.Response{Model: "m",
			Message: llm.Message{Role: llm.RoleAssistant, Content: "free"}, FinishReason: llm.FinishStop}}},
	}}
	return r, route, st, book
}

// spendPrompt is a request of 1 token in and at most 100 out: a worst
// case of $0.02 at the paid target.
func spendPrompt(stream bool) *llm.Request {
	return &llm.Request{MaxTokens: 100, Stream: stream, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
}

// same says whether two sums of dollars are equal but for floating point.
func same(x, y float64) bool { return math.Abs(x-y) <= 1e-9 }

// 100 requests at once against a $0.50 ceiling, each send's worst case
// $0.02: 25 sends hold the whole room while they wait, the other 75 are
// skipped (skipped_cost) to the free target, the counter never passes
// the ceiling, and once the 25 answer it holds their real cost alone.
// Checked and not held, every one of the 100 would have seen the room.
func TestRouter_ConcurrentSendsHoldTheDailyCeiling(t *testing.T) {
	paid := &paidClient{release: make(chan struct{})}
	r, route, st, book := spendRig(t, paid)
	const requests = 100
	var done atomic.Int32
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			defer done.Add(1)
			if _, err := r.Complete(context.Background(), route, spendPrompt(false), router.Options{}); err != nil {
				t.Error(err)
			}
		})
	}
	// Every request either waits in the paid send or was answered for free.
	for end := time.Now().Add(10 * time.Second); int(paid.entered.Load()+done.Load()) < requests; {
		if time.Now().After(end) {
			t.Fatalf("%d sends wait, %d requests answered: want %d together", paid.entered.Load(), done.Load(), requests)
		}
		time.Sleep(time.Millisecond)
	}
	waiting := paid.entered.Load()
	held := st.spent(t, "route:spend")
	close(paid.release)
	wg.Wait()
	if waiting != 25 || !same(held, 0.50) {
		t.Fatalf("%d sends in flight holding $%g, want 25 holding the $0.50 ceiling", waiting, held)
	}
	if top := st.highest("route:spend"); top > 0.50+health.ReserveSlack {
		t.Fatalf("the counter reached $%g, past the $0.50 ceiling", top)
	}
	var cost float64
	sends, skips := 0, 0
	for _, rec := range book.Records() {
		switch {
		case rec.Provider == "paid" && rec.Status == ledger.StatusOK:
			sends++
			cost += rec.Cost
		case rec.Provider == "paid" && rec.Status == ledger.StatusSkippedCost:
			skips++
		}
	}
	if sends != 25 || skips != 75 || !same(cost, 25*0.002) || !same(st.spent(t, "route:spend"), cost) {
		t.Fatalf("ledger: %d paid answers costing $%g, %d skipped_cost; counter $%g: want 25 at $0.05, 75 skipped, the counter at the ledger's cost",
			sends, cost, skips, st.spent(t, "route:spend"))
	}
}

// However a send ends, what it held is settled to what it cost: a failed
// send, a cancelled request, a panic in the client, a stream closed early
// hand all of it back; an answer and a stream read to its end leave their
// real cost. A stream holds its room until it ends.
func TestRouter_ReservationSettlesHoweverTheSendEnds(t *testing.T) {
	complete := func(r *router.Router, route *router.Route, ctx context.Context) {
		_, _ = r.Complete(ctx, route, spendPrompt(false), router.Options{})
	}
	cases := []struct {
		name  string
		paid  *paidClient
		run   func(t *testing.T, r *router.Router, route *router.Route, st *spendStore)
		spent float64
	}{
		{name: "an answer", paid: &paidClient{}, spent: 0.002,
			run: func(_ *testing.T, r *router.Router, route *router.Route, _ *spendStore) {
				complete(r, route, context.Background())
			}},
		{name: "a failed send", paid: &paidClient{fail: &llm.ProviderError{Status: 503, Message: "overloaded"}},
			run: func(_ *testing.T, r *router.Router, route *router.Route, _ *spendStore) {
				complete(r, route, context.Background())
			}},
		{name: "a cancelled request", paid: &paidClient{release: make(chan struct{})},
			run: func(t *testing.T, r *router.Router, route *router.Route, st *spendStore) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() { // once the send holds its room (or after 5 s)
					for end := time.Now().Add(5 * time.Second); !same(st.spent(t, "route:spend"), 0.02) && time.Now().Before(end); {
						time.Sleep(time.Millisecond)
					}
					cancel()
				}()
				complete(r, route, ctx)
			}},
		{name: "a panic in the client", paid: &paidClient{panics: true},
			run: func(t *testing.T, r *router.Router, route *router.Route, _ *spendStore) {
				defer func() {
					if recover() == nil {
						t.Fatal("the client's panic did not reach the caller")
					}
				}()
				complete(r, route, context.Background())
			}},
		{name: "a stream closed early", paid: &paidClient{},
			run: func(t *testing.T, r *router.Router, route *router.Route, st *spendStore) {
				res, err := r.Stream(context.Background(), route, spendPrompt(true), router.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := res.Stream.Next(); err != nil {
					t.Fatal(err)
				}
				if held := st.spent(t, "route:spend"); !same(held, 0.02) {
					t.Fatalf("the open stream holds $%g, want its worst case, $0.02", held)
				}
				res.Stream.Close()
			}},
		{name: "a stream read to its end", paid: &paidClient{}, spent: 0.002,
			run: func(t *testing.T, r *router.Router, route *router.Route, _ *spendStore) {
				res, err := r.Stream(context.Background(), route, spendPrompt(true), router.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for {
					if _, err := res.Stream.Next(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						t.Fatal(err)
					}
				}
				res.Stream.Close()
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, route, st, _ := spendRig(t, c.paid)
			route.Budget = policy.Budget{MaxPerTarget: 1}
			c.run(t, r, route, st)
			if c.paid.entered.Load() == 0 {
				t.Fatal("the paid target got no send")
			}
			if !same(st.highest("route:spend"), 0.02) {
				t.Errorf("the counter reached $%g, want the send's worst case, $0.02", st.highest("route:spend"))
			}
			if got := st.spent(t, "route:spend"); !same(got, c.spent) {
				t.Fatalf("the counter holds $%g after the send, want $%g", got, c.spent)
			}
		})
	}
}

// Another process's hold landing between a send's check and its own
// hold: the send cannot hold its worst case, and where the route lowers
// max_tokens it holds the lowered worst case instead (the room left);
// where it does not, the target is skipped for its cost.
func TestRouter_ReserveLowersMaxTokensToTheRoomLeft(t *testing.T) {
	for _, lower := range []bool{true, false} {
		paid := &paidClient{}
		r, route, st, book := spendRig(t, paid)
		route.LowerMaxTokens = lower
		st.before = func(m *health.MemoryRecords) { // $0.49 held elsewhere: $0.01 left
			_, _ = m.Add(dayCounter("route:spend"), 0.49, time.Hour)
		}
		res, err := r.Complete(context.Background(), route, spendPrompt(false), router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !lower {
			if res.Target.Provider != "free" || book.Records()[0].Status != ledger.StatusSkippedCost ||
				!strings.Contains(book.Records()[0].Reason, "held by sends in flight") {
				t.Fatalf("without lower_max_tokens: answered by %s, ledger %+v: want paid skipped_cost", res.Target.ID(), book.Records())
			}
			continue
		}
		if res.Target.Provider != "paid" || paid.maxReq.Load() != 50 || len(res.Dropped) != 1 ||
			!strings.Contains(res.Dropped[0], "max_tokens lowered to 50") {
			t.Fatalf("answered by %s with max_tokens %d, dropped %q: want paid at 50 (the $0.01 left)",
				res.Target.ID(), paid.maxReq.Load(), res.Dropped)
		}
		if top := st.highest("route:spend"); !same(top, 0.50) {
			t.Fatalf("the counter reached $%g, want $0.50: $0.49 and the lowered worst case", top)
		}
		if got := st.spent(t, "route:spend"); !same(got, 0.49+0.002) {
			t.Fatalf("the counter holds $%g, want $0.492", got)
		}
	}
}

// A store that cannot answer holds nothing and stops no send: health is
// advisory, and so are the ceilings' counts.
func TestRouter_UnreachableStoreLetsTheSendGo(t *testing.T) {
	paid := &paidClient{}
	b := health.NewWithStore(health.Settings{}, &brokenRecords{})
	r := &router.Router{Health: b, Ledger: &ledger.Memory{}, Clock: clock.NewFake(epoch)}
	_, route, _, _ := spendRig(t, paid)
	route.DailyCost = 1e-9
	res, err := r.Complete(context.Background(), route, spendPrompt(false), router.Options{})
	if err != nil || res.Target.Provider != "paid" {
		t.Fatalf("answered by %v (%v), want the paid target", res, err)
	}
}

// brokenRecords is a health store whose records cannot be reached.
type brokenRecords struct {
	health.MemoryStore
	health.MemoryRecords
}

var errUnreachable = errors.New("store unreachable")

func (*brokenRecords) Get(string) ([]byte, bool, error) { return nil, false, errUnreachable }

func (*brokenRecords) Add(string, float64, time.Duration) (float64, error) { return 0, errUnreachable }

func (*brokenRecords) Reserve(string, float64, float64, time.Duration) (float64, bool, error) {
	return 0, false, errUnreachable
}

// Ceilings are held in order, the route's then the caller's: when the
// caller's refuses (its room taken between the check and the hold), what
// the route's held is handed back and the target is skipped for its cost.
func TestRouter_ARefusingCeilingHandsBackTheEarlierHolds(t *testing.T) {
	paid := &paidClient{}
	r, route, st, book := spendRig(t, paid)
	st.before = func(m *health.MemoryRecords) { _, _ = m.Add(dayCounter("key:alice"), 0.49, time.Hour) } // $0.01 of alice's $0.50 left
	res, err := r.Complete(context.Background(), route, spendPrompt(false),
		router.Options{Spend: []router.SpendLimit{{Key: "key:alice", Limit: 0.50}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "free" || paid.entered.Load() != 0 {
		t.Fatalf("answered by %s, %d paid sends: want the free target, none paid", res.Target.ID(), paid.entered.Load())
	}
	if l := book.Records()[0]; l.Status != ledger.StatusSkippedCost || !strings.Contains(l.Reason, "key:alice") {
		t.Fatalf("the paid target's line: %s %q, want skipped_cost for alice's ceiling", l.Status, l.Reason)
	}
	if !same(st.highest("route:spend"), 0.02) || st.spent(t, "route:spend") != 0 || !same(st.spent(t, "key:alice"), 0.49) {
		t.Fatalf("the route's counter reached $%g and holds $%g, alice's $%g: want the route's $0.02 handed back, alice's untouched",
			st.highest("route:spend"), st.spent(t, "route:spend"), st.spent(t, "key:alice"))
	}
}
