package prom

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// procSupported reports whether this system has the /proc the process_
// families are read from.
const procSupported = true

// userHZ is the unit of the times in /proc/self/stat: clock ticks of
// 1/100 s on every Linux architecture Go runs on (client_golang's procfs
// assumes the same).
const userHZ = 100

// bootTime returns the boot time (btime of /proc/stat) in seconds since
// the epoch, read once.
var bootTime = sync.OnceValues(func() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			return strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
		}
	}
	return 0, os.ErrNotExist
})

// readProc reads the process's figures from /proc/self: its stat (CPU
// times, start, sizes), its fd directory and its limit on open files.
func readProc() (procStats, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStats{}, false
	}
	st, ok := parseStat(b, os.Getpagesize())
	if !ok {
		return procStats{}, false
	}
	if st.hasStart {
		boot, err := bootTime()
		st.startUnix += boot
		st.hasStart = err == nil
	}
	if n, err := countFDs(); err == nil {
		st.openFDs, st.hasFDs = float64(n), true
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		st.maxFDs, st.hasMaxFDs = float64(lim.Cur), true
	}
	return st, true
}

// parseStat reads the fields of /proc/self/stat (see proc_pid_stat(5))
// detour shows; the start time is since boot. The command name, in
// parentheses, may itself hold spaces and parentheses: the fields start
// after its last ')'.
func parseStat(b []byte, pageSize int) (procStats, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStats{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, state
	const utime, stime, start, vsize, rss = 14 - 3, 15 - 3, 22 - 3, 23 - 3, 24 - 3
	if len(f) <= rss {
		return procStats{}, false
	}
	num := func(k int) (float64, bool) {
		v, err := strconv.ParseInt(string(f[k]), 10, 64)
		return float64(v), err == nil
	}
	var st procStats
	u, ok1 := num(utime)
	s, ok2 := num(stime)
	t, ok3 := num(start)
	v, ok4 := num(vsize)
	r, ok5 := num(rss)
	if !ok1 || !ok2 || !ok4 || !ok5 {
		return procStats{}, false
	}
	st.cpuSeconds = (u + s) / userHZ
	st.startUnix, st.hasStart = t/userHZ, ok3
	st.vsize, st.rss = v, r*float64(pageSize)
	return st, true
}

// countFDs counts the process's open file descriptors, the one it opens to
// count them included (as client_golang counts).
func countFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	return len(names), err
}
