package report

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/detourhq/detour/ledger"
)

// The scanner below reads one ledger line into a ledger.Record in a single
// pass, without reflection, as json.Unmarshal into a ledger.Record would.
// It follows the contract of internal/jsonscan: false means "not handled
// here", never "invalid". It declines whatever it does not read exactly as
// encoding/json does, and ParseLine then hands the line to encoding/json,
// which gives the answer or the error. It declines:
//
//   - invalid JSON, and values of the wrong type for their field (an int
//     field given 1.5 or 1e3, a string field given a number, ...);
//   - an int with more than 18 digits and a float out of range;
//   - a key that is escaped, not ASCII, or a field's name in another case
//     ("Provider"): encoding/json matches keys ignoring case;
//   - a field given twice (encoding/json merges a repeated "dropped");
//   - an unknown value nested deeper than maxSkipDepth.
//
// Strings it decodes itself, escapes and invalid UTF-8 included, exactly as
// encoding/json does. A time in ledger.TimeLayout, UTC, it reads itself;
// any other goes to time.Time's own UnmarshalJSON, as with encoding/json.
// The tests and FuzzParseLine hold all this to encoding/json; a test holds
// fieldNames to ledger.Record's fields.
//
// The memory a parse needs besides the record (interned words, scratch)
// comes from a sync.Pool, so ParseLine stays a plain function, safe for
// concurrent use.

const (
	// maxSkipDepth is the deepest nesting of an unknown value the scanner
	// follows before it leaves the line to encoding/json.
	maxSkipDepth = 64
	// maxInternLen is the longest string value a scanState shares between
	// lines; longer ones are copied each time.
	maxInternLen = 160
	// maxInterned bounds a scanState's words; when full they are dropped
	// and gathered anew, so a stream of unique values cannot grow it.
	maxInterned = 4096
)

// Field numbers of a ledger.Record, bits of the set of keys seen.
const (
	fieldTime = iota
	fieldRequestID
	fieldRoute
	fieldProvider
	fieldModel
	fieldHop
	fieldAttempt
	fieldFailover
	fieldStatus
	fieldKind
	fieldScope
	fieldAction
	fieldPhase
	fieldTokensIn
	fieldTokensOut
	fieldTokensCacheRead
	fieldTokensCacheWrite
	fieldSeconds
	fieldWaitSeconds
	fieldRetryAfterS
	fieldCost
	fieldReason
	fieldUpstreamRequestID
	fieldPick
	fieldDropped
	fieldDegraded
	fieldCount
)

// fieldNames are the JSON names of a ledger.Record's fields, by field
// number.
var fieldNames = [fieldCount]string{
	"time", "request_id", "route", "provider", "model", "hop", "attempt", "failover",
	"status", "kind", "scope", "action", "phase", "tokens_in", "tokens_out",
	"tokens_cache_read", "tokens_cache_write", "seconds", "wait_seconds",
	"retry_after_s", "cost", "reason", "upstream_request_id", "pick", "dropped", "degraded",
}

// quotedNames are fieldNames as keys are written: `"time":`.
var quotedNames = func() (q [fieldCount]string) {
	for i, n := range fieldNames {
		q[i] = `"` + n + `":`
	}
	return q
}()

// predictedKey reads the key and colon of field next, or of one of the two
// after it (omitted when empty), as detour writes them: no white space
// between, fields in the order of ledger.Record. It returns the field, or
// -1 having read nothing.
func (s *lineScanner) predictedKey(next int) int {
	rest := s.b[s.i:]
	for f := next; f < next+3 && f < fieldCount; f++ {
		q := quotedNames[f]
		if len(rest) >= len(q) && string(rest[:len(q)]) == q {
			s.i += len(q)
			return f
		}
	}
	return -1
}

// fieldNumbers are the field numbers of fieldNames.
var fieldNumbers = func() map[string]int {
	m := make(map[string]int, fieldCount)
	for f, n := range fieldNames {
		m[n] = f
	}
	return m
}()

// fieldOf returns the field number of an exact JSON name, or -1.
func fieldOf(key []byte) int {
	if f, ok := fieldNumbers[string(key)]; ok {
		return f
	}
	return -1
}

// foldsToField reports whether an ASCII key not among fieldNames matches
// one of them ignoring case, as encoding/json would match it.
func foldsToField(key []byte) bool {
	for _, n := range fieldNames {
		if len(n) != len(key) {
			continue
		}
		i := 0
		for i < len(n) && key[i]|0x20 == n[i]|0x20 && (n[i] != '_' || key[i] == '_') {
			i++
		}
		if i == len(n) {
			return true
		}
	}
	return false
}

