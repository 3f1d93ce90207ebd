package config

import (
	"errors"
	"strings"
	"testing"
)

func TestParse_EmbeddingsRouteRefusesMixedFamilies(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // a part of the error; "" for none
	}{
		{
			name: "one family is fine",
			src: "routes:\n  emb:\n    embeddings: true\n    chain: [openai/text-embedding-3-small, openrouter/openai/text-embedding-3-small]\n" +
				"targets:\n  openrouter/openai/text-embedding-3-small: {family: text-embedding-3-small}\n",
		},
		{
			name: "mixed families are refused at the target of another family",
			src:  "routes:\n  emb:\n    embeddings: true\n    chain: [openai/text-embedding-3-small, mistral/mistral-embed]\n",
			want: `detour.yaml:4:44: routes.emb.chain[1]: "mistral/mistral-embed" is of model family "mistral-embed", but chain[0] "openai/text-embedding-3-small" is of "text-embedding-3-small", and this route has embeddings: true`,
		},
		{
			name: "a route without the mark may mix (the router keeps each request within one family)",
			src:  "routes:\n  r: {chain: [openai/text-embedding-3-small, mistral/mistral-embed]}\n",
		},
		{
			name: "embeddings: false may mix",
			src:  "routes:\n  r: {embeddings: false, chain: [openai/text-embedding-3-small, mistral/mistral-embed]}\n",
		},
		{
			name: "not a boolean",
			src:  "routes:\n  r: {embeddings: yes please, chain: [openai/text-embedding-3-small]}\n",
			want: "routes.r.embeddings",
		},
		{
			name: "defaults has no embeddings field",
			src:  "defaults: {embeddings: true}\nroutes:\n  r: {chain: [openai/text-embedding-3-small]}\n",
			want: `detour.yaml:1:12: defaults.embeddings: unknown field "embeddings"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("detour.yaml", []byte(tt.src))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to hold %s", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 {
				t.Errorf("err %v has no line", err)
			}
			_ = c
		})
	}
}

func TestParse_EmbeddingsMarkIsKept(t *testing.T) {
	c := mustParse(t, "routes:\n  emb: {embeddings: true, chain: [openai/text-embedding-3-small]}\n  chat: {chain: [openai/gpt-4o-mini]}\n")
	if !c.Routes["emb"].Embeddings || c.Routes["chat"].Embeddings {
		t.Errorf("embeddings: %v, %v", c.Routes["emb"].Embeddings, c.Routes["chat"].Embeddings)
	}
}
