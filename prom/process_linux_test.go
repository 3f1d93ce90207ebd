package prom

import (
	"bytes"
	"testing"
)

func TestParseStat_CommandWithSpacesAndParentheses(t *testing.T) {
	// proc_pid_stat(5): pid (comm) state ppid ... utime(14) stime(15) ...
	// starttime(22) vsize(23) rss(24) ...
	line := "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 9 0 12345 1048576000 2560 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, ok := parseStat([]byte(line), 4096)
	if !ok {
		t.Fatal("not parsed")
	}
	want := procStats{cpuSeconds: 3.25, startUnix: 123.45, hasStart: true, vsize: 1048576000, rss: 2560 * 4096}
	if st != want {
		t.Errorf("parseStat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "1 (x S 1", "1 (x) S 1 2 3", "1 (x) S 1 4242 4242 0 -1 4194560 900 0 0 0 u 75 0 0 20 0 9 0 1 2 3"} {
		if _, ok := parseStat([]byte(bad), 4096); ok {
			t.Errorf("parseStat(%q) reads it", bad)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (detour) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 9 0 12345 1048576000 2560 0\n"))
	f.Add([]byte("1 ()) ) R 0 0 0 0 0 0 0 0 0 0 1 1 0 0 0 0 0 0 1 1 1"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseStat(b, 4096)
		if !ok {
			return
		}
		// Only what follows the command counts, whatever the command.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		again, ok := parseStat(append([]byte("7 (a (b) c) d)"), rest...), 4096)
		if !ok || again != st {
			t.Errorf("%q: %+v, but %+v with another command", b, st, again)
		}
	})
}