// scanState is the memory a parse borrows from scanStates: words shared
// between lines (status, provider, model, route... repeat on every line),
// each field's previous value (the attempts of one request follow each
// other), and scratch space. Strings are immutable, so lines parsed with
// different states may share them.
type scanState struct {
	words  map[string]string
	recent [fieldCount][recentSlots]string // recent values of each field
	buf    []byte
	list   []string
}

// recentSlots is how many recent values of each field a scanState keeps
// in front of its words, by a hash of a few of their bytes: enough for the
// statuses, providers and models of a file, most of the time.
const recentSlots = 16

var scanStates = sync.Pool{New: func() any { return newScanState() }}

func newScanState() *scanState {
	return &scanState{words: make(map[string]string, 64)}
}

// scanRecord fills *rec from the JSON object b, with nothing but JSON white
// space around it, and reports true; or it reports false, leaving *rec in
// any state, when b is not something it reads exactly as encoding/json
// does (see the comment at the top of this file).
func scanRecord(b []byte, rec *ledger.Record) bool {
	st := scanStates.Get().(*scanState)
	ok := st.record(b, rec)
	if cap(st.buf) > 64<<10 {
		st.buf = nil // a huge line's scratch is not kept for the next
	}
	scanStates.Put(st)
	return ok
}

// intern returns b as a string, shared with earlier lines when it is short.
func (st *scanState) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternLen {
		return string(b)
	}
	if w, ok := st.words[string(b)]; ok {
		return w
	}
	w := string(b)
	if len(st.words) >= maxInterned {
		clear(st.words)
	}
	st.words[w] = w
	return w
}

// share returns b, the value of field f, as a string: a recent value of f
// when it is the same, else an interned one (a request id, unique to its
// request, is copied).
func (st *scanState) share(f int, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	n := len(b)
	h := (n + 3*int(b[0]) + 5*int(b[n/2]) + 7*int(b[n-1])) % recentSlots
	slot := &st.recent[f][h]
	if string(b) == *slot {
		return *slot
	}
	if f == fieldRequestID {
		*slot = string(b)
	} else {
		*slot = st.intern(b)
	}
	return *slot
}

// lineScanner reads the JSON in b from offset i. Each value reader starts
// at the value's first byte (white space skipped) and ends just after it.
type lineScanner struct {
	b  []byte
	i  int
	st *scanState
}

func (st *scanState) record(b []byte, rec *ledger.Record) bool {
	s := lineScanner{b: b, st: st}
	s.ws()
	if !s.eat('{') {
		return false
	}
	s.ws()
	if s.eat('}') {
		return s.end()
	}
	var seen uint32 // bits of the fields read
	next := 0       // the field expected next
	for {
		f := s.predictedKey(next)
		if f < 0 {
			var ok bool
			if f, ok = s.fieldKey(next); !ok {
				return false
			}
		}
		if f >= 0 {
			bit := uint32(1) << f
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			next = f + 1
		}
		s.ws()
		if !s.field(f, rec) {
			return false
		}
		s.ws()
		if !s.eat(',') {
			return s.eat('}') && s.end()
		}
	}
}

// fieldKey reads a key and its colon, where predictedKey found none, and
// returns the key's field number, or -1 for a key that is no field's;
// false for a key left to encoding/json.
func (s *lineScanner) fieldKey(next int) (int, bool) {
	s.ws()
	if f := s.predictedKey(next); f >= 0 {
		return f, true
	}
	key, ok := s.key()
	if !ok {
		return 0, false
	}
	s.ws()
	if !s.eat(':') {
		return 0, false
	}
	f := fieldOf(key)
	if f < 0 && foldsToField(key) {
		return 0, false
	}
	return f, true
}

