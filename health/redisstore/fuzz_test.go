package redisstore

import (
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

// Whatever Redis or the channel hands over, decoding never panics, and
// anything that is not an entry reads as no entry.
func FuzzDecode(f *testing.F) {
	e := health.Entry{Key: "a/b", State: health.Open, Until: t0, Generation: 3, Touched: t0}
	raw, _ := encode(e)
	f.Add(raw)
	f.Add(header("0123456789abcdef", "a/b") + raw)
	f.Add(header("0123456789abcdef", "") + "")
	for _, s := range []string{"", "null", "{}", "[]", `"x"`, "{", `{"state":3}`, `{"until":"yesterday"}`,
		"0123456789abcdef:99:x", "0123456789abcdef:-1:x", "0123456789abcdef:+1:x{}", "\xff\x00"} {
		f.Add(s)
	}
	s := &Store{c: config{forget: time.Minute}, origin: "fedcba9876543210",
		items: make(map[string]item), dirty: make(map[string]struct{})}
	f.Fuzz(func(t *testing.T, raw string) {
		if e, ok := decode(raw); !ok && e != (health.Entry{}) {
			t.Fatalf("decode(%q) = %+v, false: a refused value must read as no entry", raw, e)
		} else if ok {
			if _, err := encode(e); err != nil {
				t.Logf("decoded %q but cannot encode it: %v", raw, err)
			}
		}
		if origin, key, rest, ok := parseMessage(raw); ok && header(origin, key)+rest != raw {
			t.Fatalf("parseMessage(%q) = %q, %q, %q: does not put back together", raw, origin, key, rest)
		}
		s.apply(raw)
	})
}
