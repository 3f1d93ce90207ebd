package grade

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// needNode skips t when node is not on PATH, unless DETOUR_REQUIRE_NODE
// is set, which makes it a failure.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("DETOUR_REQUIRE_NODE") != "" {
			t.Fatalf("node is required (DETOUR_REQUIRE_NODE is set) but not on PATH: %v", err)
		}
		t.Skip("node not on PATH; set DETOUR_REQUIRE_NODE=1 to make this a failure")
	}
}

// needShell skips t where there is no POSIX shell.
func needShell(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs a POSIX shell")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on PATH")
	}
}

// programTask parses a one-task suite, written as JSON, whose only grader
// is program: prog.
func programTask(t *testing.T, prog map[string]any) *Task {
	t.Helper()
	suite := map[string]any{
		"name": "prog",
		"tasks": []any{map[string]any{
			"id": "last-n", "prompt": "Write lastN(xs, n) returning the last n items of xs.",
			"grade": map[string]any{"program": prog},
			"good":  []string{"g"}, "bad": []string{"b"},
		}},
	}
	data, err := json.Marshal(suite)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("prog.json", data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s.Tasks[0]
}

// lastNCheck tests the lastN of solution.js. The cases hold n = 0, where
// the reference xs.slice(-n) is wrong (slice(-0) is the whole array), and
// n past the length.
const lastNCheck = `
const fs = require('fs');
const assert = require('assert');
function fail(msg) { console.error(msg); process.exit(1); }
let lastN;
try {
  const code = fs.readFileSync('solution.js', 'utf8');
  lastN = new Function(code + '\n;return typeof lastN === "function" ? lastN : undefined;')();
} catch (e) { fail('the answer does not load: ' + e.name + ': ' + e.message); }
if (typeof lastN !== 'function') fail('no function lastN in the answer');
const cases = [
  [[1, 2, 3], 2, [2, 3]],
  [[1, 2, 3], 3, [1, 2, 3]],
  [[1, 2, 3], 5, [1, 2, 3]],
  [[1, 2, 3], 0, []],
  [[], 3, []],
  [['a'], 1, ['a']],
];
for (const [xs, n, want] of cases) {
  const call = 'lastN(' + JSON.stringify(xs) + ', ' + n + ')';
  const before = JSON.stringify(xs);
  let got;
  try { got = lastN(xs, n); } catch (e) { fail(call + ' threw ' + e.name + ': ' + e.message); }
  try { assert.deepStrictEqual(got, want); } catch (e) { fail(call + ' = ' + JSON.stringify(got) + ', want ' + JSON.stringify(want)); }
  if (JSON.stringify(xs) !== before) fail(call + ': lastN must not change its input');
}
console.log('ok');
`

// lastNProgram is the program grader of the lastN task.
func lastNProgram() map[string]any {
	return map[string]any{
		"run":         []string{"node", "check.js"},
		"answer_file": "solution.js",
		"files":       map[string]string{"check.js": lastNCheck},
	}
}

// jsAnswer wraps code as a model would write it.
func jsAnswer(code string) string {
	return "Here is the function:\n\n```javascript\n" + code + "\n```\n\nIt returns the last n items."
}

func TestProgram_LastN(t *testing.T) {
	needNode(t)
	task := programTask(t, lastNProgram())
	tests := []struct {
		name, answer string
		pass         bool
		why          string
	}{
		{"robust slice", jsAnswer("function lastN(xs, n) {\n  return xs.slice(Math.max(xs.length - n, 0));\n}"), true, ""},
		{"arrow function", jsAnswer("const lastN = (xs, n) => n <= 0 ? [] : xs.slice(-n);"), true, ""},
		{"reference slice(-n) is wrong for n = 0", jsAnswer("function lastN(xs, n) { return xs.slice(-n); }"), false, "lastN([1,2,3], 0) = [1,2,3], want []"},
		{"first n instead of last", jsAnswer("function lastN(xs, n) { return xs.slice(0, n); }"), false, "exit status 1"},
		{"mutates input", jsAnswer("function lastN(xs, n) { return n <= 0 ? [] : xs.splice(-n); }"), false, "must not change its input"},
		{"prose only", "I cannot do that.", false, "the answer does not load"},
		{"no function", jsAnswer("function last(xs, n) { return []; }"), false, "no function lastN"},
		{"syntax error", jsAnswer("function lastN(xs, n) { return xs.slice("), false, "SyntaxError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := task.Grade(context.Background(), Env{}, tt.answer)
			if err != nil {
				t.Fatalf("Grade error: %v", err)
			}
			if v.Pass != tt.pass {
				t.Fatalf("Pass = %v, want %v (why %q, detail %q)", v.Pass, tt.pass, v.Why, v.Detail)
			}
			if !tt.pass && !strings.Contains(v.Why+v.Detail, tt.why) {
				t.Errorf("why %q / detail %q: want %q in them", v.Why, v.Detail, tt.why)
			}
			if len([]rune(v.Why)) > maxWhy || strings.Contains(v.Why, "\n") {
				t.Errorf("Why is not one short line: %q", v.Why)
			}
		})
	}
}

