package simulate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
)

// A prompt whose prefix is long enough is read from the cache the second
// time, in 128-token steps, within the cache's life; a short one never is,
// nor one sent again after the cache forgot it.
func TestPromptCache_ReadsARepeatedPrefix(t *testing.T) {
	srv, err := Start(Provider{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	clk := clock.NewFake(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	srv.Clock = clk
	ask := func(system, last string) int {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "system", "content": system}, {"role": "user", "content": last}}})
		req, _ := http.NewRequest("POST", srv.BaseURL("p")+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Usage struct {
				PromptTokens        int `json:"prompt_tokens"`
				PromptTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v.Usage.PromptTokensDetails.CachedTokens
	}
	long := strings.Repeat("Answer with care and cite your sources. ", 150) // about 1,500 tokens
	if n := ask(long, "one"); n != 0 {
		t.Fatalf("first sight of a prefix: %d cached tokens, want 0", n)
	}
	if n := ask(long, "two"); n < 1024 || n%128 != 0 {
		t.Fatalf("the same prefix again: %d cached tokens, want 1024 or more, a multiple of 128", n)
	}
	if ask("short", "one"); ask("short", "two") != 0 {
		t.Fatal("a prefix under 1,024 tokens was cached")
	}
	clk.Advance(6 * time.Minute)
	if n := ask(long, "three"); n != 0 {
		t.Fatalf("after six idle minutes: %d cached tokens, want 0 (the cache forgot it)", n)
	}
}
