package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	sim "github.com/detourhq/detour/simulate"
)

// itemTag finds the item id batch tests put in each prompt.
var itemTag = regexp.MustCompile(`item-[0-9]+`)

// sendCounter is an http.Handler in front of a simulator that counts the
// chat requests per item id named in the request body.
type sendCounter struct {
	h  http.Handler
	mu sync.Mutex // guards per
	//
	per map[string]int
}

func (c *sendCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if id := itemTag.Find(body); id != nil {
		c.mu.Lock()
		c.per[string(id)]++
		c.mu.Unlock()
	}
	c.h.ServeHTTP(w, r)
}

func (c *sendCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.per))
	for k, v := range c.per {
		out[k] = v
	}
	return out
}

// batchFixture serves providers p1 and p2 (OpenAI dialect) on loopback
// through a sendCounter, with a config whose routes "default" and
// "gpt-4o-mini" chain p1/m then p2/m.
func batchFixture(t *testing.T, providers ...sim.Provider) (*sim.Server, *sendCounter, map[string]string, string) {
	t.Helper()
	if len(providers) == 0 {
		providers = []sim.Provider{{Name: "p1"}, {Name: "p2"}}
	}
	srv, err := sim.NewServer(providers...)
	if err != nil {
		t.Fatal(err)
	}
	c := &sendCounter{h: srv, per: map[string]int{}}
	hts := httptest.NewServer(c)
	t.Cleanup(func() { hts.Close(); srv.Close() })
	dir := t.TempDir()
	cfg := fmt.Sprintf(`providers:
  p1: {base_url: %s/p1/v1, key_env: P1_KEY, pool: free}
  p2: {base_url: %s/p2/v1, key_env: P2_KEY, pool: prepaid}
targets:
  p1/m: {family: fam, price: {in: 0.5, out: 1.5}}
  p2/m: {family: fam, price: {in: 1, out: 2}}
routes:
  default:
    chain: [p1/m, p2/m]
    budget: batch
  gpt-4o-mini:
    chain: [p1/m, p2/m]
`, hts.URL, hts.URL)
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, c, map[string]string{
		"DETOUR_CONFIG": path, "DETOUR_LEDGER": filepath.Join(dir, "ledger.jsonl"),
		"P1_KEY": "key-one-1234", "P2_KEY": "key-two-1234",
	}, dir
}

