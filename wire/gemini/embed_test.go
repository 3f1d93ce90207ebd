package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

// The embeddings answers of the Gemini API reference
// (https://ai.google.dev/api/embeddings), shortened to three values.
const (
	embedOneAnswer   = "{\n  \"embedding\": {\n    \"values\": [\n      0.013168523,\n      -0.008711934,\n      -0.046782676\n    ]\n  }\n}\n"
	embedBatchAnswer = `{"embeddings": [{"values": [0.1, 0.2, 0.3]}, {"values": [-0.1, -0.2, -0.3]}], "usageMetadata": {"promptTokenCount": 6}}`
)

func TestClient_EmbedOneGoesToEmbedContent(t *testing.T) {
	var path string
	var got map[string]any
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		if k := r.Header.Get("X-Goog-Api-Key"); k != testKey {
			t.Errorf("x-goog-api-key = %q", k)
		}
		if r.URL.RawQuery != "" {
			t.Errorf("query %q: the key must not go in the URL", r.URL.RawQuery)
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		writeJSON(w, 200, embedOneAnswer)
	})
	resp, err := c.Embed(context.Background(), &llm.EmbedRequest{Model: "gemini-embedding-001", Input: []string{"hello"},
		Dimensions: 3, User: "dropped"})
	if err != nil {
		t.Fatal(err)
	}
	if path != "/v1beta/models/gemini-embedding-001:embedContent" {
		t.Errorf("path %q", path)
	}
	want := map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": "hello"}}},
		"outputDimensionality": 3.0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
	if d := cmp.Diff([][]float32{{0.013168523, -0.008711934, -0.046782676}}, resp.Vectors); d != "" {
		t.Errorf("vectors (-want +got):\n%s", d)
	}
	if resp.Model != "gemini-embedding-001" {
		t.Errorf("model %q", resp.Model)
	}
}

func TestClient_EmbedManyGoesToBatchEmbedContents(t *testing.T) {
	var path string
	var got batchEmbedRequest
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		writeJSON(w, 200, embedBatchAnswer)
	})
	resp, err := c.Embed(context.Background(), &llm.EmbedRequest{Model: "models/text-embedding-004", Input: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if path != "/v1beta/models/text-embedding-004:batchEmbedContents" {
		t.Errorf("path %q", path)
	}
	want := batchEmbedRequest{Requests: []embedContentRequest{embedOne("a", "models/text-embedding-004", 0),
		embedOne("b", "models/text-embedding-004", 0)}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
	if len(resp.Vectors) != 2 || resp.Vectors[1][2] != -0.3 || resp.Usage.InputTokens != 6 {
		t.Errorf("answer %+v", resp)
	}
}

func TestClient_EmbedQuotaIsAProviderError(t *testing.T) {
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 429, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"EmbedContentRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`)
	})
	_, err := c.Embed(context.Background(), &llm.EmbedRequest{Model: "m", Input: []string{"x"}})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || pe.Type != "RESOURCE_EXHAUSTED" ||
		pe.Code != "EmbedContentRequestsPerDayPerProjectPerModel-FreeTier" {
		t.Fatalf("err = %#v", err)
	}
}

func TestDecodeEmbeddings(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		inputs int
		ok     bool
	}{
		{name: "one", body: embedOneAnswer, inputs: 1, ok: true},
		{name: "batch", body: embedBatchAnswer, inputs: 2, ok: true},
		{name: "batch for one input", body: embedBatchAnswer, inputs: 1},
		{name: "no values", body: `{"embedding":{}}`, inputs: 1},
		{name: "empty values", body: `{"embedding":{"values":[]}}`, inputs: 1},
		{name: "lengths differ", body: `{"embeddings":[{"values":[1,2]},{"values":[1]}]}`, inputs: 2},
		{name: "error envelope in a 200", body: `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`, inputs: 1},
		{name: "error array", body: `[{"error":{"code":500,"message":"x","status":"INTERNAL"}}]`, inputs: 1},
		{name: "not JSON", body: `<html>`, inputs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tt.body))}
			got, err := DecodeEmbeddings(resp, tt.inputs)
			if tt.ok {
				if err != nil || len(got.Vectors) != tt.inputs {
					t.Fatalf("= %+v, %v", got, err)
				}
				return
			}
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Dialect != "gemini" {
				t.Fatalf("err = %v, want a gemini ProviderError", err)
			}
		})
	}
}

// FuzzDecodeEmbeddings feeds arbitrary bodies to the embeddings decoder:
// no panic, exactly one of an answer or an error, every error an
// *llm.ProviderError, every answer one finite vector per input, all of one
// length.
func FuzzDecodeEmbeddings(f *testing.F) {
	for _, s := range []string{embedOneAnswer, embedBatchAnswer, `{"error":{}}`, `[{"error":{"code":1}}]`,
		`{"embedding":{"values":null},"embeddings":[{"values":[1]}]}`, `null`, `{}`} {
		f.Add([]byte(s), 1)
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, body []byte, inputs int) {
		if inputs < 0 || inputs > 64 {
			return
		}
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		got, err := DecodeEmbeddings(resp, inputs)
		if (got == nil) == (err == nil) {
			t.Fatalf("DecodeEmbeddings = %v, %v; want exactly one", got, err)
		}
		if err != nil {
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe == nil {
				t.Fatalf("error %v holds no *llm.ProviderError", err)
			}
			return
		}
		if len(got.Vectors) != inputs {
			t.Fatalf("%d vectors for %d inputs", len(got.Vectors), inputs)
		}
		for _, v := range got.Vectors {
			if len(v) == 0 || len(v) != len(got.Vectors[0]) {
				t.Fatalf("vector lengths %d and %d", len(v), len(got.Vectors[0]))
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("number %v", x)
				}
			}
		}
	})
}