// end reports whether only white space is left.
func (s *lineScanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// field reads the value of field f (-1: an unknown key) into rec.
func (s *lineScanner) field(f int, rec *ledger.Record) bool {
	switch f {
	case fieldTime:
		return s.time(rec)
	case fieldRequestID:
		return s.str(&rec.RequestID, fieldRequestID)
	case fieldRoute:
		return s.str(&rec.Route, fieldRoute)
	case fieldProvider:
		return s.str(&rec.Provider, fieldProvider)
	case fieldModel:
		return s.str(&rec.Model, fieldModel)
	case fieldHop:
		return s.int(&rec.Hop)
	case fieldAttempt:
		return s.int(&rec.Attempt)
	case fieldFailover:
		return s.bool(&rec.Failover)
	case fieldStatus:
		return s.str(&rec.Status, fieldStatus)
	case fieldKind:
		return s.str(&rec.Kind, fieldKind)
	case fieldScope:
		return s.str(&rec.Scope, fieldScope)
	case fieldAction:
		return s.str(&rec.Action, fieldAction)
	case fieldPhase:
		return s.str(&rec.Phase, fieldPhase)
	case fieldTokensIn:
		return s.int(&rec.TokensIn)
	case fieldTokensOut:
		return s.int(&rec.TokensOut)
	case fieldTokensCacheRead:
		return s.int(&rec.TokensCacheRead)
	case fieldTokensCacheWrite:
		return s.int(&rec.TokensCacheWrite)
	case fieldSeconds:
		return s.float(&rec.Seconds)
	case fieldWaitSeconds:
		return s.float(&rec.WaitSeconds)
	case fieldRetryAfterS:
		return s.float(&rec.RetryAfterS)
	case fieldCost:
		return s.float(&rec.Cost)
	case fieldReason:
		return s.str(&rec.Reason, fieldReason)
	case fieldUpstreamRequestID:
		return s.str(&rec.ProviderRequestID, fieldUpstreamRequestID)
	case fieldPick:
		return s.str(&rec.Pick, fieldPick)
	case fieldDropped:
		return s.strings(&rec.Dropped)
	case fieldDegraded:
		return s.bool(&rec.Degraded)
	}
	return s.skip(0)
}

// ws skips JSON white space.
func (s *lineScanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat reads the byte c.
func (s *lineScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek returns the next byte, or 0 at the end.
func (s *lineScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// lit reads the bare word w.
func (s *lineScanner) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// key reads an object key of printable ASCII without escapes; any other
// is left to encoding/json, which unescapes keys and folds their case.
func (s *lineScanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			k := s.b[s.i:j]
			s.i = j + 1
			return k, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string, the value of field f, into *dst (a copy, maybe
// shared: see scanState.share), or null, which leaves *dst as it is.
func (s *lineScanner) str(dst *string, f int) bool {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '"':
		v, ok := s.strBytes()
		if ok {
			*dst = s.st.share(f, v)
		}
		return ok
	}
	return false
}

// strBytes reads a string and returns it decoded: a slice of the line when
// it has no escapes and is ASCII, else of the scratch buffer. Either stays
// valid only until the next read.
func (s *lineScanner) strBytes() ([]byte, bool) {
	start := s.i + 1
	switch j := plainRun(s.b, start); {
	case j == len(s.b):
		return nil, false
	case s.b[j] == '"':
		s.i = j + 1
		return s.b[start:j], true
	default:
		return s.unquote(start, j)
	}
}

// plainRun returns the index of the first byte of b from j on that is not
// plain string text: '"', '\\', a control byte or non-ASCII; or len(b).
func plainRun(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		if m := special8(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return j
		}
	}
	return j
}

// special8 marks with its high bit each byte of the 8 in w (little-endian:
// the lowest is the first in memory) that plainRun stops at. A byte above
// a marked one may be marked wrongly; the lowest mark is always right.
func special8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w | w) & highs
}

// unquote decodes the string that starts at b[start], plain up to b[j],
// into the scratch buffer as encoding/json does: escapes decoded, a lone
// or reversed surrogate and every byte of invalid UTF-8 turned into
// U+FFFD.
func (s *lineScanner) unquote(start, j int) ([]byte, bool) {
	b := s.b
	buf := append(s.st.buf[:0], b[start:j]...)
	defer func() { s.st.buf = buf[:0] }()
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return buf, true
		case c < 0x20:
			return nil, false
		case c < utf8.RuneSelf && c != '\\':
			buf = append(buf, c)
			j++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[j:])
			buf = utf8.AppendRune(buf, r)
			j += n
		default: // a backslash
			if j+1 >= len(b) {
				return nil, false
			}
			switch e := b[j+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := u4(b[j:])
				if !ok {
					return nil, false
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := u4(b[j:]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							buf = utf8.AppendRune(buf, d)
							j += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return nil, false
			}
			j += 2
		}
	}
	return nil, false
}

// u4 reads the escape \uXXXX at the start of b.
func u4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skipStr reads a string without decoding it, checking its escapes and
// control bytes as encoding/json does (invalid UTF-8 is let through:
// encoding/json replaces it only when it decodes).
func (s *lineScanner) skipStr() bool {
	if !s.eat('"') {
		return false
	}
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(s.b) {
				return false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := u4(s.b[j:]); !ok {
					return false
				}
				j += 5
			default:
				return false
			}
		}
	}
	return false
}

