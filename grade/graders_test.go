package grade

import (
	"context"
	"strings"
	"testing"
)

// taskWith parses a one-task suite whose grade: block is gradeYAML (keys
// at column 0) and returns the task.
func taskWith(t *testing.T, gradeYAML string) *Task {
	t.Helper()
	s, err := Parse("test.yaml", []byte(suiteWith(gradeYAML)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s.Tasks[0]
}

// suiteWith is the YAML of a one-task suite with the given grade: block.
func suiteWith(gradeYAML string) string {
	return "name: t\ntasks:\n  - id: t1\n    prompt: p\n    good: [g]\n    bad: [b]\n    grade:\n" + indent(gradeYAML, "      ")
}

// indent puts prefix before every non-empty line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// gradeCase is one answer graded by one grade: block.
type gradeCase struct {
	name, grade, answer string
	pass                bool
	// why is a substring the Why of a failure must hold.
	why string
}

func runGradeCases(t *testing.T, tests []gradeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := taskWith(t, tt.grade)
			v, err := task.Grade(context.Background(), Env{}, tt.answer)
			if err != nil {
				t.Fatalf("Grade error: %v", err)
			}
			if v.Pass != tt.pass {
				t.Fatalf("Grade(%q).Pass = %v, want %v (why %q)", tt.answer, v.Pass, tt.pass, v.Why)
			}
			if !tt.pass && !strings.Contains(v.Why, tt.why) {
				t.Errorf("Why = %q, want it to contain %q", v.Why, tt.why)
			}
			if strings.Contains(v.Why, "\n") || len([]rune(v.Why)) > maxWhy {
				t.Errorf("Why is not one short line: %q", v.Why)
			}
		})
	}
}

func TestExact(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{"equal", `exact: "Tokyo"`, "Answer: Tokyo", true, ""},
		{"one of a list", `exact: [Tokyo, 東京]`, "答え：東京", true, ""},
		{"case matters", `exact: "Tokyo"`, "Answer: tokyo", false, `got "tokyo", want "Tokyo"`},
		{"number shorthand", `exact: 42`, "42", true, ""},
		{"whole mode sees everything", "exact: \"Answer: 3\"\nextract: whole", "Answer: 3", true, ""},
		{"last line mode", "exact: \"3\"\nextract: last_line", "so\n3\n", true, ""},
	})
}

func TestNormalized(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{"case and quotes", `normalized: "new york"`, `Answer: "New  York".`, true, ""},
		{"japanese brackets", `normalized: 東京`, "答え：「東京」。", true, ""},
		{"full-width latin", `normalized: abc`, "ＡＢＣ", true, ""},
		{"alternatives", `normalized: [yes, はい]`, "回答：はい", true, ""},
		{"different word", `normalized: "yes"`, "Answer: no", false, `got "no"`},
	})
}

func TestNumeric(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{"exact value", `numeric: {value: 12.5}`, "12.5", true, ""},
		{"within tolerance", `numeric: {value: 12.5, tolerance: 0.05}`, "about 12.54", true, ""},
		{"outside tolerance", `numeric: {value: 12.5, tolerance: 0.05}`, "ANSWER: 12.4", false, "got 12.4, want 12.5 ± 0.05"},
		{"thousands separators", `numeric: {value: 1234.5}`, "The total is 1,234.5.", true, ""},
		{"full-width", `numeric: {value: 12.5}`, "答え：１２．５", true, ""},
		{"unicode minus", `numeric: {value: -3}`, "−3", true, ""},
		{"minus sign matters", `numeric: {value: 3}`, "Answer: -3", false, "got -3, want 3"},
		{"trailing percent ignored", `numeric: {value: 12.5}`, "margin: 12.5%", true, ""},
		{"last number wins", `numeric: {value: 12.5}`, "step 1: 20, so ANSWER: 12.5", true, ""},
		{"marker beats later numbers", `numeric: {value: 12.5}`, "ANSWER: 12.5\n\n(checked in 3 steps)", true, ""},
		{"no marker last number", `numeric: {value: 12.5}`, "20 - 7.5 = 12.5", true, ""},
		{"earlier right number not enough", `numeric: {value: 12.5}`, "12.5? no: 13", false, "got 13"},
		{"no number", `numeric: {value: 1}`, "I don't know.", false, "no number in the answer"},
		{"currency", `numeric: {value: 300}`, "答え：300円", true, ""},
		{"shorthand", `numeric: 7`, "7", true, ""},
		{"percent_ok reads percentage as fraction", `numeric: {value: 0.125, percent_ok: true}`, "12.5%", true, ""},
		{"percent_ok reads fraction as percentage", `numeric: {value: 12.5, percent_ok: true}`, "0.125", true, ""},
		{"without percent_ok no scaling", `numeric: {value: 0.125}`, "12.5%", false, "got 12.5"},
	})
}

