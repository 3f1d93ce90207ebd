package fit

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var refit = flag.Bool("refit", false, "print the text coefficients of each profile fitted anew to testdata (go test -run Refit ./fit/ -refit)")

// features are the terms of profile.cost, in the order of featureNames.
func features(c counts) []float64 {
	w := 0.0
	if c.words > 0 {
		w = min(1, max(0, (float64(c.foreign)/float64(c.words)-0.05)/0.10))
	}
	words, letters := float64(c.words), float64(c.letters)
	return []float64{(1 - w) * words, (1 - w) * letters, w * words, w * letters,
		float64(c.digitRuns3), float64(c.digits), float64(c.punct), float64(c.newlines),
		float64(c.cyrillic), float64(c.cjk), float64(c.hangul), float64(c.indic), float64(c.otherScript), float64(c.symbols)}
}

var featureNames = []string{"word", "letter", "fword", "fletter", "digit3", "digit", "punct", "newline",
	"cyrillic", "cjk", "hangul", "indic", "otherScript", "symbol"}

// TestRefit fits each profile's text coefficients to the reference set:
// non-negative least squares on the relative error, then every
// coefficient scaled so that the worst over- and under-estimate (in
// ratio, Arabic and Hindi aside) are equal. It prints the coefficients,
// and the error r they leave: |est-ref| <= r*min(est, ref).
func TestRefit(t *testing.T) {
	if !*refit {
		t.Skip("run with -refit")
	}
	refs := references(t)
	var names []string
	for name := range refs {
		if !strings.HasPrefix(name, "chat/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	type sample struct {
		x      []float64
		script bool
		ref    map[string]int
	}
	var samples []sample
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		c := scan(string(b))
		samples = append(samples, sample{features(c), c.indic+c.otherScript > 0, refs[name]})
	}
	for _, group := range [][]string{{"o200k"}, {"cl100k"}, {"llama3"}, {"gemma3"}, {"deepseek_v3"}, {"qwen3"}, {"claude2"},
		{"o200k", "llama3", "gemma3", "deepseek_v3", "qwen3"}} {
		var X [][]float64
		var y []float64
		for _, s := range samples {
			for _, tok := range group {
				X = append(X, s.x)
				y = append(y, float64(s.ref[tok]))
			}
		}
		w := nnls(X, y)
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range X {
			if samples[i/len(group)].script {
				continue
			}
			l := math.Log(dot(w, X[i]) / y[i])
			lo, hi = min(lo, l), max(hi, l)
		}
		scale := math.Exp(-(lo + hi) / 2)
		var b strings.Builder
		for i, n := range featureNames {
			fmt.Fprintf(&b, "%s: %.3f, ", n, w[i]*scale)
		}
		fmt.Printf("%s: r %.3f\n\t%s\n", strings.Join(group, "+"), math.Exp((hi-lo)/2)-1, b.String())
	}
}

func dot(w, x []float64) float64 {
	s := 0.0
	for i := range w {
		s += w[i] * x[i]
	}
	return s
}

// nnls minimizes the sum of ((X w - y) / y)^2 over w >= 0, by coordinate
// descent.
func nnls(X [][]float64, y []float64) []float64 {
	w := make([]float64, len(X[0]))
	for range 3000 {
		for j := range w {
			num, den := 0.0, 0.0
			for i := range X {
				r := y[i] - dot(w, X[i]) + w[j]*X[i][j]
				num += X[i][j] * r / (y[i] * y[i])
				den += X[i][j] * X[i][j] / (y[i] * y[i])
			}
			if den > 0 {
				w[j] = max(0, num/den)
			}
		}
	}
	return w
}
