package gateway_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	sim "github.com/detourhq/detour/simulate"
)

// genaiClient is an official Gen AI client for the fixture's gateway.
func (f *fixture) genaiClient(t *testing.T) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(ctx(t), &genai.ClientConfig{APIKey: clientKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.ts.URL, APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The Gen AI SDK's Models.EmbedContent (batchEmbedContents on the wire)
// goes through router.Embed like POST /v1/embeddings: a wall on the first
// target fails over within the family, one ledger line per attempt, the
// vectors those of the model that answered.
func TestGeminiEmbed_SDKFailsOverWithinTheFamily(t *testing.T) {
	f := newFixture(t, embedSetup(sim.Fault{Kind: sim.DailyQuota}))
	got, err := f.genaiClient(t).Models.EmbedContent(ctx(t), "emb",
		[]*genai.Content{genai.NewContentFromText("hello", genai.RoleUser), genai.NewContentFromText("world", genai.RoleUser)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Embeddings) != 2 {
		t.Fatalf("%d embeddings, want 2", len(got.Embeddings))
	}
	for i, text := range []string{"hello", "world"} {
		if d := cmp.Diff(sim.Vector("emb-b", text, 0), got.Embeddings[i].Values); d != "" {
			t.Errorf("embeddings[%d] (-want +got):\n%s", i, d)
		}
	}
	recs := f.ledger.Records()
	if len(recs) != 2 || recs[0].Provider != "p1" || recs[0].Kind != "wall" || recs[1].Provider != "p2" || recs[1].Status != "ok" {
		t.Fatalf("ledger %+v", recs)
	}
	if st := f.sim.Stats(); st.Embeds("p1", "emb-a") != 1 || st.Embeds("p2", "emb-b") != 1 {
		t.Errorf("providers saw %+v", st.Records)
	}
}

// One embedContent answers {"embedding": ...} with the x-detour-* headers;
// what detour cannot carry (taskType changes the vector) is a Google-shaped
// 400 before any send; a mixed-family route never reaches the other family.
func TestGeminiEmbed_OneContentRefusalsAndFamilies(t *testing.T) {
	f := newFixture(t, embedSetup())
	resp, body := f.post("/v1beta/models/emb:embedContent", `{"content":{"parts":[{"text":"hello"}]},"outputDimensionality":4}`,
		"Authorization", "", "x-goog-api-key", clientKey)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, `{"embedding":{"values":[`) || resp.Header.Get("X-Detour-Model") != "emb-a" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = f.post("/v1beta/models/emb:embedContent", `{"content":{"parts":[{"text":"q"}]},"taskType":"RETRIEVAL_QUERY"}`,
		"Authorization", "", "x-goog-api-key", clientKey)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"status":"INVALID_ARGUMENT"`) || !strings.Contains(body, "taskType") {
		t.Fatalf("taskType: %d %s", resp.StatusCode, body)
	}
	f.sim.ClearStats()
	enqueue(f, "p1", "emb-a", sim.Fault{Kind: sim.DailyQuota})
	_, err := f.genaiClient(t).Models.EmbedContent(ctx(t), "embmix", []*genai.Content{genai.NewContentFromText("x", genai.RoleUser)}, nil)
	var ae genai.APIError
	if !errors.As(err, &ae) || f.sim.Stats().Embeds("p3", "other-emb") != 0 {
		t.Fatalf("mixed route: %v (%T); p3 got %d", err, err, f.sim.Stats().Embeds("p3", "other-emb"))
	}
}
