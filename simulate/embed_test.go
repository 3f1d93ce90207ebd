package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
)

// embedder returns the wire client of provider's dialect on r.
func (r *rig) embedder(provider string) llm.Embedder {
	if r.srv.Dialect(provider) == DialectGemini {
		return &gemini.Client{BaseURL: r.srv.BaseURL(provider), APIKey: "AIza-test-key-0123456789", HTTPClient: r.client}
	}
	return &openai.Client{BaseURL: r.srv.BaseURL(provider), APIKey: "sk-test-key-0123456789", HTTPClient: r.client}
}

func TestEmbed_DeterministicVectorsInEachDialect(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "oa"}, Provider{Name: "gm", Dialect: DialectGemini})
		for _, p := range []string{"oa", "gm"} {
			for _, in := range [][]string{{"hello"}, {"hello", "world", "again"}} {
				got, err := r.embedder(p).Embed(context.Background(), &llm.EmbedRequest{Model: "emb-1", Input: in})
				if err != nil {
					t.Fatalf("%s %d inputs: %v", p, len(in), err)
				}
				want := make([][]float32, len(in))
				for i, s := range in {
					want[i] = Vector("emb-1", s, 0)
				}
				if d := cmp.Diff(want, got.Vectors); d != "" {
					t.Errorf("%s %d inputs (-want +got):\n%s", p, len(in), d)
				}
				if got.Model != "emb-1" {
					t.Errorf("%s model %q", p, got.Model)
				}
			}
		}
		st := r.srv.Stats()
		if st.Embeds("oa", "emb-1") != 2 || st.Embeds("gm", "") != 2 || st.Served("", "", OK) != 4 {
			t.Errorf("stats %+v", st.Records)
		}
	})
}

func TestVector_DependsOnModelAndTextOnly(t *testing.T) {
	a, b, c := Vector("m1", "x", 0), Vector("m2", "x", 0), Vector("m1", "y", 0)
	if len(a) != EmbedDimensions || len(Vector("m1", "x", 3)) != 3 {
		t.Fatalf("lengths %d", len(a))
	}
	if cmp.Equal(a, b) || cmp.Equal(a, c) || !cmp.Equal(a, Vector("m1", "x", 0)) {
		t.Errorf("vectors %v %v %v", a, b, c)
	}
	var sum float64
	for _, x := range a {
		sum += float64(x) * float64(x)
	}
	if sum < 0.999 || sum > 1.001 {
		t.Errorf("squared length %v, want 1", sum)
	}
}

func TestEmbed_DailyQuotaWallsEmbeddingsAsChat(t *testing.T) {
	for _, d := range []Dialect{DialectOpenAI, DialectGemini} {
		t.Run(string(d.or()), func(t *testing.T) {
			r := newRig(t, "tcp", Provider{Name: "p", Dialect: d, Script: Faults(DailyQuota)})
			_, err := r.embedder("p").Embed(context.Background(), &llm.EmbedRequest{Model: "emb", Input: []string{"a", "b"}})
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != 429 {
				t.Fatalf("err = %v, want a 429 ProviderError", err)
			}
			// The same wall a chat request gets.
			r2 := newRig(t, "tcp", Provider{Name: "p", Dialect: d, Script: Faults(DailyQuota)})
			var chat llm.Client = &openai.Client{BaseURL: r2.srv.BaseURL("p"), HTTPClient: r2.client}
			if d == DialectGemini {
				chat = &gemini.Client{BaseURL: r2.srv.BaseURL("p"), HTTPClient: r2.client}
			}
			_, cerr := chat.Complete(context.Background(), &llm.Request{Model: "emb",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			var cpe *llm.ProviderError
			if !errors.As(cerr, &cpe) || cpe.Type != pe.Type || cpe.Code != pe.Code || cpe.Status != pe.Status {
				t.Errorf("chat wall %#v, embeddings wall %#v", cpe, pe)
			}
			if got := r.srv.Stats(); got.Embeds("p", "emb") != 1 || got.Served("p", "emb", DailyQuota) != 1 {
				t.Errorf("records %+v", got.Records)
			}
			// Then the script is used up: the next one answers.
			if _, err := r.embedder("p").Embed(context.Background(), &llm.EmbedRequest{Model: "emb", Input: []string{"a"}}); err != nil {
				t.Errorf("after the script: %v", err)
			}
		})
	}
}

func TestEmbed_FaultsShapeTheBody(t *testing.T) {
	for _, k := range []Kind{StreamCut, StreamMalformed, Reset} {
		t.Run(string(k), func(t *testing.T) {
			r := newRig(t, "tcp", Provider{Name: "p", Script: Faults(k)})
			_, err := r.embedder("p").Embed(context.Background(), &llm.EmbedRequest{Model: "emb", Input: []string{"a"}})
			if err == nil {
				t.Fatal("no error")
			}
			var pe *llm.ProviderError
			if k == StreamMalformed && (!errors.As(err, &pe) || !errors.Is(err, openai.ErrMalformed)) {
				t.Errorf("err = %v, want a malformed answer", err)
			}
		})
	}
}

func TestEmbed_OpenAIShapes(t *testing.T) {
	r := newRig(t, "memory", Provider{Name: "p", Models: []string{"emb"}})
	post := func(body string) (int, map[string]any) {
		resp, err := r.client.Post(r.srv.BaseURL("p")+"/embeddings", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return resp.StatusCode, v
	}
	st, v := post(`{"model":"emb","input":"one","encoding_format":"base64","dimensions":4}`)
	data, _ := v["data"].([]any)
	if st != 200 || v["object"] != "list" || len(data) != 1 {
		t.Fatalf("%d %v", st, v)
	}
	item := data[0].(map[string]any)
	if item["object"] != "embedding" || item["embedding"] != vectorBase64(Vector("emb", "one", 4)) {
		t.Errorf("item %v", item)
	}
	if u := v["usage"].(map[string]any); u["prompt_tokens"] != 1.0 || u["total_tokens"] != 1.0 {
		t.Errorf("usage %v", u)
	}
	for _, tt := range []struct {
		body  string
		code  int
		param string
	}{
		{`{"model":"emb"}`, 400, "input"},
		{`{"input":"x"}`, 400, ""},
		{`{"model":"emb","input":"x","encoding_format":"hex"}`, 400, "encoding_format"},
		{`{"model":"other","input":"x"}`, 404, ""},
	} {
		st, v := post(tt.body)
		e, _ := v["error"].(map[string]any)
		if st != tt.code || e == nil || (tt.param != "" && e["param"] != tt.param) {
			t.Errorf("%s: %d %v", tt.body, st, v)
		}
	}
	if n := r.srv.Stats().Embeds("p", ""); n != 5 {
		t.Errorf("embeds %d, want 5", n)
	}
}

func TestEmbed_GeminiBatchModelMustMatchURL(t *testing.T) {
	r := newRig(t, "memory", Provider{Name: "g", Dialect: DialectGemini})
	resp, err := r.client.Post(r.srv.BaseURL("g")+"/models/emb:batchEmbedContents", "application/json",
		strings.NewReader(`{"requests":[{"model":"models/other","content":{"parts":[{"text":"x"}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
}

func TestVector_Spreads(t *testing.T) {
	// Texts that differ in their last byte must not get near-equal
	// vectors: a cosine near 1 would make every text look alike.
	a, b := Vector("m", "hello", 0), Vector("m", "hellp", 0)
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	if dot > 0.9 {
		t.Errorf("cosine %v between texts one byte apart: %v %v", dot, a, b)
	}
}
