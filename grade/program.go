package grade

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
)

// The defaults of a program grader.
const (
	defaultProgramTimeout = 10 * time.Second
	defaultAnswerFile     = "answer.txt"
	// outputTail is about how much of a program's output a failed
	// Verdict's Detail keeps, from its end.
	outputTail = 300
)

// programGrader passes an answer when a program run on it exits 0.
type programGrader struct {
	run         []string
	timeout     time.Duration
	answerFile  string
	files       map[string]string
	extractCode bool
}

var programFields = []string{"run", "timeout", "answer_file", "files", "extract_code"}

func parseProgram(p *suiteParser, t *Task, n ast.Node) grader {
	var raw struct {
		Run         []string          `yaml:"run"`
		Timeout     string            `yaml:"timeout"`
		AnswerFile  string            `yaml:"answer_file"`
		Files       map[string]string `yaml:"files"`
		ExtractCode *bool             `yaml:"extract_code"`
	}
	if !p.decode(n, &raw, t.ID, "grade: program", programFields) {
		return nil
	}
	bad := func(format string, args ...any) grader {
		p.errf(line(n), t.ID, "grade: program: "+format, args...)
		return nil
	}
	g := &programGrader{run: raw.Run, timeout: defaultProgramTimeout, answerFile: defaultAnswerFile,
		files: raw.Files, extractCode: raw.ExtractCode == nil || *raw.ExtractCode}
	if len(raw.Run) == 0 || strings.TrimSpace(raw.Run[0]) == "" {
		return bad("run: empty; write the command as a list, like run: [node, check.js]")
	}
	if raw.Timeout != "" {
		d, err := time.ParseDuration(strings.TrimSpace(raw.Timeout))
		if err != nil || d <= 0 {
			return bad("timeout: %q is not a positive duration; write it like \"10s\" or \"500ms\"", raw.Timeout)
		}
		g.timeout = d
	}
	if raw.AnswerFile != "" {
		g.answerFile = raw.AnswerFile
	}
	if !filepath.IsLocal(g.answerFile) {
		return bad("answer_file: %q must be a relative path inside the work directory", g.answerFile)
	}
	for name := range raw.Files {
		if !filepath.IsLocal(name) {
			return bad("files: %q must be a relative path inside the work directory", name)
		}
		if filepath.Clean(name) == filepath.Clean(g.answerFile) {
			return bad("files: %q is also the answer_file, which the answer overwrites; rename one", name)
		}
	}
	return g
}

func (g *programGrader) kind() string { return "program" }

func (g *programGrader) canonical() any {
	return map[string]any{"run": g.run, "timeout": g.timeout.String(), "answer_file": g.answerFile,
		"files": g.files, "extract_code": g.extractCode}
}

// grade runs the program in a fresh directory holding the files and the
// answer. The error is for a program that cannot start (errors.Is
// exec.ErrNotFound for a missing interpreter) or a ctx that ended.
func (g *programGrader) grade(ctx context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	name := g.run[0]
	var path string
	switch {
	case !strings.ContainsAny(name, `/\`):
		p, err := exec.LookPath(name)
		if err != nil {
			return Verdict{}, fmt.Errorf("%q is needed to check answers (install it or put it on PATH): %w", name, err)
		}
		path = p
	case filepath.IsAbs(name):
		path = name
	}
	dir, err := os.MkdirTemp("", "detour-grade-")
	if err != nil {
		return Verdict{}, err
	}
	defer os.RemoveAll(dir)
	if path == "" {
		path = filepath.Join(dir, name)
	}
	input := t.input(g, answer)
	code := input
	if g.extractCode {
		code = lastCode(input)
	}
	if err := g.writeFiles(dir, code); err != nil {
		return Verdict{}, err
	}

	runCtx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, g.run[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(answer)
	out := &tailWriter{max: 4 * outputTail}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second // a grandchild holding the output open does not hang us
	setProcessGroup(cmd)
	err = cmd.Run()
	_ = killGroup(cmd) // whatever the checker left running in the background
	detail := out.tail(outputTail)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return Verdict{}, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return Verdict{Why: fmt.Sprintf("timed out after %s", g.timeout), Detail: detail}, nil
	case err == nil:
		return Verdict{Pass: true}, nil
	case errors.As(err, &exit):
		why := exit.ProcessState.String() // "exit status 1", "signal: killed"
		if d := tail(detail, maxWhy-len(why)-2); d != "" {
			why += ": " + d
		}
		return Verdict{Why: why, Detail: detail}, nil
	}
	return Verdict{}, fmt.Errorf("cannot run %q: %w", strings.Join(g.run, " "), err)
}

// writeFiles writes the grader's files and the answer into dir.
func (g *programGrader) writeFiles(dir, answer string) error {
	names := make([]string, 0, len(g.files))
	for n := range g.files {
		names = append(names, n)
	}
	sort.Strings(names)
	write := func(name, content string) error {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		// Executable, so run: [./check.sh] works.
		return os.WriteFile(p, []byte(content), 0o755)
	}
	for _, n := range names {
		if err := write(n, g.files[n]); err != nil {
			return err
		}
	}
	return write(g.answerFile, answer)
}

// tailWriter keeps the last max bytes written to it. Safe for concurrent
// use; mu guards buf.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// Write implements io.Writer.
func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

// tail returns about the last n bytes written, starting at a whole
// character, trimmed.
func (w *tailWriter) tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > n {
		b = b[len(b)-n:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.TrimSpace(string(b))
}
