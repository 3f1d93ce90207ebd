package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const reportLedger = "../report/testdata/ledger.jsonl"

// assertWidth checks that no line is wider than the table with names of
// up to 40 runes (110), but for a line that is one long word: a target
// name, or a request id, never cut.
func assertWidth(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 110 && len(strings.Fields(l)) > 2 {
			t.Errorf("line of %d runes > 110: %q", n, l)
		}
	}
}

func TestReportTable(t *testing.T) {
	code, out, errs := run(t, nil, "", "report", reportLedger)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"TARGET         CALLS     OK  REACH     P50     P95  SKIPS      IN     OUT      COST",
		"groq/llama        13     10  76.9%",
		"cerebras/qwen      7      4  57.1%",
		"gemini/flash       3      2  66.7%   2.00s   3.00s      4     600     100   $0.0000",
		"  groq/llama     http_429 ×2, http_503 ×1",
		"  cerebras/qwen  2025-06-01 10:03:00 → 10:20:00 (17m0s)\n      hit: http_402 no credit",
		"  gemini/flash   2025-06-01 10:23:00 → open (8m0s so far)\n      hit: http_429 daily quota",
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
	// The name is never cut: a line of its own in the table, the
	// failures and the walls; the reason is wrapped, not cut.
	if n := strings.Count(out, "\n"+long+"/"+long+"\n"); n != 1 {
		t.Errorf("the table holds the whole name on %d lines of its own, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "\n  "+long+"/"+long+"\n"); n != 2 {
		t.Errorf("failures and walls hold the whole name on %d lines of their own, want 2:\n%s", n, out)
	}
	if strings.Count(out, "why") != 60 || !strings.Contains(out, "5 lines could not be read") {
		t.Errorf("reason cut, or no unreadable note:\n%s", out)
	}
	assertWidth(t, out)
}

// The issue: names were cut to 26 characters, so two models of one
// provider read the same ("mistral-payg/mistral-smal…"). Each is whole in
// the table, the failures and the walls, and the provider's request id of
// the latest failure of each kind is there for its support desk, in the
// terminal, the JSON and the CSV.
func TestReport_WholeNamesAndUpstreamRequestIDs(t *testing.T) {
	lines := []string{
		`{"time":"2025-06-01T10:00:00.000Z","provider":"mistral-payg","model":"mistral-small-latest","status":"http_429","kind":"wall","seconds":0.1,"reason":"429 monthly quota","upstream_request_id":"req_small_1"}`,
		`{"time":"2025-06-01T10:01:00.000Z","provider":"mistral-payg","model":"mistral-small-latest","status":"http_503","kind":"transient","seconds":0.1,"upstream_request_id":"req_small_2"}`,
		`{"time":"2025-06-01T10:02:00.000Z","provider":"mistral-payg","model":"mistral-small-latest","status":"http_429","kind":"wall","seconds":0.1,"upstream_request_id":"req_small_3"}`,
		`{"time":"2025-06-01T10:03:00.000Z","provider":"mistral-payg","model":"mistral-small-2503","status":"ok","seconds":0.4}`,
		`{"time":"2025-06-01T10:04:00.000Z","provider":"mistral-payg","model":"mistral-small-2503","status":"http_402","kind":"wall","seconds":0.1,"upstream_request_id":"req_2503"}`,
		`{"time":"2025-06-01T10:05:00.000Z","provider":"mistral-payg","model":"mistral-small-2503","status":"ok","seconds":0.4}`,
	}
	p := filepath.Join(t.TempDir(), "l.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "", "report", p)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"\nmistral-payg/mistral-small-latest      3      0   0.0%",
		"\nmistral-payg/mistral-small-2503        3      2  66.7%",
		"\n  mistral-payg/mistral-small-latest  http_429 ×2, http_503 ×1\n" +
			"      latest wall: http_429 at 2025-06-01 10:02:00, upstream_request_id req_small_3\n" +
			"      latest transient: http_503 at 2025-06-01 10:01:00, upstream_request_id req_small_2\n",
		"\n  mistral-payg/mistral-small-latest  2025-06-01 10:00:00 → open (5m0s so far)\n" +
			"      hit: http_429 429 monthly quota\n      upstream_request_id req_small_1\n",
		"\n  mistral-payg/mistral-small-2503    2025-06-01 10:04:00 → 10:05:00 (1m0s)\n" +
			"      hit: http_402\n      upstream_request_id req_2503\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "…") {
		t.Errorf("something was cut:\n%s", out)
	}

	_, out, _ = run(t, nil, "", "report", "--json", p)
	var r struct {
		Targets []struct {
			Target         string `json:"target"`
			LatestFailures []struct {
				Kind              string `json:"kind"`
				UpstreamRequestID string `json:"upstream_request_id"`
			} `json:"latest_failures"`
		} `json:"targets"`
		Walls []struct {
			Target            string  `json:"target"`
			UpstreamRequestID string  `json:"upstream_request_id"`
			Seconds           float64 `json:"seconds"`
		} `json:"walls"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Targets) != 2 || len(r.Targets[1].LatestFailures) != 2 || r.Targets[1].LatestFailures[0].UpstreamRequestID != "req_small_3" ||
		len(r.Walls) != 2 || r.Walls[0].UpstreamRequestID != "req_small_1" || r.Walls[0].Seconds != 300 || r.Walls[1].Seconds != 60 {
		t.Errorf("json: %+v", r)
	}

	_, out, _ = run(t, nil, "", "report", "--csv", p)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	last := slices.Index(rows[0], "latest_failures")
	if last < 0 || rows[0][last] != "latest_failures" || rows[2][last] != "wall:req_small_3 transient:req_small_2" || rows[1][last] != "wall:req_2503" {
		t.Errorf("csv: %q", rows)
	}
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
	if code != ExitOK || !strings.Contains(out, "groq/llama      8      6") || strings.Contains(out, "cerebras") {
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
