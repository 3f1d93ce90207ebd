package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/ledger"
)

// parseOracle is ParseLine as encoding/json reads a line: json.Unmarshal
// into a ledger.Record, with ParseLine's checks around it.
func parseOracle(b []byte) (ledger.Record, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return ledger.Record{}, errors.New("not a JSON object")
	}
	var rec ledger.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return ledger.Record{}, err
	}
	if rec.Provider == "" || rec.Status == "" {
		return rec, errors.New("not a ledger record: no provider or status")
	}
	return rec, nil
}

// sameRecord compares records strictly: times by instant and zone, floats
// by bits (so -0 differs from 0), nil slices apart from empty ones.
var sameRecord = cmp.Options{
	cmp.Comparer(func(a, b time.Time) bool {
		an, ao := a.Zone()
		bn, bo := b.Zone()
		return a.Equal(b) && an == bn && ao == bo && a.Location().String() == b.Location().String()
	}),
	cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }),
}

// checkParseLine fails t when ParseLine and the oracle differ on line:
// accept or reject, the error's text, or any field of the record. It also
// checks that the record does not share memory with line.
func checkParseLine(t testing.TB, line []byte) {
	t.Helper()
	want, wantErr := parseOracle(line)
	buf := bytes.Clone(line)
	got, gotErr := ParseLine(buf)
	for i := range buf {
		buf[i] = '#' // the caller reuses its buffer
	}
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Fatalf("ParseLine(%q): error %v, encoding/json: %v", line, gotErr, wantErr)
	case gotErr != nil && gotErr.Error() != wantErr.Error():
		t.Fatalf("ParseLine(%q): error %q, encoding/json: %q", line, gotErr, wantErr)
	}
	if diff := cmp.Diff(want, got, sameRecord); diff != "" {
		t.Fatalf("ParseLine(%q) differs from encoding/json (-json +ParseLine):\n%s", line, diff)
	}
}

// fastAccepts reports whether the scanner reads line itself, without
// encoding/json.
func fastAccepts(line string) bool {
	var rec ledger.Record
	return scanRecord(bytes.TrimSpace([]byte(line)), &rec)
}

const fullLine = `{"time":"2025-06-01T10:01:00.123Z","request_id":"r02","route":"default","provider":"groq","model":"llama",` +
	`"hop":1,"attempt":2,"failover":true,"status":"http_429","kind":"transient","scope":"target","action":"failover",` +
	`"phase":"none","tokens_in":1200,"tokens_out":34,"tokens_cache_read":1000,"tokens_cache_write":200,"seconds":0.1,` +
	`"wait_seconds":2.5,"retry_after_s":30,"cost":0.00012,"reason":"rate limited","dropped":["logprobs","seed"]}`

// obj wraps fields after a provider and a status in an object.
func obj(fields string) string {
	if fields == "" {
		return `{"provider":"p","status":"ok"}`
	}
	return `{"provider":"p","status":"ok",` + fields + `}`
}

