package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
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

// embedAnswer is OpenAI's embeddings answer, as its API reference shows it.
const embedAnswer = `{
  "object": "list",
  "data": [
    {"object": "embedding", "index": 1, "embedding": [0.5, -0.25]},
    {"object": "embedding", "index": 0, "embedding": [0.0023064255, -0.009327292]}
  ],
  "model": "text-embedding-3-small",
  "usage": {"prompt_tokens": 8, "total_tokens": 8}
}`

func TestClient_EmbedSendsFloatRequestAndOrdersVectors(t *testing.T) {
	var got map[string]any
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			t.Errorf("request %s %s, want POST /v1/embeddings", r.Method, r.URL.Path)
		}
		if a := r.Header.Get("Authorization"); a != "Bearer "+testKey {
			t.Errorf("Authorization = %q", a)
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		w.Header().Set("X-Ratelimit-Remaining-Requests", "99")
		writeJSON(w, 200, embedAnswer)
	})
	resp, err := c.Embed(context.Background(), &llm.EmbedRequest{Model: "text-embedding-3-small",
		Input: []string{"hello", "world"}, Dimensions: 2, User: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "text-embedding-3-small", "input": []any{"hello", "world"},
		"encoding_format": "float", "dimensions": 2.0, "user": "u1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
	wantVec := [][]float32{{0.0023064255, -0.009327292}, {0.5, -0.25}}
	if d := cmp.Diff(wantVec, resp.Vectors); d != "" {
		t.Errorf("vectors (-want +got):\n%s", d)
	}
	if resp.Model != "text-embedding-3-small" || resp.Usage.InputTokens != 8 {
		t.Errorf("model %q usage %+v", resp.Model, resp.Usage)
	}
	if resp.RateLimit == nil || resp.RateLimit.RemainingRequests != 99 {
		t.Errorf("rate limit %+v", resp.RateLimit)
	}
}

func TestClient_EmbedErrorsAreProviderErrorsWithoutKey(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 429, `{"error":{"message":"You exceeded your current quota (key `+testKey+`)","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	})
	_, err := c.Embed(context.Background(), &llm.EmbedRequest{Model: "m", Input: []string{"x"}})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || pe.Code != "insufficient_quota" || pe.Dialect != "openai" {
		t.Fatalf("err = %#v", err)
	}
	if strings.Contains(err.Error(), testKey) || bytes.Contains(pe.Body, []byte(testKey)) {
		t.Errorf("key in error: %v", err)
	}
}

func TestClient_EmbedRefusesNoInput(t *testing.T) {
	c := &Client{}
	if _, err := c.Embed(context.Background(), &llm.EmbedRequest{Model: "m"}); !errors.Is(err, llm.ErrNoInput) {
		t.Fatalf("err = %v", err)
	}
}

// b64 is vs as OpenAI's base64 encoding_format sends it.
func b64(vs ...float32) string {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestDecodeEmbeddings(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		inputs  int
		want    [][]float32
		code    string // the ProviderError's code, when an error
		malform bool
	}{
		{name: "floats", body: embedAnswer, inputs: 2, want: [][]float32{{0.0023064255, -0.009327292}, {0.5, -0.25}}},
		{name: "base64 decoded", body: `{"data":[{"index":0,"embedding":"` + b64(1, -2.5) + `"}]}`, inputs: 1,
			want: [][]float32{{1, -2.5}}},
		{name: "no index keeps order", body: `{"data":[{"embedding":[1]},{"embedding":[2]}]}`, inputs: 2,
			want: [][]float32{{1}, {2}}},
		{name: "error in a 200", body: `{"error":{"message":"overloaded","type":"server_error","code":"overloaded"}}`,
			inputs: 1, code: "overloaded"},
		{name: "too few vectors", body: `{"data":[{"index":0,"embedding":[1]}]}`, inputs: 2, malform: true},
		{name: "index twice", body: `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, inputs: 2, malform: true},
		{name: "index out of range", body: `{"data":[{"index":5,"embedding":[1]}]}`, inputs: 1, malform: true},
		{name: "lengths differ", body: `{"data":[{"embedding":[1,2]},{"embedding":[2]}]}`, inputs: 2, malform: true},
		{name: "empty vector", body: `{"data":[{"embedding":[]}]}`, inputs: 1, malform: true},
		{name: "null vector", body: `{"data":[{"embedding":null}]}`, inputs: 1, malform: true},
		{name: "bad base64", body: `{"data":[{"embedding":"!!"}]}`, inputs: 1, malform: true},
		{name: "base64 not whole floats", body: `{"data":[{"embedding":"AAA="}]}`, inputs: 1, malform: true},
		{name: "base64 NaN", body: `{"data":[{"embedding":"` + b64(float32(math.NaN())) + `"}]}`, inputs: 1, malform: true},
		{name: "not JSON", body: `<html>`, inputs: 1, malform: true},
		{name: "number out of float32 range", body: `{"data":[{"embedding":[1e99]}]}`, inputs: 1, malform: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(tt.body))}
			got, err := DecodeEmbeddings(resp, tt.inputs)
			if tt.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, got.Vectors); d != "" {
					t.Errorf("vectors (-want +got):\n%s", d)
				}
				return
			}
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != 200 {
				t.Fatalf("err = %v, want a ProviderError with status 200", err)
			}
			if tt.malform != errors.Is(err, ErrMalformed) {
				t.Errorf("errors.Is(ErrMalformed) = %v, want %v (%v)", !tt.malform, tt.malform, err)
			}
			if tt.code != "" && pe.Code != tt.code {
				t.Errorf("code %q, want %q", pe.Code, tt.code)
			}
		})
	}
}

// FuzzDecodeEmbeddings feeds arbitrary bodies to the embeddings decoder:
// it never panics, returns exactly one of an answer or an error, an error
// is always an *llm.ProviderError, and an answer has one vector per input,
// all of one length, every number finite.
func FuzzDecodeEmbeddings(f *testing.F) {
	for _, s := range []string{embedAnswer, `{"data":[{"embedding":"` + b64(1, 2) + `"}]}`, `{"error":{}}`,
		`{"data":[{"index":-1,"embedding":[1]}]}`, `{"data":null}`, `[]`, `null`, `{"data":[{"embedding":"AAAAAA=="}]}`} {
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
