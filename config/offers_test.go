package config

import (
	"slices"
	"strings"
	"testing"
)

// A target offers what its provider states plus its own, capabilities
// and data terms read apart: a provider that states only terms leaves its
// targets' capabilities unknown (nil), and an empty list declares none. A
// route's requirements reach the router; unknown words are errors with a
// suggestion, and a region is region-CODE.
func TestOffers(t *testing.T) {
	c := mustParse(t, `providers:
  eu: {base_url: https://eu.example/v1, key_env: EU_KEY, offers: [zero_retention, region-eu]}
  us: {base_url: https://us.example/v1, key_env: US_KEY}
  none: {base_url: https://none.example/v1, key_env: US_KEY, offers: []}
targets:
  eu/vision: {offers: [images, tools]}
  us/private: {offers: [no_training]}
routes:
  private:
    chain: [eu/vision, eu/text, us/any, us/private, none/m]
    requires: [zero_retention, region-eu]
`)
	routes, err := c.Build(BuildOptions{Getenv: env(map[string]string{"EU_KEY": "k-123456789", "US_KEY": "k-987654321"})})
	if err != nil {
		t.Fatal(err)
	}
	r := routes["private"]
	if !slices.Equal(r.Requires, []string{"zero_retention", "region-eu"}) {
		t.Errorf("requires = %v", r.Requires)
	}
	for i, w := range []struct{ offers, terms []string }{
		{offers: []string{"images", "tools"}, terms: []string{"zero_retention", "region-eu"}},
		{offers: nil, terms: []string{"zero_retention", "region-eu"}},
		{offers: nil, terms: nil},
		{offers: nil, terms: []string{"no_training"}},
		{offers: []string{}, terms: nil},
	} {
		got := r.Chain[i]
		if !slices.Equal(got.Offers, w.offers) || (w.offers == nil) != (got.Offers == nil) {
			t.Errorf("%s offers %#v, want %#v", got.ID(), got.Offers, w.offers)
		}
		if !slices.Equal(got.Terms, w.terms) {
			t.Errorf("%s terms %v, want %v", got.ID(), got.Terms, w.terms)
		}
	}
	_, err = Parse("detour.yaml", []byte("providers:\n  p: {base_url: https://p.example/v1, offers: [imagez, region-]}\n"))
	if err == nil || !strings.Contains(err.Error(), `did you mean "images"`) || !strings.Contains(err.Error(), `"region-"`) {
		t.Errorf("err = %v: want both words refused, the first with a suggestion", err)
	}
	if !strings.Contains(err.Error(), "detour.yaml:2:") {
		t.Errorf("err = %v: want the line", err)
	}
}
