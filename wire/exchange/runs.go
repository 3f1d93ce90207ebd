package exchange

// hashBase is the base of the rolling hash of runs (the 64-bit FNV prime:
// odd, so its powers never vanish modulo 2^64).
const hashBase = 1099511628211

// The bit filter of runs: one bit per value of a hash's top filterBits
// bits, so that most windows of a text cost no map look-up.
const (
	filterBits  = 14
	filterShift = 64 - filterBits
	filterWords = 1 << filterBits / 64
)

// runs finds, in a text, the windows of w bytes that are also windows of
// a few patterns: a rolling hash of each window of the text, a bit filter,
// then a map of the patterns' window hashes, and a comparison. A scan is
// linear in the text, whatever the patterns.
type runs struct {
	w    int
	tab  *[256]byte // maps each byte before hashing or comparing (case folding, or none)
	pats []string   // the patterns, mapped by tab
	at   map[uint64]runAt
	bits [filterWords]uint64 // set for the top bits of each pattern window's hash
	pow  uint64              // hashBase^(w-1)
}

// runAt is where a pattern window is: pats[pat][off:off+w].
type runAt struct{ pat, off int32 }

// init sets r to find the windows of w bytes of pats, mapped by tab. A
// pattern shorter than w has none.
func (r *runs) init(w int, tab *[256]byte, pats []string) {
	r.w, r.tab, r.at, r.pow = w, tab, make(map[uint64]runAt), 1
	for i := 1; i < w; i++ {
		r.pow *= hashBase
	}
	for pi, p := range pats {
		b := []byte(p)
		for i, c := range b {
			b[i] = tab[c]
		}
		r.pats = append(r.pats, string(b))
		if len(b) < w {
			continue
		}
		h := hashBytes(tab, b[:w])
		for off := 0; ; off++ {
			if _, ok := r.at[h]; !ok {
				r.at[h] = runAt{int32(pi), int32(off)}
			}
			r.bits[h>>filterShift/64] |= 1 << (h >> filterShift % 64)
			if off+w == len(b) {
				break
			}
			h = (h-uint64(b[off])*r.pow)*hashBase + uint64(b[off+w])
		}
	}
}

// hashBytes is the hash of window b, mapped by tab.
func hashBytes[T ~string | ~[]byte](tab *[256]byte, b T) uint64 {
	var h uint64
	for i := 0; i < len(b); i++ {
		h = h*hashBase + uint64(tab[b[i]])
	}
	return h
}

// scanRuns reports the parts of b made of windows r finds, each run of
// overlapping or touching windows as one span (b64 says which runs found
// it).
func scanRuns[T ~string | ~[]byte](r *runs, b T, b64 bool, hit func(span)) {
	w := r.w
	if w == 0 || len(b) < w {
		return
	}
	tab := r.tab
	cur := span{lo: -1, b64: b64}
	h := hashBytes(tab, b[:w])
	for i := 0; ; i++ {
		if r.bits[h>>filterShift/64]&(1<<(h>>filterShift%64)) != 0 && holds(r, h, b[i:i+w]) {
			if cur.lo >= 0 && i <= cur.hi {
				cur.hi = i + w
			} else {
				if cur.lo >= 0 {
					hit(cur)
				}
				cur.lo, cur.hi = i, i+w
			}
		}
		if i+w == len(b) {
			break
		}
		h = (h-uint64(tab[b[i]])*r.pow)*hashBase + uint64(tab[b[i+w]])
	}
	if cur.lo >= 0 {
		hit(cur)
	}
}

// holds reports whether win, whose hash is h, is a window of a pattern.
func holds[T ~string | ~[]byte](r *runs, h uint64, win T) bool {
	at, ok := r.at[h]
	if !ok {
		return false
	}
	if same(r.tab, win, r.pats[at.pat][at.off:]) {
		return true
	}
	// Two windows with one hash: look for win itself.
	for _, p := range r.pats {
		for off := 0; off+len(win) <= len(p); off++ {
			if same(r.tab, win, p[off:]) {
				return true
			}
		}
	}
	return false
}

// same reports whether win, mapped by tab, is the start of pat.
func same[T ~string | ~[]byte](tab *[256]byte, win T, pat string) bool {
	for i := 0; i < len(win); i++ {
		if tab[win[i]] != pat[i] {
			return false
		}
	}
	return true
}
