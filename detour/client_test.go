package detour_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/detour"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

func TestOpen_NoPathAndNoFileUsesThePresetsWhoseKeysAreSet(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./detour.yaml
	env := map[string]string{"GROQ_API_KEY": "gsk-test-key-0123", "DEEPSEEK_API_KEY": "sk-test-key-0123"}
	c, err := detour.Open("", detour.WithGetenv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Route("")
	if err != nil {
		t.Fatal(err)
	}
	var chain []string
	for i := range r.Chain {
		chain = append(chain, r.Chain[i].ID())
	}
	want := []string{"groq/llama-3.3-70b-versatile", "deepseek/deepseek-chat"}
	if diff := cmp.Diff(want, chain); diff != "" {
		t.Errorf("default chain (-want +got):\n%s", diff)
	}
}

func TestOpen_NoPathFindsDetourConfig(t *testing.T) {
	sim := startSim(t, simulate.Provider{Name: "free"}, simulate.Provider{Name: "paid"})
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(yamlFor(sim)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvConfig: path, "FREE_KEY": keys("FREE_KEY"), "PAID_KEY": keys("PAID_KEY")}
	c, err := detour.Open("", detour.WithGetenv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Config().File; got != path {
		t.Errorf("config file = %q, want %q (from $%s)", got, path, config.EnvConfig)
	}
	if answer, err := c.Ask(context.Background(), "default", "hi"); err != nil || answer != "Hello from free/m." {
		t.Errorf("Ask = %q, %v", answer, err)
	}
}

func TestOpen_Errors(t *testing.T) {
	t.Chdir(t.TempDir())
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("providers:\n  groq: {pool: fre}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		path string
		env  map[string]string
		is   error  // when set, errors.Is
		text string // when set, in the message
	}{
		{name: "no file and no key", is: config.ErrNoKeys},
		{name: "a file that is wrong gives its line", path: bad, text: "bad.yaml:2:16"},
		{name: "a missing file", path: filepath.Join(t.TempDir(), "none.yaml"), is: os.ErrNotExist},
		{name: "a key too short to be one", env: map[string]string{"GROQ_API_KEY": "short"}, is: config.ErrShortKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := detour.Open(tt.path, detour.WithGetenv(func(k string) string { return tt.env[k] }))
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			if c != nil {
				t.Error("Open returned a Client with its error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want one wrapping %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q, want it to say %q", err, tt.text)
			}
		})
	}
}

func TestNew_NilConfig(t *testing.T) {
	if _, err := detour.New(nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

func TestClient_RouteNamesARouteOrATarget(t *testing.T) {
	_, c := fixture(t, simulate.Latency{})
	for _, tt := range []struct {
		name, want string
		is         error
	}{
		{name: "default", want: "default"},
		{name: "", want: "default"},
		{name: "paid/m", want: "paid/m"},
		{name: "paid/some/model", want: "paid/some/model"},
		{name: "defualt", is: config.ErrUnknownRoute},
		{name: "nobody/m", is: config.ErrUnknownProvider},
	} {
		r, err := c.Route(tt.name)
		switch {
		case tt.is != nil && !errors.Is(err, tt.is):
			t.Errorf("Route(%q) = %v, %v; want an error wrapping %v", tt.name, r, err, tt.is)
		case tt.is == nil && (err != nil || r.Name != tt.want):
			t.Errorf("Route(%q) = %v, %v; want route %q", tt.name, r, err, tt.want)
		}
	}
	a, _ := c.Route("paid/m")
	if b, _ := c.Route("paid/m"); a != b {
		t.Error("a target's route is built anew on each call; want it built once")
	}
	_, err := c.Complete(context.Background(), "defualt", hello("hi"))
	if !errors.Is(err, config.ErrUnknownRoute) || !strings.Contains(err.Error(), `did you mean "default"`) {
		t.Errorf("Complete on an unknown route: %v, want config's error with its suggestion", err)
	}
}

func TestClient_CallOptionsReachTheRouter(t *testing.T) {
	t.Run("no fallback fails on a wall and sends once", func(t *testing.T) {
		sim, c := fixture(t, simulate.Latency{})
		sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.DailyQuota})
		_, err := c.Complete(context.Background(), "default", hello("hi"), detour.NoFallback())
		if !errors.Is(err, router.ErrAllFailed) {
			t.Errorf("error %v, want router.ErrAllFailed", err)
		}
		if n := sim.Stats().Total(); n != 1 {
			t.Errorf("%d sends, want 1", n)
		}
	})
	t.Run("start and request id", func(t *testing.T) {
		book := &ledger.Memory{}
		sim, c := fixture(t, simulate.Latency{}, detour.WithLedger(book))
		res, err := c.Complete(context.Background(), "default", hello("hi"), detour.Start("paid"), detour.RequestID("req-7"))
		if err != nil || res.Target.ID() != "paid/m" || res.RequestID != "req-7" {
			t.Fatalf("Complete = %+v, %v; want paid/m under req-7", res, err)
		}
		if n := sim.Stats().Requests("free", "m"); n != 0 {
			t.Errorf("free/m got %d sends, want 0", n)
		}
		if recs := book.Records(); len(recs) != 1 || recs[0].RequestID != "req-7" {
			t.Errorf("ledger %+v, want one record of req-7", recs)
		}
	})
	t.Run("idempotency key", func(t *testing.T) {
		sim, c := fixture(t, simulate.Latency{})
		for i := range 2 {
			res, err := c.Complete(context.Background(), "default", hello("hi"), detour.IdempotencyKey("op-1"))
			if err != nil || res.Replayed != (i == 1) {
				t.Fatalf("call %d: %+v, %v; want Replayed only on the second", i, res, err)
			}
		}
		if n := sim.Stats().Total(); n != 1 {
			t.Errorf("%d sends, want 1", n)
		}
	})
	t.Run("call options replace the lot", func(t *testing.T) {
		_, c := fixture(t, simulate.Latency{})
		res, err := c.Complete(context.Background(), "default", hello("hi"),
			detour.CallOptions(router.Options{Start: "paid"}), detour.RequestID("after"))
		if err != nil || res.Target.ID() != "paid/m" || res.RequestID != "after" {
			t.Fatalf("Complete = %+v, %v; want paid/m under the id set after CallOptions", res, err)
		}
	})
}

func TestClient_HooksAreCalledInOrderForEveryAttemptAndHop(t *testing.T) {
	var mu sync.Mutex
	var got []string
	note := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	sim, c := fixture(t, simulate.Latency{},
		detour.OnAttempt(func(a router.Attempt) { note("1 " + a.Target.ID() + " " + a.Status) }),
		detour.OnAttempt(func(a router.Attempt) { note("2 " + a.Target.ID()) }),
		detour.OnHop(func(h router.Hop) { note("hop " + h.From + " " + h.To) }),
		detour.OnAttempt(nil), detour.OnHop(nil))
	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.NoCredits})
	if _, err := c.Ask(context.Background(), "default", "hi"); err != nil {
		t.Fatal(err)
	}
	want := []string{"1 free/m http_402", "2 free/m", "hop free/m paid/m", "1 paid/m ok", "2 paid/m"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

// closeCounter is a ledger.Sink that counts its Close calls.
type closeCounter struct {
	ledger.Memory
	mu     sync.Mutex
	closes int
}

func (s *closeCounter) Close() error {
	s.mu.Lock()
	s.closes++
	s.mu.Unlock()
	return nil
}

func TestClient_CloseClosesWhatItOpenedOnly(t *testing.T) {
	sim := startSim(t, simulate.Provider{Name: "free"}, simulate.Provider{Name: "paid"})
	dir := t.TempDir()
	cfg, err := config.Parse("detour.yaml", []byte(yamlFor(sim)+"health: {store: sqlite}\n"))
	if err != nil {
		t.Fatal(err)
	}
	book := &closeCounter{}
	open := func() *detour.Client {
		c, err := detour.New(cfg, detour.WithGetenv(keys), detour.WithLedger(book),
			detour.WithLedgerFile(filepath.Join(dir, "sub", "ledger.jsonl")))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// The first client meets the wall and parks free/m in health.db,
	// beside the ledger file; the second, on the same file, skips it.
	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.DailyQuota})
	c := open()
	if _, err := c.Ask(context.Background(), "default", "hi"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "health.db")); err != nil {
		t.Errorf("no health.db beside the ledger file: %v", err)
	}
	c = open()
	res, err := c.Complete(context.Background(), "default", hello("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Attempts[0].Status; s != ledger.StatusSkippedParked {
		t.Errorf("the second client's first attempt: %s, want %s: the park was not kept in the SQLite store", s, ledger.StatusSkippedParked)
	}
	c.Close()

	if book.closes != 0 {
		t.Errorf("the caller's sink was closed %d times, want 0", book.closes)
	}
	recs, err := ledger.ReadFile(filepath.Join(dir, "sub", "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if mem := book.Records(); len(recs) != 4 || len(mem) != 4 {
		t.Errorf("%d records in the file and %d in the caller's sink, want 4 in each (wall, answer, skip, answer)", len(recs), len(mem))
	}
}

func TestClient_StreamNeedsARequest(t *testing.T) {
	_, c := fixture(t, simulate.Latency{})
	if _, err := c.Stream(context.Background(), "default", nil); err == nil {
		t.Error("Stream(nil) succeeded")
	}
	if _, err := c.Complete(context.Background(), "default", nil); err == nil {
		t.Error("Complete(nil) succeeded")
	}
	if _, err := c.Stream(context.Background(), "default", hello("hi"), detour.IdempotencyKey("k")); err == nil {
		t.Error("Stream with an idempotency key succeeded; a stream's answer is not kept")
	}
}

func TestClient_WithHealthSharesParksBetweenClients(t *testing.T) {
	b := health.New(health.Settings{})
	sim, first := fixture(t, simulate.Latency{}, detour.WithHealth(b))
	cfg := first.Config()
	second, err := detour.New(cfg, detour.WithGetenv(keys), detour.WithHealth(b))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()

	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.NoCredits})
	if _, err := first.Ask(context.Background(), "default", "hi"); err != nil {
		t.Fatal(err)
	}
	res, err := second.Complete(context.Background(), "default", hello("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Attempts[0].Status; s != ledger.StatusSkippedParked {
		t.Errorf("the second client's first attempt: %s, want %s: the breaker given is not used", s, ledger.StatusSkippedParked)
	}
	if n := sim.Stats().Requests("free", "m"); n != 1 {
		t.Errorf("free/m got %d sends, want 1", n)
	}
}
