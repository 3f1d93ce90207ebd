package config

import (
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"
)

func TestHangScratch(t *testing.T) {
	seeds := [][]byte{[]byte(buildSrc), []byte("routes:\n  r: &a {chain: [groq/x]}\n  s: {<<: *a, fallback: false}\n"),
		[]byte("providers:\n  groq: {api_key: sk-abcdefghijklmnopqrstuvwxyz}\n"), []byte("routes: {r: {chain: [a/b], budget: {deadline: 30, <<: [*x]}}}\n"),
		[]byte("a: &a [*a]\n---\n- x\n")}
	ex, _ := os.ReadFile("../examples/detour.yaml")
	seeds = append(seeds, ex)
	rng := rand.New(rand.NewSource(1))
	toks := []string{"{", "}", "[", "]", ":", " ", "\n", "-", "&a", "*a", "<<", "'", "\"", "#", ",", "?", "!", "|", ">", "---", "\t"}
	for i := 0; i < 20000; i++ {
		s := append([]byte(nil), seeds[rng.Intn(len(seeds))]...)
		for k := 0; k < 1+rng.Intn(4); k++ {
			p := rng.Intn(len(s) + 1)
			switch rng.Intn(3) {
			case 0:
				s = append(s[:p], append([]byte(toks[rng.Intn(len(toks))]), s[p:]...)...)
			case 1:
				if p < len(s) {
					s = append(s[:p], s[p+1:]...)
				}
			case 2:
				if p < len(s) {
					s[p] = byte(rng.Intn(128))
				}
			}
		}
		done := make(chan struct{})
		go func() { defer func() { recover(); close(done) }(); Parse("f.yaml", s) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			os.WriteFile("/tmp/hang.yaml", s, 0o644)
			t.Fatalf("hang on %q", s)
		}
		_ = fmt.Sprint
	}
}