// writeItems writes n native items item-0000.. to a file in dir.
func writeItems(t *testing.T, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"item-%04d","prompt":"Say hello to item-%04d."}`+"\n", i, i)
	}
	path := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readResults reads a native results file: each line must be whole JSON
// ending in a newline. It returns the lines by id ("line N" for an input
// error), and how many lines named each.
func readResults(t *testing.T, path string) (map[string]map[string]any, map[string]int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends in a torn line: %q", path, b[max(0, len(b)-80):])
	}
	byID, lines := map[string]map[string]any{}, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		id, _ := m["id"].(string)
		if n, ok := m["line"].(float64); ok {
			id = fmt.Sprintf("line %d", int(n)) // an input error: keyed by its line
		}
		byID[id] = m
		lines[id]++
	}
	return byID, lines
}

// Done when: a run killed with SIGKILL midway and rerun answers every id
// exactly once, leaves no torn line, and sends nothing again for an id
// that had finished before the kill.
func TestBatch_SIGKILLMidwayThenRerunAnswersEachItemOnce(t *testing.T) {
	const items, conc = 200, 4
	_, sends, vars, dir := batchFixture(t,
		sim.Provider{Name: "p1", Latency: sim.Latency{FirstToken: 30 * time.Millisecond}},
		sim.Provider{Name: "p2"})
	in, out := writeItems(t, dir, items), filepath.Join(dir, "out.jsonl")

	cmd := detourCmd(t, vars, "batch", in, "-o", out, "--concurrency", fmt.Sprint(conc))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		if n := bytes.Count(b, []byte("\n")); n >= items/3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill() //nolint:errcheck // giving up
			t.Fatalf("no progress; stderr:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck // killed
	atKill := sends.counts()
	finished, _ := readResults(t, out)
	if len(finished) >= items {
		t.Fatalf("the run finished before the kill (%d lines): make the provider slower", len(finished))
	}
	t.Logf("killed with %d of %d lines written, %d items sent", len(finished), items, len(atKill))

	rerun := detourCmd(t, vars, "batch", in, "-o", out, "--concurrency", fmt.Sprint(conc))
	var errb lockedBuffer
	rerun.Stderr = &errb
	if err := rerun.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(30*time.Second, func() { rerun.Process.Kill() }) //nolint:errcheck // stuck
	err := rerun.Wait()
	errOut := errb.String()
	if !timer.Stop() {
		t.Fatalf("the rerun was still running after 30 s: does it wait on the claims the killed run left?\n%s", errOut)
	}
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("%d already in", len(finished))) {
		t.Errorf("the summary does not count the %d items already done:\n%s", len(finished), errOut)
	}
	got, lines := readResults(t, out)
	after := sends.counts()
	twice := 0
	for i := range items {
		id := fmt.Sprintf("item-%04d", i)
		if lines[id] != 1 || got[id]["status"] != "ok" {
			t.Errorf("%s: %d lines, last %v; want one ok line", id, lines[id], got[id])
		}
		if _, done := finished[id]; done && after[id] != atKill[id] {
			t.Errorf("%s finished before the kill, yet was sent again (%d sends, %d at the kill)", id, after[id], atKill[id])
		}
		switch {
		case after[id] == 2:
			twice++ // in flight at the kill, its answer never kept
		case after[id] != 1:
			t.Errorf("%s: %d sends, want 1 (2 only if in flight at the kill)", id, after[id])
		}
	}
	if twice > conc {
		t.Errorf("%d items sent twice, want at most the %d in flight at the kill", twice, conc)
	}
	if len(lines) != items {
		t.Errorf("%d distinct ids in %s, want %d", len(lines), out, items)
	}
}

// resultLine is an OpenAI Batch API output line. openai-go has no type for
// one (it reads batches, not their files), so the line's envelope is read
// here and its parts with the SDK's types: the body with
// openai.ChatCompletion, the error with openai.BatchError.
type resultLine struct {
	ID       string  `json:"id"`
	CustomID *string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error json.RawMessage `json:"error"`
}

// Done when: an OpenAI Batch API input file runs unchanged and its output
// parses with the openai-go SDK's types.
func TestBatch_OpenAIBatchFileRunsUnchangedAndParsesWithTheSDK(t *testing.T) {
	_, _, vars, dir := batchFixture(t)
	in, out := filepath.Join("testdata", "batch", "openai.jsonl"), filepath.Join(dir, "out.jsonl")
	code, _, errOut := run(t, vars, "", "batch", in, "-o", out)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d (one line is not a chat request)\n%s", code, ExitFailed, errOut)
	}
	if !strings.Contains(errOut, "openai.jsonl line 4: url \"/v1/embeddings\": only /v1/chat/completions is supported") {
		t.Errorf("stderr does not report line 4:\n%s", errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rl resultLine
		if err := json.Unmarshal([]byte(l), &rl); err != nil || rl.CustomID == nil || !strings.HasPrefix(rl.ID, "batch_req_") {
			t.Fatalf("line %q: %v", l, err)
		}
		id := *rl.CustomID
		seen[id] = true
		if id == "request-4" {
			var be openai.BatchError
			if err := json.Unmarshal(rl.Error, &be); err != nil || be.Code != "invalid_input" || be.Line != 4 || rl.Response != nil {
				t.Fatalf("request-4: %v, error %+v, response %v", err, be, rl.Response)
			}
			continue
		}
		if string(rl.Error) != "null" || rl.Response == nil || rl.Response.StatusCode != 200 || rl.Response.RequestID == "" {
			t.Fatalf("%s: %s", id, l)
		}
		var cc openai.ChatCompletion
		if err := json.Unmarshal(rl.Response.Body, &cc); err != nil {
			t.Fatalf("%s: the body is no openai.ChatCompletion: %v", id, err)
		}
		if len(cc.Choices) != 1 || cc.Model != "m" || !cc.JSON.Usage.Valid() {
			t.Fatalf("%s: completion %+v", id, cc)
		}
		msg := cc.Choices[0].Message
		if id == "request-3" {
			if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || cc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("request-3: %+v, want the get_weather call", msg)
			}
			continue
		}
		if msg.Content != "Hello from p1/m." {
			t.Fatalf("%s: choices[0].message.content = %q", id, msg.Content)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("custom ids %v, want the 5 of the file", seen)
	}
}

func TestBatch_ReportsBadLinesAndJSONProgress(t *testing.T) {
	srv, _, vars, dir := batchFixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits}) // a failover
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"id":"a","prompt":"x"}
{"id":"b","prompt":"y","max_tokens":-1}
{"id":"d","prompt":" "}
{"id":"c","messages":[{"role":"user","content":"w"}],"target":"p2/m"}
`), 0o600)
	out := filepath.Join(dir, "out.jsonl")
	code, stdout, errOut := run(t, vars, "", "batch", in, "-o", out, "--json-progress")
	if code != ExitFailed || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing on stdout\n%s", code, stdout, errOut)
	}
	for _, want := range []string{"line 2: max_tokens must be at least 1, not -1", "line 3: prompt is empty",
		"batch: 4 of 4 items done", "2 answered", "2 invalid", "1 failovers"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	var last map[string]any
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &last); err != nil {
				t.Fatalf("a progress line that is not JSON: %q", l)
			}
		}
	}
	if last == nil || last["final"] != true || last["done"] != 4.0 || last["answered"] != 2.0 || last["failovers"] != 1.0 {
		t.Fatalf("final progress object = %v", last)
	}
	got, _ := readResults(t, out)
	if got["c"]["target"] != "p2/m" || got["a"]["target"] != "p2/m" || got["a"]["cost_usd"] == 0.0 {
		t.Fatalf("results: a %v, c %v", got["a"], got["c"])
	}
}

