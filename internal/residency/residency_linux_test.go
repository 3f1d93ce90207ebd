package residency

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// advised records the ranges drop asked the kernel to unmap.
type advised [][2]uintptr

func (a *advised) advise(start, length uintptr) error {
	*a = append(*a, [2]uintptr{start, length})
	return nil
}

// A static build (a real detour serve's smaps): its code and read-only
// data are dropped; its data mapping (writable, with pages of its own) and
// the mappings of no file are not.
func TestDrop_StaticBuildDropsCodeAndReadOnlyData(t *testing.T) {
	smaps := read(t, "testdata/smaps-static.txt")
	var got advised
	n, err := drop(smaps, "/usr/local/bin/detour", got.advise)
	if err != nil {
		t.Fatal(err)
	}
	want := advised{{0x400000, 0x12d5000 - 0x400000}, {0x12d5000, 0x2111000 - 0x12d5000}}
	if !equal(got, want) || n != (7672+6064)<<10 {
		t.Fatalf("drop = %d bytes, ranges %#x; want %d, %#x", n, got, (7672+6064)<<10, want)
	}
	// Another file's mappings are not this one's.
	got = nil
	if n, err := drop(smaps, "/usr/local/bin/detour2", got.advise); err != nil || n != 0 || len(got) != 0 {
		t.Fatalf("another path: %d bytes, %#x, %v", n, got, err)
	}
}

// A position-independent build relocates part of its read-only data at
// start: those pages are the process's own (Anonymous > 0), and unmapping
// them would bring back the file's, unrelocated. That mapping stays.
func TestDrop_PIEKeepsItsRelocatedReadOnlyData(t *testing.T) {
	var got advised
	n, err := drop(read(t, "testdata/smaps-pie.txt"), "/usr/lib/detour/detour-pie", got.advise)
	if err != nil {
		t.Fatal(err)
	}
	want := advised{{0x55672fed5000, 0x55672ff80000 - 0x55672fed5000}, {0x55672ff80000, 0x556730064000 - 0x55672ff80000}}
	if !equal(got, want) || n != (684+848)<<10 {
		t.Fatalf("drop = %d bytes, ranges %#x; want %d, %#x", n, got, (684+848)<<10, want)
	}
}

// A listing drop cannot read whole drops nothing and says what it found.
func TestDrop_BadListingDropsNothing(t *testing.T) {
	static := string(read(t, "testdata/smaps-static.txt"))
	for name, tc := range map[string]struct{ smaps, want string }{
		"no Anonymous line": {strings.Replace(static, "Anonymous:             0 kB\n", "", 1), "no Rss or no Anonymous"},
		"size not in kB":    {strings.Replace(static, "Rss:                7672 kB", "Rss: 7672 MB", 1), "bad size line"},
		"negative size":     {strings.Replace(static, "Rss:                7672 kB", "Rss: -1 kB", 1), "bad size line"},
		"bad address":       {strings.Replace(static, "00400000-012d5000", "00400000-0040000g", 1), "bad mapping line"},
		"empty range":       {strings.Replace(static, "00400000-012d5000", "012d5000-00400000", 1), "bad mapping line"},
		"cut header":        {"00400000-012d5000 r-xp\n", "bad mapping line"},
	} {
		var got advised
		n, err := drop([]byte(tc.smaps), "/usr/local/bin/detour", got.advise)
		if err == nil || !strings.Contains(err.Error(), tc.want) || n != 0 || len(got) != 0 {
			t.Errorf("%s: drop = %d, %#x, %v; want no drop and an error with %q", name, n, got, err, tc.want)
		}
	}
}

// A path with spaces, and an executable replaced on disk while it runs
// (the kernel appends " (deleted)"), are still the executable's.
func TestParseSmaps_PathAsWritten(t *testing.T) {
	listing := "00400000-00401000 r-xp 00005000 fe:00 5000   /opt/my tools/detour (deleted)\nRss: 4 kB\nAnonymous: 0 kB\n"
	maps, err := parseSmaps([]byte(listing), "/opt/my tools/detour")
	if err != nil || len(maps) != 1 || maps[0].rss != 4096 || maps[0].writable {
		t.Fatalf("parseSmaps = %+v, %v", maps, err)
	}
}

// The running test binary: after the drop its file pages are fewer, the
// code it goes on to run comes back, and what it wrote to its data
// mapping is still there (a drop of a writable mapping would bring back
// the file's value).
var written = 1

func TestDropUntouched_Live(t *testing.T) {
	written = 42
	before := rssFile(t)
	n, err := DropUntouched()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	if n <= 0 || after >= before {
		t.Fatalf("dropped %d bytes; RssFile %d kB before, %d kB after", n, before, after)
	}
	if written != 42 || strconv.Itoa(written) != "42" {
		t.Fatalf("written = %d after the drop, want 42", written)
	}
	t.Logf("dropped %d KiB; RssFile %d kB → %d kB", n>>10, before, after)
}

// rssFile returns the process's RssFile in kB.
func rssFile(t *testing.T) int64 {
	t.Helper()
	status := read(t, "/proc/self/status")
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("RssFile:")); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equal(a, b advised) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzParseSmaps: whatever the listing, parseSmaps returns an error or
// mappings with a non-empty range and sizes it read; it never panics.
func FuzzParseSmaps(f *testing.F) {
	for _, p := range []string{"testdata/smaps-static.txt", "testdata/smaps-pie.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("00400000-00401000 r-xp 00000000 fe:00 5 /x\nRss: 4 kB\nAnonymous: 0 kB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range []string{"/x", "/usr/local/bin/detour", "/usr/lib/detour/detour-pie"} {
			maps, err := parseSmaps(data, path)
			if err != nil {
				continue
			}
			for _, m := range maps {
				if m.end <= m.start || m.rss < 0 || m.anon < 0 {
					t.Fatalf("%s: mapping %+v", path, m)
				}
			}
		}
	})
}
