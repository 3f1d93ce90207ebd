package report

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/detourhq/detour/ledger"
)

// DefaultTop is the most targets, providers and routes a report keeps
// apart, each in a row of its own, unless told otherwise (report's
// --top); the rest of each kind are folded into one "other" row. A
// hundred is more than any real deployment has (a chain holds a handful of
// targets, a busy gateway a few dozen), so a real ledger's report has no
// "other" row and is the same as without a limit; and few enough that a
// ledger of random model names (200,000 targets in 100 MB, found by a
// hostile run) still gives a table a person can read, in memory bounded
// by the rows printed rather than by the ledger.
const DefaultTop = 100

// sketchKeys is the least number of keys of each kind the first pass
// holds once a kind has more than Top (16 times Top when that is more):
// any key with more than
// records/sketchKeys records is among them (spaceSaving), and they are
// counted exactly in the second pass. 16,384 keys are about 3 MB each.
const sketchKeys = 16384

// Source is one ledger for Read: a file, or a stream read once.
type Source struct {
	// Name names the source in errors and unreadable lines (name:N): the
	// path, or "stdin".
	Name string
	// Path is the file to read; "" reads R.
	Path string
	// R is the stream read when Path is "" (standard input). When a
	// later pass needs it again, a regular file is read again from where
	// the first pass began; anything else (a pipe) was copied, as it was
	// read, into a temporary file, unlinked at once.
	R io.Reader
}

// Options say what Read counts and how much it keeps apart. The zero value
// counts every record and keeps every target, provider and route apart.
type Options struct {
	// Filter selects the records counted.
	Filter Filter
	// Top is the most targets, providers and routes kept apart; the rest
	// of each kind are folded into one "other" row (DefaultTop is the
	// command's default). 0 keeps all apart, in memory that grows with
	// them.
	Top int
	// Quotas are the declared quotas to measure use against (see
	// QuotaPeak); none when empty.
	Quotas []QuotaWatch
	// TempDir holds the copy of a stream a later pass reads again; ""
	// is os.TempDir().
	TempDir string
	// sketchKeys replaces the constant sketchKeys when set (tests).
	sketchKeys int
}

// Read summarizes srcs as one ledger: their records merged in the order
// their attempts ended, as one file written by them all would hold them
// (walls follow time across files given in any order; a file is opened
// once the merge reaches its first record). It keeps at most o.Top
// targets, providers and routes apart. When no kind has more than o.Top
// keys, it reads each source once. Else it reads them three times, in memory bounded by o.Top
// and sketchKeys rather than by the ledger: the first pass finds the
// keys with the most records (spaceSaving), the second counts those
// exactly and keeps the o.Top with the most, the third summarizes with
// every other key folded into its kind's "other" row. Every number printed
// is then exact; only how many keys a row folds may be an estimate (see
// FoldCount). Each pass reads the same bytes in the same order: a file
// that grows meanwhile is read up to where the first pass stopped, and one
// that was replaced or cut is an error.
func Read(srcs []Source, o Options) (*Summary, error) {
	s := NewSummary()
	s.top = o.Top
	if len(o.Quotas) > 0 {
		s.WatchQuotas(o.Quotas)
	}
	s.targets.limit, s.providers.limit, s.routes.limit = o.Top, o.Top, o.Top
	s.sketching = o.Top > 0
	s.sketchKeys = cmp.Or(o.sketchKeys, max(sketchKeys, 16*o.Top))
	ins := make([]*input, len(srcs))
	defer func() {
		for _, in := range ins {
			if in != nil && in.spool != nil && in.spool.f != nil {
				in.spool.f.Close()
				os.Remove(in.spool.f.Name())
			}
		}
	}()
	for i, src := range srcs {
		ins[i] = &input{src: src}
		if src.Path != "" && len(srcs) > 1 {
			if err := ins[i].peek(); err != nil {
				return nil, err
			}
		}
	}
	if err := readMerged(ins, true, o, o.Filter, s); err != nil {
		return nil, err
	}
	if s.sk == nil {
		return s, nil
	}
	for _, in := range ins {
		if in.spool != nil && in.spool.err != nil {
			return nil, fmt.Errorf("%s has more than %d targets, providers or routes, and could not be kept for a second pass (%w): give the ledger as a file, or --top 0 to keep every one apart",
				in.src.Name, o.Top, in.spool.err)
		}
	}
	c := NewSummary()
	c.countOnly = true
	c.targets.fix(s.sk.targets.keys())
	c.providers.fix(s.sk.providers.keys())
	c.routes.fix(s.sk.routes.keys())
	if err := readMerged(ins, false, o, o.Filter, c); err != nil {
		return nil, err
	}
	f := NewSummary()
	f.top = o.Top
	if len(o.Quotas) > 0 {
		f.WatchQuotas(o.Quotas)
	}
	var kt []targetKey
	var kp, kr []string
	kt, f.plan[kindTargets] = choose(&c.targets, s.sk.targets, o.Top, compareTargets)
	kp, f.plan[kindProviders] = choose(&c.providers, s.sk.providers, o.Top, strings.Compare)
	kr, f.plan[kindRoutes] = choose(&c.routes, s.sk.routes, o.Top, strings.Compare)
	f.targets.fix(kt)
	f.providers.fix(kp)
	f.routes.fix(kr)
	f.targets.countFolded, f.providers.countFolded, f.routes.countFolded = true, true, true
	if err := readMerged(ins, false, o, o.Filter, f); err != nil {
		return nil, err
	}
	return f, nil
}