func TestBatch_CommandLineMistakes(t *testing.T) {
	_, _, vars, dir := batchFixture(t)
	in := writeItems(t, dir, 1)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no output", []string{"batch", in}, ExitUsage, "-o OUT.jsonl is required"},
		{"output is the input", []string{"batch", in, "-o", in}, ExitUsage, "are one file (the same path)"},
		{"bad rpm", []string{"batch", in, "-o", filepath.Join(dir, "o1"), "--rpm", "p1"}, ExitUsage, "PROVIDER=N"},
		{"rpm of an unknown provider", []string{"batch", in, "-o", filepath.Join(dir, "o2"), "--rpm", "nosuch=30"}, ExitUsage, `no provider "nosuch"`},
		{"bad budget", []string{"batch", in, "-o", filepath.Join(dir, "o3"), "--budget", "fast"}, ExitUsage, "interactive or batch"},
		{"unknown route", []string{"batch", in, "-o", filepath.Join(dir, "o4"), "--route", "nope"}, ExitConfig, "unknown route"},
		{"missing input", []string{"batch", filepath.Join(dir, "none.jsonl"), "-o", filepath.Join(dir, "o5")}, ExitUsage, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, vars, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", code, tt.code, tt.want, errOut)
			}
		})
	}
}

// Ctrl-C stops taking items, writes nothing half done, prints the summary
// and exits 130; a rerun completes the file.
func TestBatch_InterruptThenRerunCompletes(t *testing.T) {
	const items = 100
	_, _, vars, dir := batchFixture(t,
		sim.Provider{Name: "p1", Latency: sim.Latency{FirstToken: 30 * time.Millisecond}},
		sim.Provider{Name: "p2"})
	in, out := writeItems(t, dir, items), filepath.Join(dir, "out.jsonl")
	cmd := detourCmd(t, vars, "batch", in, "-o", out)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(out); bytes.Count(b, []byte("\n")) >= 20 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill() //nolint:errcheck // giving up
			t.Fatalf("no progress; stderr:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck // the exit code is read below
	if code := cmd.ProcessState.ExitCode(); code != ExitCanceled || !strings.Contains(stderr.String(), "batch: ") {
		t.Fatalf("exit %d, want %d and the summary:\n%s", code, ExitCanceled, stderr.String())
	}
	done, _ := readResults(t, out)
	if len(done) >= items {
		t.Fatalf("all %d items done before the interrupt", len(done))
	}
	code, _, errOut := runDetour(t, vars, "batch", in, "-o", out)
	got, lines := readResults(t, out)
	if code != ExitOK || len(got) != items {
		t.Fatalf("rerun: exit %d, %d ids\n%s", code, len(got), errOut)
	}
	for id, n := range lines {
		if n != 1 {
			t.Errorf("%s: %d lines", id, n)
		}
	}
}
