package report

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/ledger"
)

// MaxUnreadableShown is how many unreadable lines a Summary remembers by
// place (file:line); the rest are only counted.
const MaxUnreadableShown = 3

// Filter selects the records a Summary counts. Its zero value selects all.
type Filter struct {
	// Since and Until bound the record's time: Since inclusive, Until
	// exclusive; a zero time does not bound.
	Since, Until time.Time
	// Route keeps only records of this route; "" keeps all.
	Route string
	// Provider keeps only records of this provider; "" keeps all.
	Provider string
}

// Match reports whether f selects rec.
func (f Filter) Match(rec *ledger.Record) bool {
	if !f.Since.IsZero() && rec.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !rec.Time.Before(f.Until) {
		return false
	}
	if f.Route != "" && rec.Route != f.Route {
		return false
	}
	if f.Provider != "" && rec.Provider != f.Provider {
		return false
	}
	return true
}

// targetKey names a target without building its "provider/model" string.
type targetKey struct{ provider, model string }

// targetAcc is what a Summary keeps for one target.
type targetAcc struct {
	key           targetKey
	calls         int
	answers       int
	stalled       int
	lastResort    int
	failures      map[string]int
	scopes        map[string]int
	skips         map[string]int
	probes        int
	probesFailed  int
	failoversIn   int
	failoversOut  int
	degraded      int
	tokensIn      int64
	tokensOut     int64
	cost          float64
	latency       Histogram
	wall          int // index into Summary.walls of the open wall, or -1
	first, latest time.Time
}

// Summary accumulates ledger records. Feed it with Add, AddLine, Summarize or
// SummarizeFile (any number of readers), then call Report. Memory is bounded
// by the number of targets, statuses and walls, not by the number of lines.
// Feed files in time order: walls are opened and closed in the order lines
// arrive.
type Summary struct {
	lines      int
	matched    int
	unreadable int
	where      []string
	targets    map[targetKey]*targetAcc
	walls      []Wall
	series     seriesAcc                    // per hour and per route (series.go)
	heads      map[string]map[targetKey]int // per route, hop-0 records by target
	latest     time.Time                    // the latest record's time
}

// NewSummary returns an empty Summary.
func NewSummary() *Summary {
	return &Summary{targets: make(map[targetKey]*targetAcc)}
}

// ParseLine parses one ledger line into a record, every field filled as
// json.Unmarshal would fill it. It fails on a line that is not a JSON
// object, is not valid JSON for a ledger.Record, or has no provider or
// status. The record never refers to b, which the caller may reuse. Safe
// for concurrent use.
func ParseLine(b []byte) (ledger.Record, error) {
	var rec ledger.Record
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return rec, errors.New("not a JSON object")
	}
	if !scanRecord(b, &rec) {
		// The scanner leaves what it does not read exactly as
		// encoding/json does (invalid JSON, odd keys, ...) to it.
		var slow ledger.Record // apart from rec, which stays on the stack
		if err := json.Unmarshal(b, &slow); err != nil {
			return ledger.Record{}, err
		}
		rec = slow
	}
	if rec.Provider == "" || rec.Status == "" {
		return rec, errors.New("not a ledger record: no provider or status")
	}
	return rec, nil
}

// AddLine parses one line and adds its record when f selects it. A blank line
// is ignored; an unreadable one is counted, with where ("file:line") kept for
// the first few, and its error returned for information only.
func (s *Summary) AddLine(b []byte, f Filter, where string) error {
	err := s.addLine(b, f)
	if err != nil {
		s.noteUnreadable(where)
	}
	return err
}

func (s *Summary) addLine(b []byte, f Filter) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	s.lines++
	rec, err := ParseLine(b)
	if err != nil {
		s.unreadable++
		return err
	}
	if f.Match(&rec) {
		s.Add(&rec)
	}
	return nil
}

func (s *Summary) noteUnreadable(where string) {
	if len(s.where) < MaxUnreadableShown {
		s.where = append(s.where, where)
	}
}