// The kinds of keys a Summary keeps apart, indexes of Summary.plan.
const (
	kindTargets = iota
	kindProviders
	kindRoutes
	kinds
)

// foldPlan is what the passes before the last learnt of one kind of key.
type foldPlan struct {
	kept       int   // keys kept apart
	candidates int   // keys counted exactly in the second pass
	exact      bool  // the candidates were every key
	maxLines   int64 // no key folded has more records
	topExact   bool  // the keys kept are certainly those with the most records
}

// choose returns the top keys of counted (exact counts of the keys sk
// held), most records first, and what folding the rest means.
func choose[K comparable](counted *keyTable[K], sk *spaceSaving[K], top int, less func(a, b K) int) ([]K, foldPlan) {
	ranked := counted.ranked(less)
	n := min(top, len(ranked))
	p := foldPlan{kept: n, candidates: len(ranked), exact: !sk.evicted, maxLines: sk.floor(), topExact: true}
	if n < len(ranked) {
		p.maxLines = max(p.maxLines, ranked[n].n)
	}
	if n > 0 {
		p.topExact = p.maxLines <= ranked[n-1].n
	}
	keys := make([]K, n)
	for i := range keys {
		keys[i] = ranked[i].key
	}
	return keys, p
}

// keySketches are the first pass's spaceSavings, one per kind.
type keySketches struct {
	targets   *spaceSaving[targetKey]
	providers *spaceSaving[string]
	routes    *spaceSaving[string]
}

func (k *keySketches) add(t targetKey, provider, route string) {
	k.targets.addN(t, 1)
	k.providers.addN(provider, 1)
	k.routes.addN(route, 1)
}

// startSketch turns s, whose tables just refused a key of rec (ids ti, pi,
// ri; otherID for those refused), from summarizing to finding the keys
// with the most records: the exact counts so far seed the sketches, and
// what s had summarized is dropped (the third pass summarizes again).
func (s *Summary) startSketch(k targetKey, rec *ledger.Record, ti, pi, ri int32) {
	size := s.sketchKeys
	sk := &keySketches{newSpaceSaving[targetKey](size), newSpaceSaving[string](size), newSpaceSaving[string](size)}
	for i, key := range s.targets.keys {
		sk.targets.addN(key, s.targets.lines[i])
	}
	for i, key := range s.providers.keys {
		sk.providers.addN(key, s.providers.lines[i])
	}
	for i, key := range s.routes.keys {
		sk.routes.addN(key, s.routes.lines[i])
	}
	if ti == otherID {
		sk.targets.addN(k, 1)
	}
	if pi == otherID {
		sk.providers.addN(rec.Provider, 1)
	}
	if ri == otherID {
		sk.routes.addN(rec.Route, 1)
	}
	s.sk = sk
	s.targets, s.providers, s.routes = keyTable[targetKey]{}, keyTable[string]{}, keyTable[string]{}
	s.accs, s.other, s.clock, s.series, s.heads = nil, nil, wallClock{}, seriesAcc{}, nil
}

// input is a source as the first pass read it, for the passes after.
type input struct {
	src   Source
	file  *os.File    // a regular file given as R, read again from start
	info  os.FileInfo // of the file the first pass read (or its peek)
	start int64       // where the first pass began in a regular R
	n     int64       // bytes the first pass read
	spool *spool      // the copy of a stream that is not a regular file
	// first is when the attempt of its first record ended (its peek):
	// the merge opens it there. Zero when unknown: it opens at once.
	first time.Time
}

// firstPass reads src alone into s and notes what a later pass needs to
// read the same bytes again.
func firstPass(src Source, o Options, s *Summary) (*input, error) {
	in := &input{src: src}
	return in, readMerged([]*input{in}, true, o, o.Filter, s)
}

// again reads in's bytes once more into s, as the first pass read them.
func (in *input) again(f Filter, s *Summary) error {
	return readMerged([]*input{in}, false, Options{}, f, s)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// spool is the copy of a stream kept for the later passes: a temporary
// file, unlinked at once where the system allows (it lives until closed).
// A failure to make or write it is kept in err, never returned to the
// reader: it matters only if a later pass is needed.
type spool struct {
	f   *os.File
	err error
}

func newSpool(dir string) *spool {
	f, err := os.CreateTemp(dir, "detour-report-stdin-*")
	if err != nil {
		return &spool{err: err}
	}
	os.Remove(f.Name()) // unlinked: nothing is left behind, even on a crash
	return &spool{f: f}
}

func (w *spool) Write(p []byte) (int, error) {
	if w.err == nil {
		_, w.err = w.f.Write(p)
	}
	return len(p), nil
}
