package sqlitestore_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

// FuzzEntryRoundTrip writes arbitrary bytes as a row's entry, behind the
// store's back, and reads them back through it. Bytes that decode as an
// Entry read back as that entry; others read as no entry (and are logged),
// never as a panic or a store gone down. Either way an Update then works.
func FuzzEntryRoundTrip(f *testing.F) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	valid, _ := json.Marshal(health.Entry{Key: "k", State: health.Open, Until: now, Reason: "wall",
		Kind: "wall", Status: "http_429", Failures: 3, Generation: 7, ProbeUntil: now, Touched: now})
	for _, seed := range [][]byte{
		valid, valid[:len(valid)/2], nil, []byte("null"), []byte("{}"), []byte("[]"), []byte(`"x"`),
		[]byte(`{"state":"bogus","failures":-1}`), []byte(`{"until":"not a time"}`),
		[]byte(`{"failures":1e400}`), []byte(`{"until":"9999-12-31T23:59:59Z"}`),
		[]byte(`{"generation":18446744073709551615}`), []byte("\xff\xfe\x00garbage"),
	} {
		f.Add(seed)
	}
	path := dbPath(f)
	var log logBuf
	s := sqlitestore.Open(path, sqlitestore.Options{Logger: log.logger()})
	defer s.Close()
	raw, err := sqlOpen(path)
	if err != nil {
		f.Fatal(err)
	}
	defer raw.Close()

	f.Fuzz(func(t *testing.T, b []byte) {
		if b == nil {
			b = []byte{} // the column is NOT NULL
		}
		if _, err := raw.Exec(`INSERT OR REPLACE INTO health (key, entry, expires) VALUES ('k', ?, ?)`,
			b, int64(math.MaxInt64)); err != nil {
			t.Fatal(err)
		}
		var want health.Entry
		decodes := json.Unmarshal(b, &want) == nil
		if !decodes {
			want = health.Entry{} // Unmarshal may have filled some fields
		}

		got, found := s.Peek("k")
		if found != decodes {
			t.Fatalf("Peek found %v for %q; want %v", found, b, decodes)
		}
		if found && !sameJSON(t, got, want) {
			t.Fatalf("Peek = %+v, want %+v", got, want)
		}
		all, err := s.Entries()
		if err != nil || len(all) != map[bool]int{false: 0, true: 1}[decodes] {
			t.Fatalf("Entries = %v, %v", all, err)
		}
		if err := incr(s, "k"); err != nil {
			t.Fatal(err)
		}
		if got := failures(t, s, "k"); got != want.Failures+1 {
			t.Fatalf("failures after Update = %d, want %d", got, want.Failures+1)
		}
		if st := s.Status(); !st.Up {
			t.Fatalf("store went down on %q: %s", b, st.Detail)
		}
	})
}

func sameJSON(t *testing.T, a, b health.Entry) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("marshal: %v, %v", err1, err2)
	}
	return bytes.Equal(ja, jb)
}
