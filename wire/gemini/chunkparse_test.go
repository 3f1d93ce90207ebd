package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detourhq/detour/internal/jsonscan/scantest"
)

// fixtureChunks returns the data of every event of the recorded streams
// in testdata/streams.
func fixtureChunks(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stream fixtures: %v", err)
	}
	var out []string
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(b) {
			if d, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
				out = append(out, string(bytes.TrimSpace(d)))
			}
		}
	}
	return out
}

// The fast path reads the recorded chunks of text, thoughts, function
// calls and usage (it gives up only on errors and blocks), as
// encoding/json does.
func TestParseResponseFast_ReadsTheRecordedChunks(t *testing.T) {
	fast := 0
	for _, d := range fixtureChunks(t) {
		scantest.Check(t, d, parseResponseFast)
		var got generateResponse
		if parseResponseFast(d, &got) {
			fast++
		} else if json.Valid([]byte(d)) && !strings.Contains(d, `"error"`) && !strings.Contains(d, `"promptFeedback"`) {
			t.Errorf("the fast path gave up on a plain chunk: %s", d)
		}
	}
	if fast == 0 {
		t.Fatal("no chunk took the fast path")
	}
}

// FuzzResponseFastMatchesJSON: whenever the fast path reads a chunk, it
// reads what encoding/json reads.
func FuzzResponseFastMatchesJSON(f *testing.F) {
	for _, d := range fixtureChunks(f) {
		f.Add(d)
	}
	for _, d := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"a\u00e9\n","thought":true,"thoughtSignature":"c2ln"}],"role":"model"},"index":0}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"c1","name":"f","args":{"a":[1, 2]}}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":null}}]}}]}`,
		`{"candidates":null,"usageMetadata":null,"modelVersion":null}`,
		`{"candidates":[null,{"content":null,"finishReason":"STOP"}]}`,
		`{"Candidates":[]}`, `{"candidates":[],"candidates":[]}`, `{"usageMetadata":{"promptTokenCount":1e3}}`,
		`{"usageMetadata":{"promptTokenCount":12,"promptTokensDetails":[{"modality":"TEXT","tokenCount":12}]}}`,
		`{"candidates":[{"safetyRatings":[{"category":"x","probability":"NEGLIGIBLE"}],"index":-0}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x","TEXT":"y"}]}}]}`, ` {"responseId":"r"} `, `{"responseId":"r"}x`,
	} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d string) {
		scantest.Check(t, d, parseResponseFast)
	})
}