func TestProgram_AcceptsMoreRobustAnswerThanReference(t *testing.T) {
	needNode(t)
	task := programTask(t, lastNProgram())
	reference := jsAnswer("function lastN(xs, n) { return xs.slice(-n); }")
	robust := jsAnswer("function lastN(xs, n) { return xs.slice(Math.max(xs.length - n, 0)); }")
	v, err := task.Grade(context.Background(), Env{}, robust)
	if err != nil || !v.Pass {
		t.Fatalf("robust answer: %+v, %v; want a pass", v, err)
	}
	// The checker holds the answer to the task, not to the reference
	// solution: slice(-0) returns the whole array.
	v, err = task.Grade(context.Background(), Env{}, reference)
	if err != nil || v.Pass {
		t.Fatalf("reference xs.slice(-n): %+v, %v; want a fail at n = 0", v, err)
	}
}

func TestProgram_TimeoutKillsTheGroup(t *testing.T) {
	needShell(t)
	// sh starts sleep as a child: only killing the process group ends both.
	task := programTask(t, map[string]any{"run": []string{"sh", "-c", "sleep 30; exit 0"}, "timeout": "200ms"})
	start := time.Now()
	v, err := task.Grade(context.Background(), Env{}, "x")
	if err != nil {
		t.Fatalf("Grade error: %v", err)
	}
	if v.Pass || !strings.Contains(v.Why, "timed out after 200ms") {
		t.Fatalf("verdict = %+v, want a fail that timed out", v)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v; the timeout did not end the checker", d)
	}
}

func TestProgram_MissingInterpreterIsAnError(t *testing.T) {
	task := programTask(t, map[string]any{"run": []string{"detour-no-such-interpreter", "check.js"}})
	v, err := task.Grade(context.Background(), Env{}, "x")
	if err == nil {
		t.Fatalf("Grade = %+v, nil; want an error", v)
	}
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "detour-no-such-interpreter") {
		t.Errorf("err = %v; want one naming the program and wrapping exec.ErrNotFound", err)
	}
}

func TestProgram_Shell(t *testing.T) {
	needShell(t)
	tests := []struct {
		name   string
		prog   map[string]any
		answer string
		pass   bool
		why    string
	}{
		{"answer on stdin", map[string]any{"run": []string{"sh", "-c", "grep -q MAGIC"}}, "it is MAGIC", true, ""},
		{"answer file holds last code block", map[string]any{"run": []string{"sh", "-c", `test "$(cat answer.txt)" = two`}},
			"```\none\n```\n```sh\ntwo\n```", true, ""},
		{"extract_code off keeps fences", map[string]any{"run": []string{"sh", "-c", "grep -q '```' answer.txt"}, "extract_code": false},
			"```\nx\n```", true, ""},
		{"relative program in files", map[string]any{"run": []string{"./check.sh"},
			"files": map[string]string{"check.sh": "#!/bin/sh\ngrep -q ok answer.txt\n"}}, "ok", true, ""},
		{"files in subdirectories", map[string]any{"run": []string{"sh", "-c", "test -f lib/a.txt"},
			"files": map[string]string{"lib/a.txt": "a"}}, "x", true, ""},
		{"exit status and output tail", map[string]any{"run": []string{"sh", "-c", "echo boom >&2; exit 3"}}, "x", false, "exit status 3: boom"},
		{"long output keeps its end", map[string]any{"run": []string{"sh", "-c", "i=0; while [ $i -lt 200 ]; do echo line$i; i=$((i+1)); done; exit 1"}},
			"x", false, "line199"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := programTask(t, tt.prog).Grade(context.Background(), Env{}, tt.answer)
			if err != nil {
				t.Fatalf("Grade error: %v", err)
			}
			if v.Pass != tt.pass || !strings.Contains(v.Why, tt.why) {
				t.Fatalf("verdict = %+v; want Pass %v and %q in Why", v, tt.pass, tt.why)
			}
			if len(v.Detail) > outputTail+8 || len([]rune(v.Why)) > maxWhy {
				t.Errorf("Detail %d bytes, Why %d runes: too long", len(v.Detail), len([]rune(v.Why)))
			}
		})
	}
}

func TestProgram_RemovesItsDirectory(t *testing.T) {
	needShell(t)
	v, err := programTask(t, map[string]any{"run": []string{"sh", "-c", "pwd; exit 1"}}).Grade(context.Background(), Env{}, "x")
	if err != nil || v.Pass {
		t.Fatalf("verdict = %+v, %v", v, err)
	}
	dir := strings.TrimSpace(v.Detail)
	if !strings.Contains(dir, "detour-grade-") {
		t.Fatalf("Detail = %q, want the work directory", dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work directory %s still there (stat: %v)", dir, err)
	}
}

func TestProgram_CancelledContextIsAnError(t *testing.T) {
	needShell(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := programTask(t, map[string]any{"run": []string{"sh", "-c", "sleep 30"}}).Grade(ctx, Env{}, "x")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
