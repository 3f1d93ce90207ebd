package grade

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// DefaultMaxTokens is a task's MaxTokens when the suite leaves max_tokens
// out or writes 0.
const DefaultMaxTokens = 1024

// MaxSuiteSize is the largest suite file Load and Parse read, in bytes
// (4 MiB). A real suite is a few hundred KiB at most.
const MaxSuiteSize = 4 << 20

// Suite is a parsed, checked task suite. It is read-only after Load or
// Parse and safe for concurrent use.
type Suite struct {
	// Name is the suite's name: field, never empty.
	Name string
	// Description is free text; "" when absent.
	Description string
	// Tasks are in file order; their IDs are unique.
	Tasks []*Task
	// Path is the file the suite came from; "" if parsed from bytes.
	Path string
}

// Task is one prompt of a suite and the graders of its answers. It is
// read-only after parsing and safe for concurrent use.
type Task struct {
	// ID is unique in its suite and matches [a-z0-9][a-z0-9._-]*.
	ID string
	// Lang and Category are free tags ("en", "arithmetic"); "" when absent.
	Lang, Category string
	// System is the system prompt; "" for none.
	System string
	// Prompt is the user message, never empty.
	Prompt string
	// MaxTokens is the answer's token limit: DefaultMaxTokens when the
	// suite leaves it out.
	MaxTokens int
	// Good and Bad are known-good and known-bad answers, at least one of
	// each, that Check runs the graders on.
	Good, Bad []string

	// extract is the extraction mode written in the suite, "" when absent.
	extract string
	// graders all must pass, cheapest first (see graderOrder).
	graders []grader
}

// Verdict is the grade of one answer.
type Verdict struct {
	// Pass is true when every grader of the task passed.
	Pass bool
	// Why says why the answer failed: one line of at most 200 characters,
	// e.g. `got 12.4, want 12.5 ± 0.05`. It may be empty on a pass.
	Why string
	// Detail is longer evidence when there is some, possibly several
	// lines: the end of a program grader's output (about 300 bytes), a
	// judge's whole reply. Empty otherwise.
	Detail string
}

// Judge asks an LLM route for a verdict: it sends prompt to the route
// named route and returns the reply's text. An error means no reply (the
// route failed, ctx ended); Grade returns it wrapped.
type Judge func(ctx context.Context, route, prompt string) (answer string, err error)

// Env is what graders need from outside the suite. The zero value is
// usable for every grader but judge.
type Env struct {
	// Judge answers judge graders; nil makes them return an error that
	// wraps ErrNeedsJudge.
	Judge Judge
}

// ErrNeedsJudge means a task has a judge grader and Env has no Judge.
var ErrNeedsJudge = errors.New("needs a judge route")

// ErrNoVerdict means a judge's reply had no `VERDICT: PASS` or
// `VERDICT: FAIL` line.
var ErrNoVerdict = errors.New("judge gave no verdict")

// Load reads and parses the suite file at path; the errors name the file.
func Load(path string) (*Suite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSuiteSize+1))
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	s.Path = path
	return s, nil
}

// Parse parses a suite from data; name stands for the file in error
// messages. Every problem found is reported, joined with errors.Join, each
// an *Error like `suite.yaml:12: task "x": grade: unknown grader ...`.
func Parse(name string, data []byte) (s *Suite, err error) {
	defer func() {
		// The YAML library is third-party code fed untrusted files; a
		// panic in it is a bad file, not a crash of detour.
		if r := recover(); r != nil {
			s, err = nil, &Error{File: name, Msg: fmt.Sprintf("the YAML could not be read (%v); check the file's syntax", r)}
		}
	}()
	return parse(name, data)
}

// IDs returns the ids of the suite's tasks, in order.
func (s *Suite) IDs() []string {
	out := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		out[i] = t.ID
	}
	return out
}

// Task returns the task with id, or nil if the suite has none.
func (s *Suite) Task(id string) *Task {
	for _, t := range s.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Digest returns a stable hex SHA-256 of what the suite measures: each
// task's id, tags, system prompt, prompt, max tokens, extraction and
// graders, in order. Name, description and the good and bad answers are
// left out, as are YAML formatting and comments. Results files keep it to
// notice a changed suite.
func (s *Suite) Digest() string {
	type canonTask struct {
		ID        string         `json:"id"`
		Lang      string         `json:"lang"`
		Category  string         `json:"category"`
		System    string         `json:"system"`
		Prompt    string         `json:"prompt"`
		MaxTokens int            `json:"max_tokens"`
		Extract   string         `json:"extract"`
		Graders   map[string]any `json:"graders"`
	}
	tasks := make([]canonTask, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		c := canonTask{ID: t.ID, Lang: t.Lang, Category: t.Category, System: t.System,
			Prompt: t.Prompt, MaxTokens: t.MaxTokens, Extract: t.extract, Graders: map[string]any{}}
		for _, g := range t.graders {
			c.Graders[g.kind()] = g.canonical()
		}
		tasks = append(tasks, c)
	}
	b, err := json.Marshal(tasks) // map keys sorted: stable
	if err != nil {
		panic("grade: digest: " + err.Error()) // every canonical form is plain data
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Graders returns the kinds of the task's graders ("numeric", "json",
// ...), in the order Grade runs them.
func (t *Task) Graders() []string {
	out := make([]string, len(t.graders))
	for i, g := range t.graders {
		out[i] = g.kind()
	}
	return out
}

// NeedsJudge reports whether the task has a judge grader, which needs
// Env.Judge.
func (t *Task) NeedsJudge() bool {
	for _, g := range t.graders {
		if g.kind() == "judge" {
			return true
		}
	}
	return false
}

// Grade grades answer with every grader of the task, cheapest first, and
// stops at the first that fails. The error means a grader could not run
// (a missing interpreter: errors.Is(err, exec.ErrNotFound); no judge:
// ErrNeedsJudge; a judge failure or ErrNoVerdict; ctx ended), not a
// wrong answer. Safe for concurrent use.
func (t *Task) Grade(ctx context.Context, env Env, answer string) (Verdict, error) {
	if env.Judge == nil && t.NeedsJudge() {
		return Verdict{}, needsJudge(t)
	}
	for _, g := range t.graders {
		if err := ctx.Err(); err != nil {
			return Verdict{}, err
		}
		v, err := g.grade(ctx, env, t, answer)
		if err != nil {
			return Verdict{}, fmt.Errorf("task %q: %s: %w", t.ID, g.kind(), err)
		}
		if !v.Pass {
			if v.Why == "" {
				v.Why = g.kind() + " failed"
			}
			v.Why = oneLine(v.Why, maxWhy)
			return v, nil
		}
	}
	return Verdict{Pass: true}, nil
}

// needsJudge is the error of grading t, which has a judge grader,
// without a Judge.
func needsJudge(t *Task) error {
	return fmt.Errorf("task %q %w: set grade.Env.Judge to send its prompt down the route the grader names (detour eval sends it through the config), or leave the task out", t.ID, ErrNeedsJudge)
}

// maxWhy is the most characters of a Verdict's Why.
const maxWhy = 200

// oneLine folds s to one line of at most n runes, marking a cut with "…".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// tail folds s to one line of at most n runes, keeping its end.
func tail(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n+1:])
}

// clip quotes s for a message, cut to about n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
