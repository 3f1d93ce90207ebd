package sqlitestore_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

// The helper process's environment: what to do, on which file.
const (
	envMode = "SQLITESTORE_HELPER"
	envPath = "SQLITESTORE_PATH"
	envN    = "SQLITESTORE_N"
)

const parkedKey = "anthropic/claude-sonnet"

// TestHelperProcess is not a test: it is the child of the tests below,
// run by re-executing the test binary with envMode set.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envMode)
	if mode == "" {
		t.Skip("helper process only")
	}
	s := sqlitestore.Open(os.Getenv(envPath), sqlitestore.Options{})
	defer s.Close()
	if st := s.Status(); !st.Up {
		fmt.Fprintln(os.Stderr, "helper: store down:", st.Detail)
		os.Exit(2)
	}
	switch mode {
	case "incr":
		n, _ := strconv.Atoi(os.Getenv(envN))
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n') // go
		for range n {
			if err := incr(s, "shared"); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				os.Exit(2)
			}
		}
	case "park":
		now := time.Now()
		health.NewWithStore(health.Settings{}, s).Park(parkedKey, now.Add(time.Hour), "wall in child", now)
	}
	if !s.Status().Up {
		fmt.Fprintln(os.Stderr, "helper: store went down:", s.Status().Detail)
		os.Exit(2)
	}
}

// helper returns the command re-running this test binary as a helper.
func helper(path, mode string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envMode+"="+mode, envPath+"="+path, envN+"="+strconv.Itoa(n))
	return cmd
}

// A child process and this one add to one counter at the same time.
func TestTwoProcessesCount(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	const n = 300
	s := open(t, path, sqlitestore.Options{})
	cmd := helper(path, "incr", n)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr logBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v; stderr: %s", line, err, stderr.String())
	}
	io.WriteString(stdin, "go\n") // both count from here on
	for range n {
		if err := incr(s, "shared"); err != nil {
			t.Fatal(err)
		}
	}
	go io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr: %s", err, stderr.String())
	}
	if !s.Status().Up {
		t.Fatalf("store went down: %s", s.Status().Detail)
	}
	if got := failures(t, open(t, path, sqlitestore.Options{}), "shared"); got != 2*n {
		t.Errorf("failures = %d, want %d", got, 2*n)
	}
}

// A wall parked by a child process is parked for this one.
func TestTwoProcessesPark(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	if out, err := helper(path, "park", 0).CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	b := health.NewWithStore(health.Settings{}, open(t, path, sqlitestore.Options{}))
	_, err := b.Allow(parkedKey, time.Now())
	var pe *health.ParkedError
	if !errors.As(err, &pe) || pe.Reason != "wall in child" {
		t.Fatalf("Allow = %v, want parked by the child", err)
	}
}
