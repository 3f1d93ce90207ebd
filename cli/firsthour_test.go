package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// simProcess is a `detour sim` process: what it printed before it began
// to serve, and its stderr.
type simProcess struct {
	guide  string
	stderr *lockedBuffer
}

// startSim starts `detour sim args...` as a process and reads its guide,
// up to the line that says how to stop it; the sim is stopped with
// SIGTERM when t ends, and must then exit 0.
func startSim(t *testing.T, args ...string) *simProcess {
	t.Helper()
	cmd := detourCmd(t, nil, append([]string{"sim"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &simProcess{stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case err := <-exited:
			if err != nil || !strings.Contains(p.stderr.String(), "detour sim: stopped") {
				t.Errorf("sim ended with %v after SIGTERM:\n%s", err, p.stderr)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // stuck
			t.Error("sim did not stop within 10s of SIGTERM")
		}
	})
	var guide strings.Builder
	r := bufio.NewReader(out)
	for !strings.Contains(guide.String(), "Ctrl-C stops the sim.") {
		line, err := r.ReadString('\n')
		guide.WriteString(line)
		if err != nil {
			t.Fatalf("sim ended before its guide: %v\n%s\n%s", err, guide.String(), p.stderr)
		}
	}
	go func() {
		io.Copy(io.Discard, r) //nolint:errcheck // the rest, until it ends
		exited <- cmd.Wait()
	}()
	p.guide = guide.String()
	return p
}

// line returns the guide's first line holding s, trimmed.
func (p *simProcess) line(t *testing.T, s string) string {
	t.Helper()
	for _, l := range strings.Split(p.guide, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("the sim's guide has no line with %q:\n%s", s, p.guide)
	return ""
}

// sourceEnv reads the `export NAME=VALUE` lines of an env file as a
// POSIX shell would for the values detour sim writes (plain or in single
// quotes).
func sourceEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		kv, ok := strings.CutPrefix(l, "export ")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(v, "'") {
			v = strings.ReplaceAll(strings.Trim(v, "'"), `'\''`, "'")
		}
		vars[k] = v
	}
	return vars
}

// The first hour of a newcomer, against the real binary with no key and no
// config of their own: demo, then report on the ledger it names; then
// sim, whose env file points every command at it: check, ask, a switch of
// its faults, serve with the OpenAI SDK and plain HTTP in the three
// dialects, report, batch and probe, each as the guide prints it. Steps
// that do not wait for each other run at once, so that the processes'
// start-up (a second each under -race) adds up less.
func TestFirstHour_DemoThenSimThenEveryCommandKeyless(t *testing.T) {
	start := time.Now()
	var wg sync.WaitGroup
	async := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	// detour runs a command with vars and reports whether it exited want
	// (an error when not); safe in any goroutine.
	detour := func(vars map[string]string, want int, args ...string) (string, string, bool) {
		t0 := time.Now()
		code, out, errOut := runDetour(t, vars, args...)
		t.Logf("%.60v: %s", args, time.Since(t0).Round(time.Millisecond))
		if code != want {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", args, code, want, out, errOut)
		}
		return out, errOut, code == want
	}

	async(func() {
		out, _, ok := detour(nil, 0, "demo", "--requests", "4", "--latency-scale", "0.05", "-q")
		_, next, _ := strings.Cut(out, "Next:\n")
		report := words(strings.Split(next, "\n")[0], "report") // SELF report PATH # ...
		if !ok || len(report) < 2 || !strings.Contains(next, " sim ") {
			t.Errorf("demo does not end with report on its ledger and sim:\n%s", out)
			return
		}
		if out, _, _ := detour(nil, 0, report...); !strings.Contains(out, "groq-free/") || !strings.Contains(out, "walls") {
			t.Errorf("report on the demo's ledger:\n%s", out)
		}
	})

	sim := startSim(t, "--listen", "127.0.0.1:0", "--latency-scale", "0.05")
	envFile := strings.Fields(sim.line(t, ". /"))[1]
	vars := sourceEnv(t, envFile)
	if vars["DETOUR_CONFIG"] == "" || vars["DETOUR_LEDGER"] == "" || len(vars) != 2 {
		t.Fatalf("env file %s sets %v, want DETOUR_CONFIG and DETOUR_LEDGER", envFile, vars)
	}
	dir := filepath.Dir(envFile)
	// A switch of the sim's faults, as the guide prints it: together, fine
	// on the bad day, runs dry.
	control := strings.Fields(sim.line(t, "curl -X POST "))[3] // .../control/groq-free/dry
	control = strings.Replace(control, "/groq-free/", "/together/", 1)

	async(func() {
		if out, _, _ := detour(vars, 0, "check"); !strings.Contains(out, "key not needed") || !strings.Contains(out, "no warnings") {
			t.Errorf("check on the sim's config:\n%s", out)
		}
	})
	async(func() {
		if out, _, _ := detour(vars, 0, "ask", "Name one prime number."); !strings.HasPrefix(out, "Hello from ") {
			t.Errorf("ask answered %q", out)
		}
	})
	async(func() {
		if code, b := send(t, http.MethodPost, control, ""); code != http.StatusOK {
			t.Errorf("POST %s: %d %s", control, code, b)
			return
		}
		if _, errOut, _ := detour(vars, 1, "ask", "--route", "together/meta-llama/Llama-3.3-70B-Instruct-Turbo", "hi"); !strings.Contains(errOut, "http_402") {
			t.Errorf("ask to a dry target: stderr lacks its 402:\n%s", errOut)
		}
	})

	t0 := time.Now()
	gw := serveChild(t, vars)
	client := openai.NewClient(option.WithBaseURL(gw.base+"/v1"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "default",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Name one prime number.")}})
	if err != nil || !strings.HasPrefix(cc.Choices[0].Message.Content, "Hello from ") {
		t.Errorf("OpenAI SDK through serve: %v %+v\n%s", err, cc, gw.stderr)
	}
	for path, body := range map[string]string{
		"/v1/messages":                           `{"model": "default", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}`,
		"/v1beta/models/default:generateContent": `{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}`,
		"/v1/responses":                          `{"model": "default", "input": "hi"}`,
	} {
		if code, b := send(t, http.MethodPost, gw.base+path, body); code != http.StatusOK || !strings.Contains(b, "Hello from ") {
			t.Errorf("POST %s: %d %s", path, code, b)
		}
	}
	stopNow(t, gw)
	t.Logf("serve: %s", time.Since(t0).Round(time.Millisecond))
	wg.Wait()
	if t.Failed() {
		return
	}

	async(func() {
		if out, _, _ := detour(vars, 0, "report"); !strings.Contains(out, "together/") || !strings.Contains(out, "http_402") {
			t.Errorf("report on the sim's ledger lacks the dry target:\n%s", out)
		}
	})
	async(func() {
		if _, errOut, _ := detour(vars, 0, words(sim.line(t, " batch "), "batch")...); !strings.Contains(errOut, "6 answered") {
			t.Errorf("batch:\n%s", errOut)
		}
		if b, err := os.ReadFile(filepath.Join(dir, simBatchOut)); err != nil || strings.Count(string(b), "\n") != 6 {
			t.Errorf("batch output: %v\n%s", err, b)
		}
	})
	async(func() { detour(vars, 0, "probe") })
	wg.Wait()
	t.Logf("the first hour took %s", time.Since(start).Round(time.Millisecond))
}

// words returns the arguments of the detour command in a printed line:
// its words from cmd (the subcommand) up to the comment, whatever name
// runs detour before it.
func words(line, cmd string) []string {
	f := strings.Fields(line)
	for i, w := range f {
		if w == cmd {
			f = f[i:]
			break
		}
	}
	for i, w := range f {
		if w == "#" {
			return f[:i]
		}
	}
	return f
}

// stopNow stops a serve process as a second Ctrl-C does, without its
// drain delay: one SIGTERM, and another once it says it is shutting down.
func stopNow(t *testing.T, c *child) {
	t.Helper()
	c.proc.Signal(syscall.SIGTERM) //nolint:errcheck // checked by the exit below
	for end := time.Now().Add(10 * time.Second); !strings.Contains(c.stderr.String(), "shutting down"); {
		if time.Now().After(end) {
			t.Fatalf("serve did not start its shutdown:\n%s", c.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.proc.Signal(syscall.SIGTERM) //nolint:errcheck // checked by the exit below
	if code := <-c.exited; code != 0 {
		t.Errorf("serve exited %d:\n%s", code, c.stderr)
	}
}
