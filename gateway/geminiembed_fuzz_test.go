package gateway

import (
	"encoding/json"
	"testing"

	"github.com/detourhq/detour/llm"
)

// FuzzParseGeminiEmbed: any embedContent or batchEmbedContents body is
// either a 400 with a message or a request of one text per content, all
// at one outputDimensionality, and its answer is valid JSON.
func FuzzParseGeminiEmbed(f *testing.F) {
	for _, s := range []string{
		`{"content":{"parts":[{"text":"hello"}]}}`,
		`{"model":"models/emb","content":{"parts":[{"text":"a"},{"text":"b"}]},"outputDimensionality":8}`,
		`{"requests":[{"model":"models/emb","content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]}`,
		`{"requests":[]}`, `{"requests":[{"content":{"parts":[{"inlineData":{}}]}}]}`, `{"taskType":"RETRIEVAL_QUERY"}`,
		`{"requests":[{"content":{"parts":[{"text":"a"}]},"outputDimensionality":4},{"content":{"parts":[{"text":"b"}]}}]}`,
		`[]`, `null`, ``, `{"content":{"parts":[{"text":1}]}}`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, batch bool) {
		method := gmEmbed
		if batch {
			method = gmBatchEmbed
		}
		var cr chatRequest
		req, ae := parseGeminiEmbed([]byte(body), "emb", method, &cr)
		if ae != nil {
			if ae.Status != 400 || ae.Message == "" {
				t.Fatalf("error %+v", ae)
			}
			return
		}
		if len(req.Input) == 0 || cr.model != "emb" || req.Dimensions < 0 {
			t.Fatalf("request %+v, model %q", req, cr.model)
		}
		if !batch && len(req.Input) != 1 {
			t.Fatalf("embedContent read %d texts", len(req.Input))
		}
	})
}

func TestAppendGeminiEmbeddings_IsJSON(t *testing.T) {
	for _, method := range []string{gmEmbed, gmBatchEmbed} {
		var v map[string]any
		b := appendGeminiEmbeddings(nil, method, embedAnswer([][]float32{{0.5, -1e-7, 3}}))
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v: %s", method, err, b)
		}
	}
}

func embedAnswer(v [][]float32) *llm.EmbedResponse { return &llm.EmbedResponse{Vectors: v} }