var parseLineCases = []struct {
	name string
	line string
	fast bool // the scanner reads it without encoding/json
}{
	{"full record", fullLine, true},
	{"record as detour writes it", `{"time":"2025-06-01T10:00:00.000Z","request_id":"r01","route":"default","provider":"groq","model":"llama","hop":0,"attempt":1,"failover":false,"status":"ok","kind":"","action":"return","phase":"committed","tokens_in":100,"tokens_out":20,"seconds":0.4,"wait_seconds":0,"cost":0.001,"reason":""}`, true},
	{"fields in another order", `{"reason":"x","status":"ok","dropped":[],"provider":"p","time":"2025-06-01T10:00:00.000Z","cost":1}`, true},
	{"only provider and status", obj(""), true},

	{"escapes", obj(`"reason":"say \"hi\" \\ \/ \b\f\n\r\t end"`), true},
	{"unicode escapes", obj(`"reason":"\u00e9\u4e2d\u0000\u001f\uFFFD\u0041"`), true},
	{"surrogate pair", obj(`"reason":"\ud83d\ude00 \uD834\uDD1E"`), true},
	{"lone high surrogate", obj(`"reason":"\ud800"`), true},
	{"lone low surrogate", obj(`"reason":"\udc00x"`), true},
	{"high surrogate then letter", obj(`"reason":"\ud800\u0041"`), true},
	{"two high surrogates then low", obj(`"reason":"\ud83d\ud83d\ude00"`), true},
	{"high surrogate then text", obj(`"reason":"\ud83dabc"`), true},
	{"plain non-ASCII", obj(`"reason":"héllo ✓ 中"`), true},
	{"invalid UTF-8", obj("\"reason\":\"a\xffb\xfe\xc3\""), true},
	{"encoded surrogate", obj("\"reason\":\"\xed\xa0\x80\""), true},
	{"truncated UTF-8 before escape", obj("\"reason\":\"\xe4\xb8\\n\""), true},
	{"escaped provider", `{"provider":"gr\u006fq","status":"o\u006b"}`, true},
	{"escape in time", obj(`"time":"2025-06-01T10:00:00\u002e000Z"`), false},

	{"unknown nested keys", obj(`"extra":{"a":[1,{"b":null}],"c":"\u0041","d":{}},"more":[true,false,-1.5e3,[]],"e":"x"`), true},
	{"unknown key first", `{"v":2,"provider":"p","status":"ok"}`, true},
	{"unknown key deep", obj(`"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70)), false},
	{"unknown key invalid", obj(`"x":{"a":}`), false},
	{"unknown key bad escape", obj(`"x":"\q"`), false},
	{"unknown key torn", obj(`"x":[1,2`), false},

	{"nulls", `{"time":null,"request_id":null,"route":null,"provider":"p","model":null,"hop":null,"attempt":null,"failover":null,"status":"ok","kind":null,"scope":null,"action":null,"phase":null,"tokens_in":null,"tokens_out":null,"tokens_cache_read":null,"tokens_cache_write":null,"seconds":null,"wait_seconds":null,"retry_after_s":null,"cost":null,"reason":null,"dropped":null}`, true},
	{"null provider", `{"provider":null,"status":"ok"}`, true},
	{"missing provider", `{"status":"ok","model":"m"}`, true},
	{"missing status", `{"provider":"p"}`, true},
	{"empty provider", `{"provider":"","status":"ok"}`, true},
	{"empty object", `{}`, true},
	{"empty object with space", `{ }`, true},

	{"blank", ``, false},
	{"spaces", "  \t\r\n", false},
	{"array", `[{"provider":"p","status":"ok"}]`, false},
	{"string", `"x"`, false},
	{"null", `null`, false},
	{"not json", `not json`, false},

	{"torn in a string", `{"time":"2025-06-01T10:00:00.000Z","provider":"gr`, false},
	{"torn before the brace", `{"provider":"p","status":"ok"`, false},
	{"torn after a comma", `{"provider":"p","status":"ok",`, false},
	{"torn in a number", `{"provider":"p","status":"ok","cost":0.`, false},
	{"torn in an escape", `{"provider":"p","status":"ok","reason":"\u00`, false},
	{"one brace", `{`, false},
	{"two objects", `{"provider":"p","status":"ok"}{"provider":"p","status":"ok"}`, false},
	{"two lines", "{\"provider\":\"p\",\"status\":\"ok\"}\n{}", false},
	{"trailing comma", `{"provider":"p","status":"ok",}`, false},
	{"trailing junk", `{"provider":"p","status":"ok"} x`, false},
	{"extra brace", `{"provider":"p","status":"ok"}}`, false},
	{"missing colon", `{"provider" "p","status":"ok"}`, false},
	{"control byte in string", obj("\"reason\":\"a\x01b\""), false},
	{"newline in string", obj("\"reason\":\"a\nb\""), false},
	{"bad escape", obj(`"reason":"\x"`), false},
	{"quote escape", obj(`"reason":"\'"`), false},
	{"short unicode escape", obj(`"reason":"\u12"`), false},
	{"bad hex", obj(`"reason":"\u12g4"`), false},
	{"bad literal", obj(`"failover":tru`), false},
	{"bad null", obj(`"x":nul`), false},
	{"single quotes", `{'provider':'p'}`, false},

	{"white space", " \t{ \"provider\" : \"p\" ,\n\"status\"\t:\r\"ok\" , \"hop\" : 3 , \"dropped\" : [ \"a\" , null ] } \r\n", true},
	{"unicode white space around", "\u00a0\u2003{\"provider\":\"p\",\"status\":\"ok\"}\u0085", true},
	{"unicode white space inside", "{\"provider\":\u00a0\"p\",\"status\":\"ok\"}", false},
	{"vertical tab inside", "{\"provider\":\v\"p\",\"status\":\"ok\"}", false},

	{"int zero negative", obj(`"hop":-0,"attempt":-7`), true},
	{"int 18 digits", obj(`"tokens_in":999999999999999999,"tokens_out":-999999999999999999`), true},
	{"int max", obj(`"tokens_in":9223372036854775807`), false},
	{"int min", obj(`"tokens_in":-9223372036854775808`), false},
	{"int overflow", obj(`"tokens_in":9223372036854775808`), false},
	{"int with fraction", obj(`"hop":1.5`), false},
	{"int with zero fraction", obj(`"hop":1.0`), false},
	{"int with exponent", obj(`"tokens_in":1e3`), false},
	{"int as string", obj(`"hop":"1"`), false},
	{"int leading zero", obj(`"hop":01`), false},
	{"int plus", obj(`"hop":+1`), false},
	{"int minus alone", obj(`"hop":-`), false},
	{"float forms", obj(`"seconds":0.4,"wait_seconds":-12.5,"cost":0,"retry_after_s":-0`), true},
	{"float exponents", obj(`"seconds":1e3,"wait_seconds":1.5E-3,"cost":2e+2,"retry_after_s":-0.0`), true},
	{"float 15 digits", obj(`"cost":0.123456789012345,"seconds":123456789012345`), true},
	{"float many digits", obj(`"cost":0.30000000000000004441,"seconds":12345678901234567890`), true},
	{"float halfway", obj(`"cost":9007199254740993,"seconds":0.1000000000000000055511151231257827`), true},
	{"float tiny", obj(`"cost":1e-400,"seconds":4.9e-324`), true},
	{"float huge", obj(`"cost":1e400`), false},
	{"float no digits after point", obj(`"cost":1.`), false},
	{"float no leading digit", obj(`"cost":.5`), false},
	{"float bare exponent", obj(`"cost":1e`), false},
	{"float as string", obj(`"cost":"1"`), false},
	{"bools", obj(`"failover":true`), true},
	{"bool false", obj(`"failover":false`), true},
	{"bool as string", obj(`"failover":"true"`), false},
	{"bool as number", obj(`"failover":1`), false},

	{"time without millis", obj(`"time":"2025-06-01T12:00:00Z"`), true},
	{"time with nanos", obj(`"time":"2025-06-01T12:00:00.123456789Z"`), true},
	{"time with offset", obj(`"time":"2025-06-01T12:00:00.000+02:00"`), true},
	{"time with zero offset", obj(`"time":"2025-06-01T12:00:00.000+00:00"`), true},
	{"time leap day", obj(`"time":"2024-02-29T23:59:59.999Z"`), true},
	{"time not a leap day", obj(`"time":"2025-02-29T00:00:00.000Z"`), false},
	{"time 1900 not leap", obj(`"time":"1900-02-29T00:00:00.000Z"`), false},
	{"time 2000 leap", obj(`"time":"2000-02-29T00:00:00.000Z"`), true},
	{"time hour 24", obj(`"time":"2025-06-01T24:00:00.000Z"`), false},
	{"time second 60", obj(`"time":"2025-06-01T23:59:60.000Z"`), false},
	{"time month 13", obj(`"time":"2025-13-01T00:00:00.000Z"`), false},
	{"time day 31 in june", obj(`"time":"2025-06-31T00:00:00.000Z"`), false},
	{"time lower t", obj(`"time":"2025-06-01t12:00:00.000Z"`), false},
	{"time comma", obj(`"time":"2025-06-01T12:00:00,000Z"`), true},
	{"time one-digit hour", obj(`"time":"2025-06-01T1:00:00Z"`), true},
	{"time sign in digits", obj(`"time":"2025-06-01T12:00:0-.000Z"`), false},
	{"time date only", obj(`"time":"2025-06-01"`), false},
	{"time as number", obj(`"time":1748779200`), false},
	{"time as object", obj(`"time":{}`), false},
	{"time empty", obj(`"time":""`), false},

	{"case-folded key", `{"Provider":"p","STATUS":"ok"}`, false},
	{"case-folded key after exact", `{"provider":"a","Provider":"b","status":"ok"}`, false},
	{"case-folded underscore key", obj(`"Tokens_In":5`), false},
	{"key like a field", obj(`"tokens-in":5,"tokensin":6,"provider2":"x"`), true},
	{"escaped key", `{"\u0070rovider":"p","status":"ok"}`, false},
	{"non-ASCII key", obj(`"ſtatus":"x"`), false},
	{"kelvin key", obj(`"\u212aind":"x"`), false},
	{"repeated key", `{"provider":"a","provider":"b","status":"ok"}`, false},
	{"repeated key null", obj(`"hop":2,"hop":null`), false},
	{"repeated dropped", obj(`"dropped":["a","b"],"dropped":[null]`), false},

	{"dropped empty", obj(`"dropped":[]`), true},
	{"dropped with null", obj(`"dropped":["a",null,"b"]`), true},
	{"dropped escaped", obj(`"dropped":["\u0061\n"]`), true},
	{"dropped not a list", obj(`"dropped":"a"`), false},
	{"dropped numbers", obj(`"dropped":[1]`), false},
	{"dropped nested", obj(`"dropped":[["a"]]`), false},
	{"dropped torn", obj(`"dropped":["a",]`), false},
	{"string as number", obj(`"model":5`), false},
	{"string as list", obj(`"model":["m"]`), false},
	{"string as bool", obj(`"route":true`), false},
}

func TestParseLine_MatchesEncodingJSON(t *testing.T) {
	for _, tc := range parseLineCases {
		t.Run(tc.name, func(t *testing.T) {
			checkParseLine(t, []byte(tc.line))
			if got := fastAccepts(tc.line); got != tc.fast {
				t.Errorf("scanner reads it itself: %v, want %v", got, tc.fast)
			}
		})
	}
}

func TestParseLine_FillsEveryField(t *testing.T) {
	got, err := ParseLine([]byte(fullLine))
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.Record{
		Time:      time.Date(2025, 6, 1, 10, 1, 0, 123e6, time.UTC),
		RequestID: "r02", Route: "default", Provider: "groq", Model: "llama",
		Hop: 1, Attempt: 2, Failover: true, Status: "http_429", Kind: "transient",
		Scope: "target", Action: "failover", Phase: "none",
		TokensIn: 1200, TokensOut: 34, TokensCacheRead: 1000, TokensCacheWrite: 200,
		Seconds: 0.1, WaitSeconds: 2.5, RetryAfterS: 30, Cost: 0.00012,
		Reason: "rate limited", Dropped: []string{"logprobs", "seed"},
	}
	if diff := cmp.Diff(want, got, sameRecord); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseLine_ReadsWhatLedgerWrites(t *testing.T) {
	recs := []ledger.Record{
		{},
		{Time: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), Provider: "p", Status: "ok"},
		{Time: time.Date(2025, 6, 1, 12, 0, 0, 999e6, time.FixedZone("x", 3600)), RequestID: "r", Route: "a/b",
			Provider: "p", Model: "m", Hop: 3, Attempt: 2, Failover: true, Status: "http_503", Kind: "transient",
			Scope: "endpoint", Action: "retry", Phase: "unknown", TokensIn: -1, TokensOut: math.MaxInt64,
			TokensCacheRead: 7, TokensCacheWrite: 8, Seconds: 1e-9, WaitSeconds: math.MaxFloat64,
			RetryAfterS: math.SmallestNonzeroFloat64, Cost: 1.0 / 3, Reason: "<html> & \"quotes\" \u2028 é \x01",
			Dropped: []string{"a", ""}},
	}
	for i, rec := range recs {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkParseLine(t, b) })
	}
}

func TestParseLine_TestdataNeedsNoFallback(t *testing.T) {
	data, err := os.ReadFile("testdata/ledger.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		checkParseLine(t, line)
		if _, err := parseOracle(line); err == nil && !fastAccepts(string(line)) {
			t.Errorf("line %d: left to encoding/json: %s", i+1, line)
		}
	}
}

func TestParseLine_SharesWordsBetweenLines(t *testing.T) {
	a, _ := ParseLine([]byte(fullLine))
	b, _ := ParseLine([]byte(fullLine))
	if a.RequestID == "" || a.Status == "" || a.Reason == "" {
		t.Fatalf("empty fields: %+v", a)
	}
	// Whatever state each call borrowed, the values are equal; with the
	// same state they are the same memory.
	st := newScanState()
	var x, y ledger.Record
	if !st.record([]byte(fullLine), &x) || !st.record([]byte(fullLine), &y) {
		t.Fatal("scanner declined")
	}
	if a.Status != b.Status || x.Status != y.Status {
		t.Fatal("values differ")
	}
	if unsafe.StringData(x.Status) != unsafe.StringData(y.Status) || unsafe.StringData(x.Reason) != unsafe.StringData(y.Reason) {
		t.Error("status and reason are not shared")
	}
}

func TestParseLine_AllocatesOnlyTheRequestID(t *testing.T) {
	lines := [][]byte{[]byte(fullLine), []byte(strings.Replace(fullLine, `"r02"`, `"r03"`, 1))}
	st := newScanState()
	var rec ledger.Record
	for _, l := range lines {
		st.record(l, &rec) // fill the words
	}
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		rec = ledger.Record{}
		if !st.record(lines[n%2], &rec) {
			t.Fatal("scanner declined")
		}
		n++
	})
	// The request id changes every line; dropped is a new slice.
	if allocs > 2 {
		t.Errorf("%v allocations per line, want at most 2", allocs)
	}
}

