package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// plainRecord is Record without its methods, so encoding it does not recurse.
type plainRecord Record

// wireRecord is a Record as File and MarshalJSON wrote it through
// encoding/json before appendLine: its Time field shadows plainRecord's.
type wireRecord struct {
	Time string `json:"time"`
	plainRecord
}

func (r Record) wire() *wireRecord {
	return &wireRecord{r.Time.UTC().Format(TimeLayout), plainRecord(r)}
}

// encoderLine is what a File wrote through encoding/json before
// appendLine: the Encoder's output for r.wire() with HTML escaping off.
func encoderLine(r *Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(r.wire())
	return buf.Bytes(), err
}

// lineCases are records with every field set, none set, and the values
// that encode differently: HTML and control characters, invalid UTF-8, a
// float that takes an exponent, empty versus nil lists.
func lineCases() []Record {
	at := time.Date(2026, 12, 2, 7, 8, 9, 123456789, time.FixedZone("JST", 9*3600))
	return []Record{
		{},
		{Time: at, RequestID: "r1", Route: "default", Provider: "groq", Model: "llama-3.3-70b-versatile", Hop: 1, Attempt: 2,
			Failover: true, Status: "http_429", Kind: "transient", Scope: "target", Action: "failover", Phase: "sent",
			TokensIn: 1200, TokensOut: 34, TokensCacheRead: 1000, TokensCacheWrite: 7, Seconds: 0.131, WaitSeconds: 2,
			RetryAfterS: 1.5, Cost: 0.000123, Reason: "HTTP 429 <rate> & \"limit\"\n\t\u2028 \xff",
			Dropped: []string{"user", "cache_control"}, Degraded: true},
		{Time: at, Seconds: 1e-7, Cost: 1e21, WaitSeconds: -0.5, Dropped: []string{}},
	}
}

// appendLine writes, byte for byte, what encoding/json wrote.
func TestAppendLine_MatchesEncoder(t *testing.T) {
	for i, r := range lineCases() {
		got, err := appendLine(nil, &r)
		want, werr := encoderLine(&r)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s (%v)\nwant %s (%v)", i, got, err, want, werr)
		}
		// json.Marshal of a Record (MarshalJSON, then encoding/json's
		// HTML escaping) is what it was: json.Marshal of r.wire().
		m, merr := json.Marshal(r)
		old, oerr := json.Marshal(r.wire())
		if merr != nil || oerr != nil || !bytes.Equal(m, old) {
			t.Errorf("case %d: json.Marshal\n got %s (%v)\nwant %s (%v)", i, m, merr, old, oerr)
		}
	}
	// NaN is no JSON: an error, as from the encoder, and no line written.
	bad := Record{Seconds: math.NaN()}
	if _, err := appendLine(nil, &bad); err == nil || !strings.Contains(err.Error(), "unsupported value") {
		t.Errorf("NaN seconds: %v", err)
	}
}

// A line costs no allocation once the File's buffer has grown.
func TestAppendLine_NoAllocations(t *testing.T) {
	r := lineCases()[1]
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf, _ = appendLine(buf[:0], &r) }); n != 0 {
		t.Errorf("%.0f allocations a line, want 0", n)
	}
}

func FuzzAppendLineMatchesEncoder(f *testing.F) {
	for _, r := range lineCases() {
		f.Add(r.Time.UnixNano(), r.RequestID, r.Reason, r.Status, r.Hop, r.Seconds, r.Cost, r.Failover, strings.Join(r.Dropped, "\x00"))
	}
	f.Fuzz(func(t *testing.T, nanos int64, id, reason, status string, n int, secs, cost float64, flag bool, dropped string) {
		r := Record{Time: time.Unix(0, nanos), RequestID: id, Route: id, Provider: status, Model: reason, Hop: n, Attempt: -n,
			Failover: flag, Status: status, Kind: id, Scope: reason, Action: status, Phase: id, TokensIn: n, TokensOut: n / 3,
			TokensCacheRead: n % 7, TokensCacheWrite: n % 5, Seconds: secs, WaitSeconds: cost, RetryAfterS: secs * cost,
			Cost: cost, Reason: reason, Degraded: !flag}
		if dropped != "" {
			r.Dropped = strings.Split(dropped, "\x00")
		}
		got, err := appendLine(nil, &r)
		want, werr := encoderLine(&r)
		if (err != nil) != (werr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("\n got %s (%v)\nwant %s (%v)", got, err, want, werr)
		}
	})
}

// Writing a line allocates nothing once the File's buffer has grown: no
// encoder state, no closures for the flock.
func TestFile_WriteAllocatesNothing(t *testing.T) {
	l, err := OpenFile(t.TempDir() + "/ledger.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := lineCases()[1]
	if err := l.Write(r); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%.0f allocations a line, want 0", n)
	}
}
