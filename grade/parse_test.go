package grade

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// okTask is a valid task; tests put a broken line or two around it.
const okTask = `  - id: ok
    prompt: p
    grade: {exact: "1"}
    good: ["1"]
    bad: ["2"]
`

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // substrings of the error, in any order
	}{
		{"unknown grader", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      numberic: {value: 1}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: unknown grader "numberic" (graders: exact, normalized, numeric, date, json, program, judge, text)`}},
		{"unknown task field", "name: s\ntasks:\n  - id: x\n    promt: p\n",
			[]string{`s.yaml:4: tasks[0]: unknown field "promt" (fields: id, lang,`}},
		{"unknown suite field", "name: s\nversion: 2\ntasks:\n" + okTask,
			[]string{`s.yaml:2: unknown field "version" (fields: name, description, tasks)`}},
		{"unknown grader option", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      numeric: {value: 1, tol: 2}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: numeric: unknown field "tol"`, "(fields: value, tolerance, percent_ok)"}},
		{"duplicate ids", "name: s\ntasks:\n" + okTask + okTask,
			[]string{`s.yaml:8: task "ok": id: used twice (first at line 3)`}},
		{"missing good and bad", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade: {exact: a}\n",
			[]string{`s.yaml:3: task "x": good: missing`, `s.yaml:3: task "x": bad: missing`}},
		{"empty good", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade: {exact: a}\n    good: []\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": good: empty`}},
		{"empty prompt", "name: s\ntasks:\n  - id: x\n    prompt: \"  \"\n    grade: {exact: a}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:4: task "x": prompt: missing or empty`}},
		{"negative tolerance", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      numeric: {value: 1, tolerance: -0.1}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: numeric: tolerance: -0.1 is negative`}},
		{"numeric without value", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      numeric: {tolerance: 1}\n    good: [a]\n    bad: [b]\n",
			[]string{`task "x": grade: numeric: value: missing`}},
		{"bad date literal", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      date: 2027-02-30\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: date: "2027-02-30" is not a date; write it as YYYY-MM-DD`}},
		{"program with empty run", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      program: {run: []}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: program: run: empty`}},
		{"program bad timeout", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      program: {run: [node], timeout: 10}\n    good: [a]\n    bad: [b]\n",
			[]string{`task "x": grade: program: timeout: "10" is not a positive duration`}},
		{"program file escapes", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      program: {run: [node], files: {../x.js: a}}\n    good: [a]\n    bad: [b]\n",
			[]string{`grade: program: files: "../x.js" must be a relative path`}},
		{"judge without route", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      judge: {rubric: r}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: judge: route: missing`}},
		{"bad schema", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      json: {schema: {type: objekt}}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:6: task "x": grade: json: schema:`}},
		{"schema ref to a file refused", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      json: {schema: {$ref: \"file:///etc/passwd\"}}\n    good: [a]\n    bad: [b]\n",
			[]string{`task "x": grade: json: schema:`}},
		{"json with nothing", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      json: {}\n    good: [a]\n    bad: [b]\n",
			[]string{`grade: json: write schema:`}},
		{"bad extract", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade: {exact: a, extract: first_line}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:5: task "x": grade: extract: "first_line" is not a mode (modes: auto, whole, last_line)`}},
		{"no grader", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade: {extract: whole}\n    good: [a]\n    bad: [b]\n",
			[]string{`task "x": grade: no grader`}},
		{"text without constraint", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade: {text: {}}\n    good: [a]\n    bad: [b]\n",
			[]string{`grade: text: no constraint`}},
		{"bad id", "name: s\ntasks:\n  - id: Bad ID\n    prompt: p\n",
			[]string{`s.yaml:3: tasks[0]: id "Bad ID": write lowercase letters`}},
		{"missing id", "name: s\ntasks:\n  - prompt: p\n",
			[]string{`s.yaml:3: tasks[0]: id: missing`}},
		{"negative max_tokens", "name: s\ntasks:\n  - id: x\n    prompt: p\n    max_tokens: -5\n    grade: {exact: a}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:5: task "x": max_tokens: -5 is negative`}},
		{"max_tokens not a number", "name: s\ntasks:\n  - id: x\n    prompt: p\n    max_tokens: lots\n    grade: {exact: a}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:5: task "x": max_tokens: `}},
		{"missing name", "tasks:\n" + okTask, []string{`s.yaml:1: name: missing`}},
		{"no tasks", "name: s\ntasks: []\n", []string{`s.yaml:2: tasks: expected a list of at least one task`}},
		{"empty file", "", []string{`s.yaml: the suite is empty`}},
		{"syntax error", "name: s\ntasks:\n  - id: x\n    prompt: \"unclosed\n", []string{`s.yaml:4: YAML syntax:`}},
		{"duplicate key", "name: s\nname: t\ntasks:\n" + okTask, []string{`s.yaml:2: YAML syntax:`, `"name" already defined`}},
		{"not a mapping", "- a\n- b\n", []string{`s.yaml:1: expected a mapping`}},
		{"deep nesting refused", "name: " + strings.Repeat("[", 100), []string{`s.yaml:1: lists and mappings nest more than 64 levels`}},
		{"several problems at once", "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade: {exactt: a}\n    good: [a]\n    bad: [b]\n  - id: y\n    prompt: p\n    grade: {date: soon}\n    good: [a]\n    bad: [b]\n",
			[]string{`s.yaml:5: task "x": grade: unknown grader "exactt"`, `s.yaml:10: task "y": grade: date: "soon" is not a date`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("s.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded (%d tasks), want an error", len(s.Tasks))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain:\n%s", err, w)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T does not hold an *Error", err)
			}
		})
	}
}