func TestScanState_InternIsBounded(t *testing.T) {
	st := newScanState()
	for i := range 3 * maxInterned {
		st.intern([]byte(fmt.Sprint("word", i)))
	}
	if len(st.words) > maxInterned {
		t.Errorf("%d words kept, want at most %d", len(st.words), maxInterned)
	}
	long := bytes.Repeat([]byte("x"), maxInternLen+1)
	if st.intern(long); len(st.words) > maxInterned {
		t.Error("long word kept")
	}
	if _, ok := st.words[string(long)]; ok {
		t.Error("long word kept")
	}
}

func TestExactFloat_MatchesParseFloat(t *testing.T) {
	for _, s := range []string{"0", "-0", "0.1", "0.2", "0.3", "1.7976931348623", "123456789012345", "0.000000000000001",
		"9.99999999999999", "-0.00012", "0.0000000000000000000001", "100000000000000", "4.35", "2.675", "0.1234567890123"} {
		sc := lineScanner{b: []byte(s)}
		got, ok := sc.exactFloat()
		var want float64
		fmt.Sscan(s, &want)
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("exactFloat(%s) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"1e5", "1.5E-3", "1234567890123456", "0.1234567890123456", "0.00000000000000000000001",
		"01", "-", "1.", ".5", "-01.5", ""} {
		sc := lineScanner{b: []byte(s)}
		if _, ok := sc.exactFloat(); ok {
			t.Errorf("exactFloat(%s) did not decline", s)
		}
	}
}

// benchLines are lines shaped as BenchmarkSummarize1M's.
func benchLines(n int) [][]byte {
	lines := make([][]byte, n)
	statuses := []string{"ok", "ok", "ok", "http_429", "skipped_parked", "net_timeout"}
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"time":"2025-06-01T10:%02d:%02d.%03dZ","request_id":"req-%06d","route":"default","provider":"prov%d","model":"model-%d","hop":0,"attempt":1,"failover":false,"status":%q,"kind":"","action":"return","phase":"committed","tokens_in":%d,"tokens_out":%d,"seconds":%.3f,"wait_seconds":0,"cost":0.00012,"reason":"a reason"}`,
			i/60%60, i%60, i%1000, i, i%5, i%3, statuses[i%len(statuses)], 100+i%50, 20+i%7, 0.2+float64(i%97)/20)
	}
	return lines
}

func BenchmarkParseLine(b *testing.B) {
	lines := benchLines(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ParseLine(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLine_EncodingJSON(b *testing.B) {
	lines := benchLines(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := parseOracle(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseLine_Concurrent(t *testing.T) {
	lines := benchLines(200)
	want := make([]ledger.Record, len(lines))
	for i, l := range lines {
		want[i], _ = parseOracle(l)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range lines {
				i := (i + g*50) % len(lines)
				got, err := ParseLine(lines[i])
				if err != nil || !cmp.Equal(want[i], got, sameRecord) {
					t.Errorf("line %d: %+v, %v", i, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A field added to ledger.Record must be added to the scanner too, or the
// scanner would drop it where encoding/json fills it.
func TestFieldNames_MatchLedgerRecord(t *testing.T) {
	typ := reflect.TypeFor[ledger.Record]()
	var names []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	if diff := cmp.Diff(names, fieldNames[:]); diff != "" {
		t.Errorf("fieldNames differ from ledger.Record's (-record +scanner):\n%s", diff)
	}
}