// Add counts one record, unfiltered.
func (s *Summary) Add(rec *ledger.Record) {
	s.matched++
	s.series.add(rec)
	if rec.Time.After(s.latest) {
		s.latest = rec.Time
	}
	if rec.Hop == 0 && rec.Route != "" && !strings.HasPrefix(rec.Status, "probe_") {
		if s.heads == nil {
			s.heads = map[string]map[targetKey]int{}
		}
		m := s.heads[rec.Route]
		if m == nil {
			m = map[targetKey]int{}
			s.heads[rec.Route] = m
		}
		m[targetKey{rec.Provider, rec.Model}]++
	}
	k := targetKey{rec.Provider, rec.Model}
	t := s.targets[k]
	if t == nil {
		t = &targetAcc{key: k, failures: map[string]int{}, scopes: map[string]int{}, skips: map[string]int{}, wall: -1}
		s.targets[k] = t
	}
	if t.first.IsZero() || rec.Time.Before(t.first) {
		t.first = rec.Time
	}
	if rec.Time.After(t.latest) {
		t.latest = rec.Time
	}
	t.tokensIn += int64(rec.TokensIn)
	t.tokensOut += int64(rec.TokensOut)
	t.cost += rec.Cost
	if rec.Failover && rec.Attempt <= 1 && rec.Status != ledger.StatusLastResort && !strings.HasPrefix(rec.Status, "skipped_") &&
		!strings.HasPrefix(rec.Status, "probe_") {
		t.failoversIn++ // the walk came here from another target and sent
	}
	if rec.Action == "failover" || rec.Action == "fallback" {
		t.failoversOut++ // and left it for another
	}
	switch st := rec.Status; {
	case st == ledger.StatusProbeOK || st == ledger.StatusProbeFailed:
		// Off the billing path: neither a call nor an answer.
		t.probes++
		if st == ledger.StatusProbeFailed {
			t.probesFailed++
		}
		return
	case strings.HasPrefix(st, "skipped_"):
		t.skips[st]++
		return
	case st == ledger.StatusLastResort:
		t.lastResort++
		return
	case st == ledger.StatusOK:
		t.calls++
		t.answers++
		if rec.Degraded {
			t.degraded++
		}
		t.latency.Add(rec.Seconds)
		if t.wall >= 0 {
			w := &s.walls[t.wall]
			end := rec.Time
			w.End = &end
			w.Open = false
			w.Seconds = end.Sub(w.Start).Seconds()
			t.wall = -1
		}
	default:
		t.calls++
		if st == ledger.StatusClientStalled {
			t.stalled++
		}
		t.failures[st]++
		if rec.Scope != "" {
			t.scopes[rec.Scope]++
		}
		if rec.Kind == "wall" && t.wall < 0 {
			t.wall = len(s.walls)
			s.walls = append(s.walls, Wall{Target: k.provider + "/" + k.model, Start: rec.Time,
				Open: true, Status: st, Reason: rec.Reason})
		}
	}
}

// Summarize reads JSON lines from r into s, counting those f selects. It
// never stops at a bad line; it returns only a read error.
func Summarize(r io.Reader, f Filter, s *Summary) error {
	return s.read(r, "line", f)
}

// SummarizeFrom is Summarize for a named stream (standard input, a pipe):
// plain JSON lines or gzip, told by its first bytes, as SummarizeFile; its
// unreadable lines are named name:N.
func SummarizeFrom(r io.Reader, name string, f Filter, s *Summary) error {
	return s.read(r, name, f)
}

// SummarizeFile reads the ledger at path into s: plain JSON lines or gzip
// (told by its first bytes, whatever its name). A gzip stream cut short
// ends the file like a torn last line. Unreadable lines are named path:N.
func SummarizeFile(path string, f Filter, s *Summary) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	return s.read(fh, path, f)
}

func (s *Summary) read(r io.Reader, name string, f Filter) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	var long []byte
	tooLong := false
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) <= ledger.MaxLineBytes {
				long = append(long, chunk...)
			} else {
				tooLong = true
			}
			continue
		}
		line := chunk
		if len(long) > 0 || tooLong {
			line = append(long, chunk...)
		}
		if len(line) > 0 {
			n++
			if tooLong {
				s.lines++
				s.unreadable++
				s.noteUnreadable(name + ":" + strconv.Itoa(n))
			} else if s.addLine(line, f) != nil {
				s.noteUnreadable(name + ":" + strconv.Itoa(n))
			}
		}
		long, tooLong = long[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func strconvAtoi(s string) (int, error) { return strconv.Atoi(s) }

type errBadTime string

func (e errBadTime) Error() string {
	return fmt.Sprintf("%q is neither an RFC 3339 time (2025-06-01T12:00:00Z) nor a duration back from now (24h, 90m, 7d)", string(e))
}
