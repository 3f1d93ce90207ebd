package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

const reportLedger = "../report/testdata/ledger.jsonl"

func assertWidth(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d runes > 100: %q", n, l)
		}
	}
}

func TestReportTable(t *testing.T) {
	code, out, errs := run(t, nil, "", "report", reportLedger)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"TARGET                      CALLS     OK  REACH     P50     P95  SKIPS      IN     OUT      COST",
		"groq/llama                     13     10  76.9%",
		"cerebras/qwen                   7      4  57.1%",
		"gemini/flash                    3      2  66.7%   2.00s   3.00s      4     600     100   $0.0000",
		"http_429 ×2, http_503 ×1",
		"cerebras/qwen              2025-06-01 10:03:00 → 10:20:00 (17m0s)  hit: http_402 no credit",
		"gemini/flash               2025-06-01 10:23:00 → open  hit: http_429 daily quota",
		"1 line could not be read (../report/testdata/ledger.jsonl:30)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	assertWidth(t, out)
}

func TestReportLongNamesFit(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("provider-with-a-very-long-name", 3)
	line := `{"time":"2025-06-01T10:00:00.000Z","route":"default","provider":"` + long + `","model":"` + long +
		`","status":"http_402","kind":"wall","tokens_in":123456789,"cost":123456.78,"seconds":1234.5,"reason":"` + strings.Repeat("why ", 60) + `"}` + "\n" +
		`{"time":"2025-06-01T10:00:01.000Z","route":"default","provider":"` + long + `","model":"` + long +
		`","status":"ok","tokens_in":123456789,"tokens_out":99999999999,"cost":123456.78,"seconds":12345.5}` + "\n"
	for i := 0; i < 5; i++ {
		line += "torn{\n"
	}
	p := filepath.Join(dir, strings.Repeat("d", 120)+".jsonl")
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "", "report", p)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "…") || !strings.Contains(out, "5 lines could not be read") {
		t.Errorf("no truncation or unreadable note:\n%s", out)
	}
	assertWidth(t, out)
}

func TestReportJSON(t *testing.T) {
	code, out, errs := run(t, nil, "", "report", "--json", reportLedger, "../report/testdata/*.gz")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Targets []struct {
			Target  string `json:"target"`
			Calls   int    `json:"calls"`
			Answers int    `json:"answers"`
		} `json:"targets"`
		Walls           []map[string]any `json:"walls"`
		UnreadableLines int              `json:"unreadable_lines"`
		Lines           int              `json:"lines"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(r.Targets) != 3 || r.Targets[0].Target != "groq/llama" || r.Targets[0].Calls != 26 ||
		r.Lines != 60 || r.UnreadableLines != 2 || len(r.Walls) < 2 {
		t.Errorf("json: %+v", r)
	}
}

func TestReportCSV(t *testing.T) {
	code, out, errs := run(t, nil, "", "report", "--csv", "--route", "default", reportLedger)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0][0] != "target" || rows[0][3] != "calls" || rows[1][0] != "groq/llama" || rows[1][3] != "13" {
		t.Errorf("csv rows: %q", rows)
	}
	// route default: gemini has only its two no-key skips.
	if rows[3][0] != "gemini/flash" || rows[3][3] != "0" || rows[3][6] != "2" || rows[3][7] != "" {
		t.Errorf("gemini row: %q", rows[3])
	}
}

func TestReportDefaultLedger(t *testing.T) {
	data, err := os.ReadFile(reportLedger)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "l.jsonl")
	os.WriteFile(p, data, 0o600)
	code, out, _ := run(t, map[string]string{"DETOUR_LEDGER": p}, "", "report", "--provider", "groq", "--since", "2025-06-01T10:05:00Z")
	if code != ExitOK || !strings.Contains(out, "groq/llama                      8      6") || strings.Contains(out, "cerebras") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestReportErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "/nonexistent/ledger.jsonl"}, "no such file"},
		{[]string{"report", "/nonexistent/*.jsonl"}, "no file matches"},
		{[]string{"report", "--since", "yesterday", reportLedger}, "--since"},
		{[]string{"report", "--json", "--csv", reportLedger}, "exclude"},
	} {
		code, out, errs := run(t, nil, "", tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want %d and %q", tc.args, code, errs, out, ExitUsage, tc.want)
		}
	}
}

// TestReport_StatusAlone: the failures read from the HTTP status alone are
// counted in the text and the JSON.
func TestReport_StatusAlone(t *testing.T) {
	lines := `{"time":"2025-06-01T10:00:00.000Z","route":"default","provider":"groq","model":"m","status":"http_503","kind":"transient","reason":"503 upstream went away; read from the status alone"}
{"time":"2025-06-01T10:00:01.000Z","route":"default","provider":"groq","model":"m","status":"http_400","kind":"invalid","reason":"400 odd; read from the status alone"}
{"time":"2025-06-01T10:00:02.000Z","route":"default","provider":"groq","model":"m","status":"http_429","kind":"transient","reason":"429 rate limited"}
`
	p := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "", "report", p)
	if code != ExitOK || !strings.Contains(out, "2 failures were read from the status alone") {
		t.Fatalf("exit %d (%s), text:\n%s", code, errs, out)
	}
	code, out, errs = run(t, nil, "", "report", "--json", p)
	var got struct {
		StatusAlone *int `json:"status_alone"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != ExitOK || err != nil || got.StatusAlone == nil || *got.StatusAlone != 2 {
		t.Fatalf("exit %d (%s), err %v, status_alone %v:\n%s", code, errs, err, got.StatusAlone, out)
	}
}
