package config

import (
	"slices"
	"strings"
	"testing"
)

// A target offers what its provider states plus its own; a route's
// requirements reach the router; unknown words are errors with a
// suggestion, and a region is region-CODE.
func TestOffers(t *testing.T) {
	c := mustParse(t, `providers:
  eu: {base_url: https://eu.example/v1, key_env: EU_KEY, offers: [zero_retention, region-eu]}
  us: {base_url: https://us.example/v1, key_env: US_KEY}
targets:
  eu/vision: {offers: [images, tools]}
routes:
  private:
    chain: [eu/vision, eu/text, us/any]
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
	want := [][]string{{"zero_retention", "region-eu", "images", "tools"}, {"zero_retention", "region-eu"}, nil}
	for i, w := range want {
		if got := r.Chain[i].Offers; !slices.Equal(got, w) || (w == nil) != (got == nil) {
			t.Errorf("%s offers %v, want %v", r.Chain[i].ID(), got, w)
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
