package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/ledger"
)

func TestRun_FailsOverThenSkipsTheParkedFreeTier(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"groq/llama-3.3-70b-versatile -> openrouter/meta-llama/llama-3.3-70b-instruct (failover): 429 tokens per day (TPD) exhausted",
		"groq/llama-3.3-70b-versatile skipped, no send: parked until",
		"answered by openrouter/meta-llama/llama-3.3-70b-instruct (degraded: false): Hello from openrouter/meta-llama/llama-3.3-70b-instruct.",
		"sends: groq 1, openrouter 2, deepseek 0\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	// The lines after "ledger:" are the ledger's JSON lines, one per attempt.
	_, lines, ok := strings.Cut(text, "ledger:\n")
	if !ok {
		t.Fatalf("no ledger in the output:\n%s", text)
	}
	var got []string
	sc := bufio.NewScanner(strings.NewReader(lines))
	for sc.Scan() {
		var r ledger.Record
		if err := json.Unmarshal([]byte(strings.TrimSpace(sc.Text())), &r); err != nil {
			t.Fatalf("ledger line %q: %v", sc.Text(), err)
		}
		got = append(got, r.Provider+" "+r.Status+" "+r.Kind+" "+r.Action)
	}
	want := []string{
		"groq http_429 wall failover",
		"openrouter ok  return",
		"groq skipped_parked  skip",
		"openrouter ok  return",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
}
