package report

// Reading many ledgers as one, in time order: walls are told apart by the
// order of a target's lines (walls.go), and two ledgers written at the
// same time (two replicas of a gateway, or rotated files given in any
// order) must interleave as their attempts did.

import (
	"container/heap"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"github.com/detourhq/detour/ledger"
)

// maxSeconds bounds the seconds a line's end is placed by: a ledger
// written by something else may say anything.
const maxSeconds = 24 * 60 * 60

// lineSeconds is rec's seconds as a duration, bounded to [0, a day].
func lineSeconds(rec *ledger.Record) time.Duration {
	s := rec.Seconds
	if !(s > 0) { // NaN too
		return 0
	}
	return time.Duration(math.Min(s, maxSeconds) * float64(time.Second))
}

// recordEnd is when rec's attempt ended: its time (the start) plus its
// seconds. A ledger writes each line when its attempt ends, so a file's
// lines come in the order of their ends.
func recordEnd(rec *ledger.Record) time.Time { return rec.Time.Add(lineSeconds(rec)) }

// stream is one input being read in a pass: its next record selected, and
// when that attempt ended.
type stream struct {
	i     int // the input's place among those given, to break ties
	l     *lines
	close func() error
	rec   ledger.Record
	end   time.Time
}

// streamHeap orders the open streams by the end of their next record.
type streamHeap []*stream

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	if c := h[i].end.Compare(h[j].end); c != 0 {
		return c < 0
	}
	return h[i].i < h[j].i
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)   { *h = append(*h, x.(*stream)) }
func (h *streamHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// readMerged reads ins into s in one pass (the first, or one reading the
// same bytes again), the records f selects merged across the inputs by
// when their attempts ended, as one ledger written by them all would
// hold them. An input is opened only once the merge reaches the end of
// its first record (its peek), so rotated files are read one or two at a
// time, not all open at once; one whose first record is unknown opens at
// once.
func readMerged(ins []*input, first bool, o Options, f Filter, s *Summary) (err error) {
	waiting := make([]int, len(ins))
	for i := range waiting {
		waiting[i] = i
	}
	sort.SliceStable(waiting, func(a, b int) bool { return ins[waiting[a]].first.Before(ins[waiting[b]].first) })
	var h streamHeap
	defer func() {
		for _, st := range h {
			st.close()
		}
	}()
	for {
		for len(waiting) > 0 && (len(h) == 0 || !ins[waiting[0]].first.After(h[0].end)) {
			i := waiting[0]
			waiting = waiting[1:]
			st, err := openStream(ins[i], i, first, o)
			if err != nil {
				return err
			}
			ok, err := s.nextRecord(st.l, f, &st.rec)
			if err != nil || !ok {
				if cerr := st.close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
				continue
			}
			st.end = recordEnd(&st.rec)
			heap.Push(&h, st)
		}
		if len(h) == 0 {
			return nil
		}
		st := h[0]
		s.Add(&st.rec)
		ok, err := s.nextRecord(st.l, f, &st.rec)
		if err != nil {
			return err
		}
		if ok {
			st.end = recordEnd(&st.rec)
			heap.Fix(&h, 0)
			continue
		}
		heap.Pop(&h)
		if err := st.close(); err != nil {
			return err
		}
	}
}

func openStream(in *input, i int, first bool, o Options) (*stream, error) {
	r, closeFn, err := in.open(first, o)
	if err != nil {
		return nil, err
	}
	l, err := newLines(r, in.src.Name)
	if err != nil {
		closeFn()
		return nil, err
	}
	return &stream{i: i, l: l, close: closeFn}, nil
}

// peekLines is the most lines peek reads for a record.
const peekLines = 64

// peek notes the end of the first record of in's file (in its first
// peekLines lines), and the file, so that the first pass reads the same
// one. A file that cannot be read is left to the pass to say so.
func (in *input) peek() error {
	f, err := os.Open(in.src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if in.info, err = f.Stat(); err != nil {
		return err
	}
	l, err := newLines(f, in.src.Name)
	if err != nil {
		return nil
	}
	for range peekLines {
		line, tooLong, err := l.next()
		if err != nil {
			return nil
		}
		if tooLong || isBlank(line) {
			continue
		}
		if rec, err := ParseLine(line); err == nil {
			in.first = recordEnd(&rec)
			return nil
		}
	}
	return nil
}

// open opens in for a pass. The first reads the source and notes what
// the later ones need; a later one reads the same bytes again. close ends
// the pass's reading, and for a later pass says when the source turned
// out shorter than the first read it.
func (in *input) open(first bool, o Options) (r io.Reader, close func() error, err error) {
	if first {
		return in.openFirst(o)
	}
	name := in.src.Name
	var closeFile func() error
	switch {
	case in.spool != nil:
		if _, err := in.spool.f.Seek(0, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("%s: reading its copy again: %w", name, err)
		}
		r = in.spool.f
	case in.file != nil:
		if _, err := in.file.Seek(in.start, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("%s: reading it again: %w", name, err)
		}
		r = in.file
	default:
		fh, err := os.Open(in.src.Path)
		if err != nil {
			return nil, nil, err
		}
		info, err := fh.Stat()
		if err != nil {
			fh.Close()
			return nil, nil, err
		}
		if !os.SameFile(info, in.info) {
			fh.Close()
			return nil, nil, fmt.Errorf("%s was replaced while report read it (rotated?): run report again", name)
		}
		r, closeFile = fh, fh.Close
	}
	cr := &countingReader{r: io.LimitReader(r, in.n)}
	return cr, func() error {
		if closeFile != nil {
			closeFile()
		}
		if cr.n != in.n {
			return fmt.Errorf("%s is shorter than when report first read it (%d bytes, then %d: truncated?): run report again",
				name, in.n, cr.n)
		}
		return nil
	}, nil
}

func (in *input) openFirst(o Options) (io.Reader, func() error, error) {
	src := in.src
	if src.Path != "" {
		f, err := os.Open(src.Path)
		if err != nil {
			return nil, nil, err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		if in.info != nil && !os.SameFile(info, in.info) {
			f.Close()
			return nil, nil, fmt.Errorf("%s was replaced while report read it (rotated?): run report again", src.Name)
		}
		in.info = info
		cr := &countingReader{r: f}
		return cr, func() error { in.n = cr.n; return f.Close() }, nil
	}
	r := src.R
	if f, ok := r.(*os.File); ok && o.Top > 0 {
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			if start, err := f.Seek(0, io.SeekCurrent); err == nil {
				in.file, in.info, in.start = f, info, start
			}
		}
	}
	if in.file == nil && o.Top > 0 {
		in.spool = newSpool(o.TempDir)
		r = io.TeeReader(r, in.spool)
	}
	cr := &countingReader{r: r}
	return cr, func() error { in.n = cr.n; return nil }, nil
}
