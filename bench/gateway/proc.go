package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// proc is a child process serving HTTP: a system under test or the
// upstream. Its first stdout line is its URL.
type proc struct {
	name  string
	cmd   *exec.Cmd
	pid   int
	url   string
	stdin io.WriteCloser // closing it tells our own programs to exit
	log   string         // file holding its stderr
	done  chan struct{}  // closed when it has exited
}

// live holds the processes started and not yet stopped, so that an
// interrupt can stop them all.
var live struct {
	mu    sync.Mutex // guards procs
	procs map[*proc]bool
}

// startProc starts bin with args, its stderr going to logPath, and waits
// (at most 20 s) for the URL on its first stdout line.
func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, log: logPath, done: make(chan struct{})}
	live.mu.Lock()
	if live.procs == nil {
		live.procs = map[*proc]bool{}
	}
	live.procs[p] = true
	live.mu.Unlock()
	go func() { cmd.Wait(); close(p.done) }() //nolint:errcheck // the exit status is not ours to judge

	first := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		first <- strings.TrimSpace(line)
		io.Copy(io.Discard, br) //nolint:errcheck // drain the rest so the child never blocks
	}()
	select {
	case line := <-first:
		if _, err := hostPort(line); err != nil {
			p.stop()
			return nil, fmt.Errorf("%s: first stdout line %q is not its loopback URL (%v); its stderr:\n%s", name, line, err, tail(logPath))
		}
		p.url = line
		return p, nil
	case <-time.After(20 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s printed no URL within 20s; its stderr:\n%s", name, tail(logPath))
	}
}

// stop asks the process to exit (SIGTERM and closing its stdin), and kills
// it when it has not exited after 5 s.
func (p *proc) stop() {
	live.mu.Lock()
	delete(live.procs, p)
	live.mu.Unlock()
	p.stdin.Close()
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone already
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck // it may be gone already
		<-p.done
	}
}

// stopAll stops every live process (on an interrupt or a fatal error).
func stopAll() {
	live.mu.Lock()
	var ps []*proc
	for p := range live.procs {
		ps = append(ps, p)
	}
	live.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// cpuTime returns the CPU time (user + system, all threads) pid has used,
// from /proc/PID/stat; pid "self" is this process.
func cpuTime(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after its closing parenthesis, from field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[14-3], 10, 64)
	stime, err2 := strconv.ParseInt(f[15-3], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed /proc stat")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// cpuStat is the machine-wide CPU time from the first line of /proc/stat.
type cpuStat struct {
	busy, steal, total time.Duration
}

// machineCPU reads /proc/stat: busy is every CPU's time outside idle,
// iowait and steal; steal is the time the hypervisor ran something else.
func machineCPU() (cpuStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuStat{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuStat{}, errors.New("malformed /proc/stat")
	}
	var st cpuStat
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuStat{}, errors.New("malformed /proc/stat")
		}
		d := time.Duration(n) * time.Second / clockTicks
		st.total += d
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			st.steal += d
		default:
			st.busy += d
		}
	}
	return st, nil
}

// memory returns the resident set size and its high-water mark, in bytes,
// from /proc/PID/status.
func memory(pid string) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("malformed %s line %q", k, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return rss, hwm, nil
}

// rssSplit returns RssAnon and RssFile from /proc/PID/status, in bytes.
func rssSplit(pid string) (anon, file int64) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "RssAnon" && k != "RssFile") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		if k == "RssAnon" {
			anon = n << 10
		} else {
			file = n << 10
		}
	}
	return anon, file
}

// rssSampler keeps the largest VmRSS of a process seen every 50 ms.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	max  int64
}

func sampleRSS(pid string) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _, err := memory(pid); err == nil {
				s.max = max(s.max, rss)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// end stops sampling and returns the largest RSS seen (0: none could be read).
func (s *rssSampler) end() int64 {
	close(s.stop)
	<-s.done
	return s.max
}

// tail returns the last 2 KB of a file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(b)
}
