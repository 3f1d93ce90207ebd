package gateway_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

// embedSetup adds embeddings targets and routes to the fixture: emb, one
// family at two providers (p1/emb-a then p2/emb-b), and embmix, which
// mixes families (p1/emb-a then p3/other-emb) and is not marked for
// embeddings, so only the router's rule keeps it apart.
func embedSetup(p1 ...sim.Fault) setup {
	return setup{
		targets: "  p1/emb-a: {family: emb, price: {in: 0.02, out: 0}}\n  p2/emb-b: {family: emb, price: {in: 0.02, out: 0}}\n" +
			"  p3/other-emb: {family: other-emb}\n",
		routes: "  emb:\n    embeddings: true\n    chain: [p1/emb-a, p2/emb-b]\n    budget: {base_backoff: 1ms, max_backoff: 5ms}\n" +
			"  embmix:\n    chain: [p1/emb-a, p3/other-emb]\n    budget: {base_backoff: 1ms, max_backoff: 5ms}\n",
		p1: p1,
	}
}

// f32 is v as the float32s the gateway sent: openai-go reads them into
// float64s.
func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func TestEmbed_SDKFailsOverWithinTheFamily(t *testing.T) {
	f := newFixture(t, embedSetup(sim.Fault{Kind: sim.DailyQuota}))
	var raw *http.Response
	got, err := f.openai(option.WithMaxRetries(0)).Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world"}},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "emb-b" || len(got.Data) != 2 || got.Object != "list" {
		t.Fatalf("answer %+v", got)
	}
	for i, text := range []string{"hello", "world"} {
		if d := cmp.Diff(sim.Vector("emb-b", text, 0), f32(got.Data[i].Embedding)); d != "" || got.Data[i].Index != int64(i) {
			t.Errorf("data[%d] index %d (-want +got):\n%s", i, got.Data[i].Index, d)
		}
	}
	if got.Usage.PromptTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens {
		t.Errorf("usage %+v", got.Usage)
	}
	for k, want := range map[string]string{"X-Detour-Route": "emb", "X-Detour-Provider": "p2", "X-Detour-Model": "emb-b",
		"X-Detour-Attempts": "2", "X-Detour-Degraded": "false"} {
		if v := raw.Header.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	recs := f.ledger.Records()
	if len(recs) != 2 || recs[0].Provider != "p1" || recs[0].Status != "http_429" || recs[0].Kind != "wall" ||
		recs[1].Provider != "p2" || recs[1].Status != "ok" || recs[1].Model != "emb-b" {
		t.Fatalf("ledger %+v", recs)
	}
	st := f.sim.Stats()
	if st.Embeds("p1", "emb-a") != 1 || st.Embeds("p2", "emb-b") != 1 || st.Total() != 2 {
		t.Errorf("providers saw %+v", st.Records)
	}
}

func TestEmbed_SDKNeverSendsToAnotherFamily(t *testing.T) {
	f := newFixture(t, embedSetup(sim.Fault{Kind: sim.NoCredits}))
	// The SDK's own retries stay on: x-should-retry: false keeps it to one call.
	_, err := f.openai().Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model: "embmix",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v, want an API error", err)
	}
	if oe.StatusCode < 400 || !strings.Contains(oe.Message, "vectors of different models do not mix") {
		t.Errorf("status %d message %q", oe.StatusCode, oe.Message)
	}
	if st := f.sim.Stats(); st.Embeds("p3", "") != 0 || st.Embeds("p1", "") != 1 || st.Total() != 1 {
		t.Errorf("providers saw %+v: want one request, to p1, none to the other family", st.Records)
	}
	// The other family's skip is a line too, though p1's wall ended the
	// request before its turn.
	if recs := f.ledger.Records(); len(recs) != 2 || recs[0].Provider != "p1" || recs[0].Status != "http_402" ||
		recs[1].Provider != "p3" || recs[1].Status != "skipped_contract" {
		t.Errorf("ledger %+v", recs)
	}
}

func TestEmbed_Base64AndDirectTarget(t *testing.T) {
	f := newFixture(t, embedSetup())
	resp, body := f.post("/embeddings", `{"model":"p1/emb-a","input":"hi","encoding_format":"base64","dimensions":3}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var v struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || len(v.Data) != 1 {
		t.Fatalf("%v: %s", err, body)
	}
	b, err := base64.StdEncoding.DecodeString(v.Data[0].Embedding)
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	for i := 0; i+4 <= len(b); i += 4 {
		got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	if d := cmp.Diff(sim.Vector("emb-a", "hi", 3), got); d != "" || v.Model != "emb-a" {
		t.Errorf("model %q (-want +got):\n%s", v.Model, d)
	}
}

func TestEmbed_RefusesWhatItCannotCarry(t *testing.T) {
	f := newFixture(t, embedSetup())
	for _, tt := range []struct {
		body, param string
		status      int
	}{
		{`{"model":"emb"}`, "input", 400},
		{`{"model":"emb","input":[]}`, "input", 400},
		{`{"model":"emb","input":[1,2,3]}`, "input", 400},
		{`{"model":"emb","input":"x","encoding_format":"hex"}`, "encoding_format", 400},
		{`{"model":"emb","input":"x","dimensions":0}`, "dimensions", 400},
		{`{"model":"emb","input":"x","task":"query"}`, "task", 400},
		{`{"model":"nope","input":"x"}`, "model", 404},
	} {
		resp, body := f.post("/v1/embeddings", tt.body)
		var v struct {
			Error struct {
				Param string `json:"param"`
				Type  string `json:"type"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(body), &v)
		if resp.StatusCode != tt.status || v.Error.Param != tt.param || v.Error.Type == "" {
			t.Errorf("%s: %d %s", tt.body, resp.StatusCode, body)
		}
	}
	resp, _ := f.post("/v1/embeddings", `{"model":"emb","input":"x"}`, "Authorization", "Bearer wrong-key-0123456789")
	if resp.StatusCode != 401 {
		t.Errorf("a wrong key got %d", resp.StatusCode)
	}
	if n := f.sim.Stats().Total(); n != 0 {
		t.Errorf("refused requests reached providers: %d", n)
	}
}
