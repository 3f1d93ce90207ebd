package ledger

import (
	"errors"
	"sync"
	"testing"
)

func TestMemory_ConcurrentWritesAndCopy(t *testing.T) {
	var m Memory
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if err := m.Write(Record{Hop: w, Attempt: i}); err != nil {
					t.Error(err)
				}
				_ = m.Records()
			}
		})
	}
	wg.Wait()
	recs := m.Records()
	if len(recs) != 800 {
		t.Fatalf("%d records, want 800", len(recs))
	}
	recs[0].Reason = "changed"
	if m.Records()[0].Reason == "changed" {
		t.Fatal("Records returned the sink's own slice")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

type failSink struct {
	Memory
	err error
}

func (f *failSink) Write(r Record) error { f.Memory.Write(r); return f.err }
func (f *failSink) Close() error         { return f.err }

func TestMulti_WritesEverySinkAndJoinsErrors(t *testing.T) {
	errA, errB := errors.New("a broke"), errors.New("b broke")
	a, b, ok := &failSink{err: errA}, &failSink{err: errB}, &Memory{}
	s := Multi(a, nil, b, ok, Discard)
	err := s.Write(Record{RequestID: "r1"})
	if !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Fatalf("Write error %v does not join both", err)
	}
	for name, m := range map[string]*Memory{"a": &a.Memory, "b": &b.Memory, "ok": ok} {
		if recs := m.Records(); len(recs) != 1 || recs[0].RequestID != "r1" {
			t.Errorf("sink %s got %+v", name, recs)
		}
	}
	if err := s.Close(); !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Fatalf("Close error %v does not join both", err)
	}
	if err := Multi().Write(Record{}); err != nil {
		t.Fatalf("empty Multi: %v", err)
	}
}

func TestDiscard(t *testing.T) {
	if err := Discard.Write(Record{}); err != nil {
		t.Fatal(err)
	}
	if err := Discard.Close(); err != nil {
		t.Fatal(err)
	}
}