// number reads a JSON number and returns its text.
func (s *lineScanner) number() ([]byte, bool) {
	b, j := s.b, s.i
	digits := func() int {
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j < len(b) && b[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if digits() == 0 {
			return nil, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	tok := b[s.i:j]
	s.i = j
	return tok, true
}

// int reads an integer of at most 18 digits, or null (which leaves *dst).
// encoding/json fails on a fraction or an exponent in an int field.
func (s *lineScanner) int(dst *int) bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	b, j := s.b, s.i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	start, n := j, 0
	for j < len(b) && b[j]-'0' <= 9 {
		n = n*10 + int(b[j]-'0')
		j++
	}
	if d := j - start; d == 0 || d > 18 || d > 1 && b[start] == '0' {
		return false
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return false
	}
	if neg {
		n = -n
	}
	*dst, s.i = n, j
	return true
}

// float reads a number, or null (which leaves *dst), as encoding/json does:
// strconv's ParseFloat of its text, failing out of range.
func (s *lineScanner) float(dst *float64) bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	if f, ok := s.exactFloat(); ok {
		*dst = f
		return true
	}
	tok, ok := s.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// pow10 are the powers of ten a float64 holds exactly, up to 1e22.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactFloat reads a JSON number of at most 15 significant digits, at
// most 22 after the point and no exponent ("0.00012", "-3.5") as
// strconv.ParseFloat converts it, or reports false having read nothing.
// Its digits as an integer and the power of ten of its fraction are both
// exact float64s, so their quotient, one IEEE division, is the correctly
// rounded value, which is what ParseFloat returns.
func (s *lineScanner) exactFloat() (float64, bool) {
	b, j := s.b, s.i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	var m uint64
	sig := 0 // significant digits: leading zeros are not
	digits := func() int {
		k := j
		for j < len(b) && b[j]-'0' <= 9 {
			m = m*10 + uint64(b[j]-'0')
			if m != 0 {
				sig++
			}
			j++
		}
		return j - k
	}
	start := j
	if d := digits(); d == 0 || d > 1 && b[start] == '0' {
		return 0, false
	}
	k := 0
	if j < len(b) && b[j] == '.' {
		j++
		if k = digits(); k == 0 || k >= len(pow10) {
			return 0, false
		}
	}
	if sig > 15 || j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		return 0, false
	}
	f := float64(m) / pow10[k]
	if neg {
		f = -f
	}
	s.i = j
	return f, true
}

// bool reads true or false, or null (which leaves *dst).
func (s *lineScanner) bool(dst *bool) bool {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case 't':
		*dst = true
		return s.lit("true")
	case 'f':
		*dst = false
		return s.lit("false")
	}
	return false
}

// time reads the record's time as encoding/json does: null leaves it, a
// string goes as it stands (quotes and escapes) to time.Time's
// UnmarshalJSON.
func (s *lineScanner) time(rec *ledger.Record) bool {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '"':
		// A time in the layout has nothing to unescape or check.
		const n = len(`"2025-06-01T12:00:00.123Z"`)
		if len(s.b)-s.i >= n && s.b[s.i+n-1] == '"' {
			if t, ok := layoutTime(s.b[s.i+1 : s.i+n-1]); ok {
				rec.Time = t
				s.i += n
				return true
			}
		}
		start := s.i
		return s.skipStr() && rec.Time.UnmarshalJSON(s.b[start:s.i]) == nil
	}
	return false
}

// layoutTime reads b written in ledger.TimeLayout in UTC
// ("2025-06-01T12:00:00.123Z") as time.Time's UnmarshalJSON does, or
// reports false, for that to read it.
func layoutTime(b []byte) (time.Time, bool) {
	if len(b) != len("2025-06-01T12:00:00.123Z") || b[4] != '-' || b[7] != '-' || b[10] != 'T' ||
		b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	num := func(i, n int) int {
		x := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				ok = false
			}
			x = x*10 + int(c) - '0'
		}
		return x
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec, ms := num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	if !ok || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, time.UTC), true
}

// daysIn returns the number of days in month (1-12) of year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// strings reads an array of strings (a null element is "") or null (which
// leaves *dst). An empty array is an empty slice, not nil, as with
// encoding/json.
func (s *lineScanner) strings(dst *[]string) bool {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '[':
		s.i++
	default:
		return false
	}
	s.ws()
	if s.eat(']') {
		*dst = []string{}
		return true
	}
	list := s.st.list[:0]
	defer func() {
		clear(list)
		s.st.list = list[:0]
	}()
	for {
		var v string
		if !s.str(&v, fieldDropped) {
			return false
		}
		list = append(list, v)
		s.ws()
		if s.eat(',') {
			s.ws()
			continue
		}
		if !s.eat(']') {
			return false
		}
		*dst = append(make([]string, 0, len(list)), list...)
		return true
	}
}

// skip reads and discards any value, checking it as encoding/json would,
// down to maxSkipDepth levels of nesting.
func (s *lineScanner) skip(depth int) bool {
	switch s.peek() {
	case '{':
		if depth >= maxSkipDepth {
			return false
		}
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			if !s.skipStr() {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				s.ws()
				continue
			}
			return s.eat('}')
		}
	case '[':
		if depth >= maxSkipDepth {
			return false
		}
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				s.ws()
				continue
			}
			return s.eat(']')
		}
	case '"':
		return s.skipStr()
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	_, ok := s.number()
	return ok
}