func TestDateGrader(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{"iso", `date: 2027-01-11`, "Answer: 2027-01-11", true, ""},
		{"long form", `date: "2027-01-11"`, "It falls on Monday, January 11, 2027.", true, ""},
		{"japanese", `date: 2027-01-11`, "答え：2027年1月11日(月)", true, ""},
		{"last date wins", `date: 2027-01-11`, "Starting 2027-01-04, add 7 days: 2027/1/11", true, ""},
		{"earlier right date not enough", `date: 2027-01-11`, "2027-01-11? No: 2027-01-12", false, "got 2027-01-12, want 2027-01-11"},
		{"no date", `date: 2027-01-11`, "next Monday", false, "no date in the answer"},
	})
}

func TestJSONGrader(t *testing.T) {
	schema := "json:\n  schema:\n    type: object\n    required: [name, items]\n    properties:\n      name: {type: string}\n      items: {type: array, items: {type: object}}\n"
	fields := "json:\n  fields:\n    name: \"x\"\n    items.0.qty: 2\n    ok: true\n"
	runGradeCases(t, []gradeCase{
		{"fenced json matches schema", schema, "Here:\n```json\n{\"name\": \"a\", \"items\": [{}]}\n```\nDone.", true, ""},
		{"last json fence wins", schema, "```json\n{\"name\": 1}\n```\nfixed:\n```json\n{\"name\": \"a\", \"items\": []}\n```", true, ""},
		{"bare json in prose", schema, `Sure! {"name": "a", "items": []} hope that helps`, true, ""},
		{"schema violation", schema, "```json\n{\"name\": 5, \"items\": []}\n```", false, "does not match the schema"},
		{"missing required", schema, `{"name": "a"}`, false, "items"},
		{"fields match, numbers as float", fields, `{"name": "x", "items": [{"qty": 2.0}], "ok": true}`, true, ""},
		{"field mismatch", fields, `{"name": "y", "items": [{"qty": 2}], "ok": true}`, false, `field name: got "y", want "x"`},
		{"field missing", fields, `{"name": "x", "items": [], "ok": true}`, false, "field items.0.qty: missing"},
		{"broken fence", schema, "```json\n{\"name\": \n```", false, "does not parse"},
		{"no json", schema, "no braces here", false, "no JSON in the answer"},
		{"internal $ref", "json:\n  schema:\n    $defs: {pos: {type: integer, minimum: 1}}\n    type: array\n    items: {$ref: \"#/$defs/pos\"}\n", "[1, 2, 0]", false, "minimum"},
		{"json answer after marker line", "json:\n  fields: {ok: true}\n", "Answer:\n```\n{\"ok\": true}\n```", true, ""},
		{"bracket citation skipped", "json:\n  fields: {a: 1}\n", `See [note {x] then {"a": 1}`, true, ""},
	})
}

func TestText(t *testing.T) {
	runGradeCases(t, []gradeCase{
		{"include case-insensitive", "text: {must_include: [Tokyo]}", "I love TOKYO in spring", true, ""},
		{"include missing", "text: {must_include: [Tokyo]}", "Osaka", false, `does not contain "Tokyo"`},
		{"exclude present", "text: {must_exclude: [sorry]}", "Sorry, I can't", false, `contains "sorry"`},
		{"full-width include", "text: {must_include: [ABC]}", "ＡＢＣ社", true, ""},
		{"japanese within max", "text: {max_chars: 5}", "  東京です。 ", true, ""},
		{"japanese over max", "text: {max_chars: 4}", "東京です。", false, "5 characters, more than the 4 allowed"},
		{"under min", "text: {min_chars: 10}", "短い", false, "2 characters, fewer than the 10 required"},
		{"negative constraint japanese", "text: {must_exclude: [猫], max_chars: 40}", "犬が好きです", true, ""},
		{"whole answer by default", "text: {must_include: [because]}", "Answer: yes\nbecause it is", true, ""},
		{"extract narrows text", "text: {must_include: [because]}\nextract: auto", "Answer: yes\nbecause it is", false, "does not contain"},
	})
}

func TestGrade_AllGradersMustPass(t *testing.T) {
	task := taskWith(t, "numeric: {value: 12}\ntext: {max_chars: 20}\n")
	if got := task.Graders(); strings.Join(got, ",") != "numeric,text" {
		t.Fatalf("Graders() = %v", got)
	}
	for _, tc := range []struct {
		answer string
		pass   bool
	}{{"Answer: 12", true}, {"Answer: 12 " + strings.Repeat("!", 30), false}, {"Answer: 13", false}} {
		v, err := task.Grade(context.Background(), Env{}, tc.answer)
		if err != nil || v.Pass != tc.pass {
			t.Errorf("Grade(%q) = %+v, %v; want Pass %v", tc.answer, v, err, tc.pass)
		}
	}
}
