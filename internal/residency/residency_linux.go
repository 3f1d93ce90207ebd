package residency

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// DropUntouched unmaps the resident pages of the running executable's
// read-only mappings (code, read-only data, the function table), so that
// only what the process goes on to touch is resident again. It returns the
// bytes that were resident in the mappings it unmapped.
//
// Only pages the file can give back are dropped: a mapping that is
// writable, or that holds a page of its own (a copy written over the
// file's, as the relocated read-only section of a position-independent
// build has, or a debugger's breakpoint), is left as it is.
func DropUntouched() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	return drop(smaps, exe, madvise)
}

// madvise tells the kernel that the process no longer needs the pages of
// [start, start+length): they are unmapped, and a later touch maps them
// again from the file.
func madvise(start, length uintptr) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, start, length, syscall.MADV_DONTNEED); e != 0 {
		return e
	}
	return nil
}

// drop calls advise on each mapping of file exe in smaps that the file
// can give back, and returns the resident bytes of those.
func drop(smaps []byte, exe string, advise func(start, length uintptr) error) (int64, error) {
	maps, err := parseSmaps(smaps, exe)
	if err != nil {
		return 0, err
	}
	var dropped int64
	for _, m := range maps {
		if m.writable || m.anon != 0 || m.rss == 0 {
			continue
		}
		if err := advise(m.start, m.end-m.start); err != nil {
			return dropped, fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, err)
		}
		dropped += m.rss
	}
	return dropped, nil
}

// mapping is one mapping of a file as /proc/PID/smaps lists it.
type mapping struct {
	start, end uintptr
	writable   bool
	rss, anon  int64 // bytes resident; of those, bytes of the process's own
}

// parseSmaps returns the mappings of file path in an smaps listing (see
// proc_pid_smaps(5)): a header line "start-end perms offset dev inode
// path" and then "Key: n kB" lines for each mapping. A mapping of path
// without its Rss and Anonymous lines is an error: nothing is dropped on a
// guess.
func parseSmaps(data []byte, path string) ([]mapping, error) {
	const rss, anon, both = 1, 2, 3
	var out []mapping
	cur, seen := -1, 0 // cur: index in out of the mapping being read, -1 for another file's
	complete := func() error {
		if cur >= 0 && seen != both {
			return fmt.Errorf("smaps: mapping at %#x of %s has no Rss or no Anonymous line", out[cur].start, path)
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		key, rest, _ := strings.Cut(line, " ")
		if !strings.HasSuffix(key, ":") { // a mapping's header
			if err := complete(); err != nil {
				return nil, err
			}
			m, ok, err := parseHeader(key, rest, path)
			if err != nil {
				return nil, err
			}
			cur, seen = -1, 0
			if ok {
				out = append(out, m)
				cur = len(out) - 1
			}
			continue
		}
		if cur < 0 {
			continue
		}
		var bit int
		var dst *int64
		switch key {
		case "Rss:":
			bit, dst = rss, &out[cur].rss
		case "Anonymous:":
			bit, dst = anon, &out[cur].anon
		default:
			continue
		}
		n, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		v, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil || v < 0 || v > 1<<40 {
			return nil, fmt.Errorf("smaps: bad size line %q", line)
		}
		*dst = v << 10
		seen |= bit
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := complete(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseHeader reads a mapping's header line, split at its first space
// into the address range and the rest; ok reports whether it maps path.
func parseHeader(rng, rest, path string) (m mapping, ok bool, err error) {
	bad := func() (mapping, bool, error) {
		return mapping{}, false, fmt.Errorf("smaps: bad mapping line %q", rng+" "+rest)
	}
	// perms offset dev inode, then the path as written (it may hold spaces)
	var f [4]string
	name := rest
	for i := range f {
		name = strings.TrimLeft(name, " ")
		var found bool
		if f[i], name, found = strings.Cut(name, " "); !found && i < len(f)-1 {
			return bad()
		}
	}
	name = strings.TrimLeft(name, " ")
	if len(f[0]) != 4 {
		return bad()
	}
	if name != path && name != path+" (deleted)" {
		return m, false, nil
	}
	lo, hi, _ := strings.Cut(rng, "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return bad()
	}
	return mapping{start: uintptr(start), end: uintptr(end), writable: f[0][1] == 'w'}, true, nil
}