func TestParse_Valid(t *testing.T) {
	src := `name: builtin
description: the built-in suite
tasks:
  - id: arith-margin-en
    lang: en
    category: arithmetic
    system: Be brief.
    prompt: |
      What is the margin?
    max_tokens: 256
    grade:
      numeric: {value: 12.5, tolerance: 0.05}
      extract: auto
    good: ["ANSWER: 12.5"]
    bad: ["12.4"]
  - id: date.ja_1
    prompt: いつ？
    grade:
      date: "2027-01-11"
    good: 2027年1月11日
    bad: ["2027-01-12"]
`
	s, err := Parse("builtin.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "builtin" || s.Description != "the built-in suite" || len(s.Tasks) != 2 || s.Path != "" {
		t.Fatalf("suite = %+v", s)
	}
	a := s.Task("arith-margin-en")
	if a == nil || a.Lang != "en" || a.Category != "arithmetic" || a.System != "Be brief." ||
		a.Prompt != "What is the margin?\n" || a.MaxTokens != 256 {
		t.Fatalf("task = %+v", a)
	}
	b := s.Task("date.ja_1")
	if b.MaxTokens != DefaultMaxTokens || len(b.Good) != 1 || b.NeedsJudge() {
		t.Errorf("task = %+v", b)
	}
	if s.Task("nope") != nil {
		t.Error("Task(nope) != nil")
	}
}

func TestParse_AnchorsAndAliases(t *testing.T) {
	src := `name: s
tasks:
  - id: a
    prompt: &p shared prompt
    grade:
      program: {run: [sh, check.sh], files: &files {check.sh: "exit 0"}}
    good: [x]
    bad: [y]
  - id: b
    prompt: *p
    grade:
      program: {run: [sh, check.sh], files: *files}
    good: [x]
    bad: [y]
`
	s, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Tasks[1].Prompt != "shared prompt" {
		t.Errorf("prompt = %q", s.Tasks[1].Prompt)
	}
}

func TestParse_AliasBombRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: s\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("x" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Fatalf("err = %v, want the alias expansion refused", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte("name: s\ntasks:\n"+okTask), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != path {
		t.Errorf("Path = %q, want %q", s.Path, path)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: s\nfoo: 1\ntasks:\n"+okTask), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2: ") {
		t.Errorf("Load(bad) = %v, want an error at %s:2", err, bad)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}

func TestDigest(t *testing.T) {
	base := "name: s\ndescription: d\ntasks:\n" + okTask
	digest := func(src string) string {
		t.Helper()
		s, err := Parse("s.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return s.Digest()
	}
	d0 := digest(base)
	if len(d0) != 64 {
		t.Fatalf("Digest() = %q, want 64 hex digits", d0)
	}
	tests := []struct {
		name, src string
		same      bool
	}{
		{"same content", base, true},
		{"comments and formatting", "# a comment\nname: s\ndescription: other\ntasks:\n  - {id: ok, prompt: p, grade: {exact: \"1\"}, good: [\"1\", \"one\"], bad: [\"2\"]}\n", true},
		{"prompt changed", strings.Replace(base, "prompt: p", "prompt: q", 1), false},
		{"grader changed", strings.Replace(base, `exact: "1"`, `exact: "2"`, 1), false},
		{"extract set", strings.Replace(base, `{exact: "1"}`, `{exact: "1", extract: whole}`, 1), false},
		{"id changed", strings.Replace(base, "id: ok", "id: ok2", 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := digest(tt.src); (got == d0) != tt.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, d0, got == d0, tt.same)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("name: s\ntasks:\n" + okTask))
	f.Add([]byte(suiteWith("json:\n  schema: {type: object}\n  fields: {a.b: 1}\n")))
	f.Add([]byte(suiteWith("json:\n  schema: {$defs: {a: {allOf: [{$ref: \"#\"}]}}, items: {$ref: \"#/$defs/a\"}}\n")))
	f.Add([]byte(suiteWith("json:\n  schema: {$schema: \"http://json-schema.org/draft-07/schema#\", items: [{$ref: \"#\"}], dependencies: {a: [b]}}\n")))
	f.Add([]byte(suiteWith("program: {run: [node, c.js], files: {c.js: x}, timeout: 1s}\n")))
	f.Add([]byte(suiteWith("judge: {route: j, rubric: r}\ntext: {max_chars: 3}\n")))
	f.Add([]byte("name: s\nx: &a [*a]\n"))
	f.Add([]byte("{\"name\": \"s\", \"tasks\": [{\"id\": \"a\"}]}"))
	f.Add([]byte("name: [[[[{{{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data)
		if err != nil {
			if s != nil {
				t.Fatal("a suite with an error")
			}
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if s.Name == "" || len(s.Tasks) == 0 {
			t.Fatalf("suite without name or tasks: %+v", s)
		}
		seen := map[string]bool{}
		for _, task := range s.Tasks {
			if !taskID().MatchString(task.ID) || seen[task.ID] || task.Prompt == "" ||
				len(task.Good) == 0 || len(task.Bad) == 0 || len(task.Graders()) == 0 || task.MaxTokens <= 0 {
				t.Fatalf("invalid task accepted: %+v", task)
			}
			seen[task.ID] = true
		}
		if s.Digest() != s.Digest() {
			t.Fatal("digest not stable")
		}
	})
}
