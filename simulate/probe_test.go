package simulate_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/simulate"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
)

// Each dialect's wire client probes the simulator's model list or model
// metadata: a served model answers, an unknown one gets the dialect's 404,
// a wrong key its 401 (Gemini: 400), and no probe is a chat request.
func TestProbe_EachDialect(t *testing.T) {
	srv, err := simulate.Start(
		simulate.Provider{Name: "oa", Key: "k1", Models: []string{"m1"}},
		simulate.Provider{Name: "an", Key: "k2", Dialect: simulate.DialectAnthropic, Models: []string{"claude-x"}},
		simulate.Provider{Name: "ge", Key: "k3", Dialect: simulate.DialectGemini, Models: []string{"gemini-x"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	clients := map[string]func(key string) llm.Prober{
		"oa": func(k string) llm.Prober { return &openai.Client{BaseURL: srv.BaseURL("oa"), APIKey: k} },
		"an": func(k string) llm.Prober { return &anthropic.Client{BaseURL: srv.BaseURL("an"), APIKey: k} },
		"ge": func(k string) llm.Prober { return &gemini.Client{BaseURL: srv.BaseURL("ge"), APIKey: k} },
	}
	good := map[string][2]string{"oa": {"k1", "m1"}, "an": {"k2", "claude-x"}, "ge": {"k3", "gemini-x"}}
	ctx := context.Background()
	for name, mk := range clients {
		key, model := good[name][0], good[name][1]
		if err := mk(key).Probe(ctx, model); err != nil {
			t.Errorf("%s: probe of a served model: %v", name, err)
		}
		var pe *llm.ProviderError
		err := mk("wrong").Probe(ctx, model)
		if !errors.As(err, &pe) || (pe.Status != http.StatusUnauthorized && pe.Status != http.StatusBadRequest && pe.Status != http.StatusForbidden) {
			t.Errorf("%s: probe with a wrong key = %v, want the dialect's auth error", name, err)
		}
		if name != "oa" { // the OpenAI list does not name the model
			err = mk(key).Probe(ctx, "no-such-model")
			if !errors.As(err, &pe) || pe.Status != http.StatusNotFound {
				t.Errorf("%s: probe of an unknown model = %v, want a 404", name, err)
			}
		}
	}
	st := srv.Stats()
	if st.Total() != 0 {
		t.Errorf("probes counted as %d chat requests, want 0", st.Total())
	}
	if st.ModelReads("oa") != 2 || st.ModelReads("an") != 3 || st.ModelReads("ge") != 3 || st.ModelReads("") != 8 {
		t.Errorf("model reads = %v, want oa 2, an 3, ge 3", st.Reads)
	}
}
