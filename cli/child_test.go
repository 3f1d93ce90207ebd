package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv, set in a re-executed test binary, holds the JSON array of
// arguments it runs detour with: the binary becomes a detour process, so
// tests can run several at once (what shared health is about).
const childEnv = "DETOUR_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			os.Exit(99)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, argv, Env{})
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// detourCmd returns the test binary set to run as `detour args...` with
// vars as its whole environment (and PATH).
func detourCmd(t *testing.T, vars map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{childEnv + "=" + string(argv), "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// runDetour runs `detour args...` as a process and returns its exit code,
// stdout and stderr.
func runDetour(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	cmd := detourCmd(t, vars, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// serveProcess starts `detour serve --listen 127.0.0.1:0 args...` as a
// process and returns its base URL; it is stopped with SIGTERM when t ends.
func serveProcess(t *testing.T, vars map[string]string, args ...string) (base string, stderr *lockedBuffer, proc *os.Process) {
	t.Helper()
	c := serveChild(t, vars, args...)
	return c.base, c.stderr, c.proc
}

// child is a `detour serve` process: its base URL, its stderr, and its
// exit code on exited once it ends.
type child struct {
	base   string
	stderr *lockedBuffer
	proc   *os.Process
	exited <-chan int
}

// serveChild starts `detour serve --listen 127.0.0.1:0 args...` as a
// process; it is stopped with SIGTERM (then killed after 10 s) when t ends.
func serveChild(t *testing.T, vars map[string]string, args ...string) *child {
	t.Helper()
	cmd := detourCmd(t, vars, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.proc = cmd.Process
	line, err := bufio.NewReader(out).ReadString('\n')
	go io.Copy(io.Discard, out) //nolint:errcheck // the rest of stdout, until it ends
	exited := make(chan int, 1)
	c.exited = exited
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		exited <- code
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // stuck
			<-exited
		}
	})
	if err != nil {
		t.Fatalf("serve printed no URL: %v\n%s", err, c.stderr.String())
	}
	c.base = strings.TrimSpace(line)
	return c
}
