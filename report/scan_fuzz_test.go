package report

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// FuzzParseLine holds ParseLine to encoding/json (parseOracle): both accept
// or both reject a line, with the same error; when they accept, every field
// is the same, and none shares memory with the line.
func FuzzParseLine(f *testing.F) {
	data, err := os.ReadFile("testdata/ledger.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		f.Add(l)
	}
	// Lines of report_test.go.
	f.Add([]byte(`{"provider":"p","status":"http_1","kind":"wall","seconds":-1e308,"tokens_in":-5}`))
	f.Add([]byte(`{"provider":"p","status":"ok","seconds":NaN}`))
	f.Add([]byte(`{"provider":"p","model":"m","status":"ok","reason":"` + strings.Repeat("x", 300) + `"}`))
	f.Add([]byte(`{"provider":"p","model":"m","status":"ok","seconds":1}`))
	f.Add([]byte("0\n0"))
	for _, l := range benchLines(4) {
		f.Add(l)
	}
	for _, tc := range parseLineCases {
		f.Add([]byte(tc.line))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		f.Add(randomLine(r))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkParseLine(t, line)
	})
}

// TestParseLine_RandomLines holds ParseLine to encoding/json on lines built
// at random from ledger fields, unknown keys, odd values and white space,
// some of them cut short: a structured complement to FuzzParseLine.
func TestParseLine_RandomLines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	fast := 0
	for range n {
		line := randomLine(r)
		checkParseLine(t, line)
		if fastAccepts(string(line)) {
			fast++
		}
	}
	t.Logf("the scanner read %d of %d lines itself", fast, n)
	if fast < n/4 {
		t.Errorf("the scanner read only %d of %d lines itself", fast, n)
	}
}

// Values for randomLine: those of each kind that encoding/json reads
// into a ledger.Record's field of that kind, then odd ones.
var (
	goodStrings = []string{`""`, `"ok"`, `"groq"`, `"http_429"`, `"a reason"`, `"say \"hi\""`, `"\\ \/ \b\f\n\r\t"`,
		`"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`, `"\ud83d\ud83d\ude00"`, `"héllo ✓"`,
		"\"\xff\xfe\"", "\"\xed\xa0\x80\"", "\"\xe4\xb8\"", `"0123456789abcdefghijklmnop"`, "null"}
	goodTimes = []string{`"2025-06-01T10:00:00.000Z"`, `"2025-06-01T10:00:00Z"`, `"2025-06-01T10:00:00.5+02:00"`,
		`"2024-02-29T23:59:59.999Z"`, "null"}
	goodInts   = []string{"0", "-0", "1", "-1", "7", "123456789012345678", "-999999999999999999", "9223372036854775807", "null"}
	goodFloats = []string{"0", "-0", "1.5", "0.4", "-12.25", "1e3", "1E-3", "2e+2", "1.0", "0.00012", "123456789012345",
		"0.30000000000000004441", "4.9e-324", "null"}
	goodBools = []string{"true", "false", "null"}
	goodLists = []string{"[]", "null", `["a",null,"b"]`, `[ "seed" , "logprobs" ]`}
	oddValues = []string{`"\x"`, `"\u12"`, "\"a\x01\"", `"2025-02-29T00:00:00.000Z"`, `"2025-06-01T24:00:00.000Z"`,
		"9223372036854775808", "1e400", "01", "-", "1.", ".5", "+1", "1e", "tru", "nul", "{}", `["a",1]`, `[["a"]]`,
		`{"a":[1,{"b":null}],"c":"\u0041"}`, `[true,false,-1.5e3,[]]`, `{"a":}`, `[1,]`, `"x"`, "1.5", "true"}
	oddKeys = []string{"Provider", "STATUS", "Tokens_In", "tokens-in", "extra", "v", `\u0070rovider`, "ſtatus", "x"}
)

// goodValues returns the values encoding/json reads into field f.
func goodValues(f int) []string {
	switch f {
	case fieldTime:
		return goodTimes
	case fieldHop, fieldAttempt, fieldTokensIn, fieldTokensOut, fieldTokensCacheRead, fieldTokensCacheWrite:
		return goodInts
	case fieldSeconds, fieldWaitSeconds, fieldRetryAfterS, fieldCost:
		return goodFloats
	case fieldFailover, fieldDegraded:
		return goodBools
	case fieldDropped:
		return goodLists
	}
	return goodStrings
}

// randomLine builds a line of ledger fields, mostly in detour's order,
// with as many odd keys, values and white space as the line's oddness.
func randomLine(r *rand.Rand) []byte {
	odd := []int{0, 0, 50, 10, 2}[r.IntN(5)] // 1 in odd is odd; 0: none
	isOdd := func() bool { return odd > 0 && r.IntN(odd) == 0 }
	space := func() string {
		switch {
		case isOdd():
			return []string{"\v", "\u00a0"}[r.IntN(2)]
		case r.IntN(10) == 0:
			return []string{" ", "\t", "\n", "\r\n "}[r.IntN(4)]
		}
		return ""
	}
	var b bytes.Buffer
	b.WriteString(space() + "{")
	next := r.IntN(3)
	for i := 0; next < fieldCount || i < 2; i++ {
		if i > 0 {
			b.WriteString(space() + "," + space())
		}
		f := next % fieldCount
		next += 1 + r.IntN(2)
		if isOdd() {
			f = r.IntN(fieldCount) // anywhere, maybe again
		}
		key := fieldNames[f]
		if isOdd() {
			key = oddKeys[r.IntN(len(oddKeys))]
		}
		vals := goodValues(f)
		val := vals[r.IntN(len(vals))]
		if isOdd() {
			val = oddValues[r.IntN(len(oddValues))]
		}
		b.WriteString(`"` + key + `"` + space() + ":" + space() + val)
	}
	b.WriteString(space() + "}" + space())
	line := b.Bytes()
	if isOdd() {
		line = line[:r.IntN(len(line)+1)] // a torn line
	}
	return line
}
