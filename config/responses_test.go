package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/detourhq/detour/wire/responses"
)

// dialect: openai-responses gives the Responses client (base_url defaults
// to OpenAI's), and the openai-responses preset knows the sizes of the
// models served through that API alone, without putting them in the
// no-file default chain.
func TestOpenAIResponses_DialectAndPreset(t *testing.T) {
	c := mustParse(t, `providers:
  own: {dialect: openai-responses, key_env: OPENAI_API_KEY}
  copy: {dialect: openai-responses, base_url: https://responses.example/v1, key_env: COPY_KEY}
routes:
  deep:
    chain: [openai-responses/gpt-5-pro, own/o3-pro, copy/some-model]
`)
	routes, err := c.Build(BuildOptions{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-test-123456789", "COPY_KEY": "k-987654321"})})
	if err != nil {
		t.Fatal(err)
	}
	chain := routes["deep"].Chain
	want := []struct {
		dialect, endpoint, base string
		context, maxOutput      int
	}{
		{"openai-responses", "api.openai.com:443", "https://api.openai.com/v1", 400000, 272000},
		{"openai-responses", "api.openai.com:443", "", 0, 0},
		{"openai-responses", "responses.example:443", "https://responses.example/v1", 0, 0},
	}
	for i, w := range want {
		tg := chain[i]
		cl, ok := tg.Client.(*responses.Client)
		if !ok {
			t.Fatalf("%s: client %T, want *responses.Client", tg.ID(), tg.Client)
		}
		if tg.Dialect != w.dialect || tg.Endpoint != w.endpoint || cl.BaseURL != w.base || cl.APIKey == "" ||
			tg.Context != w.context || tg.MaxOutput != w.maxOutput {
			t.Errorf("%s: dialect %s endpoint %s base %q context %d max_output %d; want %+v",
				tg.ID(), tg.Dialect, tg.Endpoint, cl.BaseURL, tg.Context, tg.MaxOutput, w)
		}
	}
	if !chain[0].Reasoning {
		t.Error("the preset's pro model is not known to reason on every request")
	}

	d, err := Default(env(map[string]string{"OPENAI_API_KEY": "sk-test-123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Routes[DefaultRoute].Chain; !slices.Equal(got, []string{"openai/gpt-4o-mini"}) {
		t.Errorf("no-file chain with OPENAI_API_KEY = %v, want the openai preset's model alone", got)
	}
	if msg := noKeysMsg(); strings.Count(msg, "OPENAI_API_KEY") != 1 {
		t.Errorf("the no-keys message names OPENAI_API_KEY %d times: %s", strings.Count(msg, "OPENAI_API_KEY"), msg)
	}
}
