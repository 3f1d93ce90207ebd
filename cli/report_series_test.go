package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// midnightLedger spans midnight UTC: two hours on 2025-06-01, one on
// 2025-06-02, with a probe that is no call.
const midnightLedger = `{"time":"2025-06-01T22:10:00.000Z","route":"default","provider":"groq","model":"llama","hop":0,"status":"http_429","kind":"wall","reason":"tokens per day"}
{"time":"2025-06-01T22:10:01.000Z","route":"default","provider":"deepseek","model":"chat","hop":1,"status":"ok","cost":0.002,"tokens_in":100,"tokens_out":20,"seconds":0.5}
{"time":"2025-06-01T23:30:00.000Z","route":"default","provider":"groq","model":"llama","hop":0,"status":"skipped_parked"}
{"time":"2025-06-01T23:30:00.000Z","route":"default","provider":"deepseek","model":"chat","hop":1,"status":"http_503","kind":"transient"}
{"time":"2025-06-01T23:30:02.000Z","route":"default","provider":"deepseek","model":"chat","hop":1,"attempt":2,"status":"ok","cost":0.001}
{"time":"2025-06-02T00:05:00.000Z","route":"default","provider":"groq","model":"llama","hop":0,"status":"ok","seconds":0.2}
{"time":"2025-06-02T00:20:00.000Z","provider":"groq","model":"llama","status":"probe_ok"}
`

func writeLedger(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReportByHour_OneRowPerHourAcrossMidnight(t *testing.T) {
	code, out, errs := run(t, nil, midnightLedger, "report", "--by", "hour", "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"stdin: 7 lines, 7 selected, by the hour (UTC)\n",
		"HOUR (UTC)        CALLS     OK  REACH  SKIPS      COST  FAILURES",
		"2025-06-01 22:00      2      1  50.0%      0   $0.0020  wall 1\n",
		"2025-06-01 23:00      2      1  50.0%      1   $0.0010  transient 1\n",
		"2025-06-02 00:00      1      1 100.0%      0   $0.0000  probes 1 (0 failed)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TARGET") {
		t.Errorf("--by prints the per-target table too:\n%s", out)
	}
	assertWidth(t, out)
}

func TestReportByDay_FoldsAtUTCMidnight(t *testing.T) {
	code, out, errs := run(t, nil, midnightLedger, "report", "--by", "day", "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"DAY (UTC)         CALLS     OK  REACH",
		"stdin: 7 lines, 7 selected, by the day (UTC)\n",
		"2025-06-01            4      2  50.0%      1   $0.0030  transient 1, wall 1\n",
		"2025-06-02            1      1 100.0%      0   $0.0000  probes 1 (0 failed)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestReportByJSONAndCSV_TheSeries(t *testing.T) {
	p := writeLedger(t, midnightLedger)
	code, out, errs := run(t, nil, "", "report", "--by", "day", "--json", p)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		BucketSeconds int `json:"bucket_seconds"`
		Series        []struct {
			Start          string         `json:"start"`
			Calls          int            `json:"calls"`
			FailuresByKind map[string]int `json:"failures_by_kind"`
			Providers      []struct {
				Name  string `json:"name"`
				Calls int    `json:"calls"`
			} `json:"providers"`
		} `json:"series"`
		Routes []struct {
			Route string `json:"route"`
			Hops  []struct {
				Hop     int `json:"hop"`
				Answers int `json:"answers"`
			} `json:"hops"`
		} `json:"routes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.BucketSeconds != 86400 || len(r.Series) != 2 || r.Series[0].Start != "2025-06-01T00:00:00Z" ||
		r.Series[0].Calls != 4 || r.Series[0].FailuresByKind["wall"] != 1 || len(r.Series[0].Providers) != 2 {
		t.Errorf("series: %+v", r)
	}
	if len(r.Routes) != 1 || r.Routes[0].Route != "default" || len(r.Routes[0].Hops) != 2 ||
		r.Routes[0].Hops[0].Answers != 1 || r.Routes[0].Hops[1].Answers != 2 {
		t.Errorf("routes: %+v", r.Routes)
	}

	code, out, errs = run(t, nil, "", "report", "--by", "hour", "--csv", p)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Header, then 22:00 (deepseek, groq), 23:00 (deepseek, groq), 00:00 (groq).
	if len(rows) != 6 || rows[0][0] != "start" || rows[0][15] != "failures_by_kind" {
		t.Fatalf("csv rows: %q", rows)
	}
	if got := strings.Join(rows[2], ","); got != "2025-06-01T22:00:00Z,groq/llama,groq,llama,1,0,1,0,0,0,0,0,0,0,0,wall:1" {
		t.Errorf("groq at 22:00: %s", got)
	}
	if got := strings.Join(rows[5], ","); got != "2025-06-02T00:00:00Z,groq/llama,groq,llama,1,1,0,100,0,0,1,0,0,0,0," {
		t.Errorf("groq at 00:00: %s", got)
	}
}

func TestReportStdin_PlainAndGzip(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(midnightLedger + "torn{\n"))
	zw.Close()
	for name, in := range map[string]string{"plain": midnightLedger + "torn{\n", "gzip": gz.String()} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := run(t, nil, in, "report", "-")
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, want := range []string{"stdin: 8 lines, 7 selected", "deepseek/chat      3      2  66.7%",
				"1 line could not be read (stdin:8)"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestReportHTML(t *testing.T) {
	p := writeLedger(t, midnightLedger)
	page := filepath.Join(t.TempDir(), "report.html")

	code, out, errs := run(t, nil, "", "report", "--html", page, p)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "TARGET") {
		t.Errorf("--html FILE left out the terminal table:\n%s", out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"<!DOCTYPE html>", "<svg", "groq/llama", "counted by 5 minutes", "Read from " + p} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(html), "<script") {
		t.Error("the page has a script")
	}

	code, out, errs = run(t, nil, "", "report", "-q", "--by", "day", "--html", page, p)
	if code != ExitOK || out != "" {
		t.Errorf("--quiet: exit %d, stdout %q, stderr %q; want 0 and nothing", code, out, errs)
	}
	if b, _ := os.ReadFile(page); !strings.Contains(string(b), "counted by the day") {
		t.Error("--by day did not reach the page")
	}

	code, out, errs = run(t, nil, midnightLedger, "report", "--html", "-", "-")
	if code != ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || strings.Contains(out, "TARGET") {
		t.Errorf("--html -: exit %d, stderr %q, stdout starts %.40q", code, errs, out)
	}

	code, _, errs = run(t, nil, "", "report", "--html", filepath.Join(t.TempDir(), "no", "such", "dir.html"), p)
	if code != ExitFailed || !strings.Contains(errs, "--html") {
		t.Errorf("unwritable page: exit %d, stderr %q; want %d", code, errs, ExitFailed)
	}
}

func TestReportSeriesFlagErrors(t *testing.T) {
	p := writeLedger(t, midnightLedger)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--by", "week", p}, "want hour or day"},
		{[]string{"report", "-q", p}, "--quiet goes with --html"},
		{[]string{"report", "--html", "-", "--json", p}, "excludes --json"},
	} {
		code, out, errs := run(t, nil, "", tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want %d and %q", tc.args, code, errs, out, ExitUsage, tc.want)
		}
	}
}
