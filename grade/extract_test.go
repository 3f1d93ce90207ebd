package grade

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestExtract_Modes(t *testing.T) {
	tests := []struct {
		name, mode, answer, want string
	}{
		{"auto takes text after marker", extractAuto, "Let me think.\n20 + 5 = 25\nANSWER: 25", "25"},
		{"auto marker case-insensitive", extractAuto, "answer: yes", "yes"},
		{"auto final answer marker", extractAuto, "work...\nFinal answer: 42.", "42"},
		{"auto last marker wins", extractAuto, "Answer: 1\nwait, no\nAnswer: 2", "2"},
		{"auto markdown bold marker", extractAuto, "**Answer:** 12.5", "12.5"},
		{"auto bold around marker and colon outside", extractAuto, "**Answer**: 12.5", "12.5"},
		{"auto heading marker", extractAuto, "## Final Answer: **Tokyo**", "Tokyo"},
		{"auto list marker", extractAuto, "- Answer: `x + 1`", "x + 1"},
		{"auto empty marker takes next line", extractAuto, "Answer:\n\n  **7**  \nthanks", "7"},
		{"auto japanese full-width colon", extractAuto, "考えます。\n答え：12個", "12個"},
		{"auto japanese ascii colon", extractAuto, "答え: 東京", "東京"},
		{"auto japanese kaito", extractAuto, "回答：はい。", "はい"},
		{"auto japanese short", extractAuto, "答：3", "3"},
		{"auto marker mid-line ignored", extractAuto, "The Answer: is below\n5", "The Answer: is below\n5"},
		{"auto no marker takes whole, stripped", extractAuto, "  **Paris.**  ", "Paris"},
		{"auto keeps ellipsis", extractAuto, "wait...", "wait..."},
		{"auto answers is not a marker", extractAuto, "Answers: many", "Answers: many"},
		{"whole trims only", extractWhole, "  **x**\n", "**x**"},
		{"last line", extractLastLine, "a\nb \n\n  \n", "b"},
		{"last line of empty", extractLastLine, " \n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := extract(tt.mode, tt.answer); got != tt.want {
				t.Errorf("extract(%q, %q) = %q, want %q", tt.mode, tt.answer, got, tt.want)
			}
		})
	}
}

func TestFences_LastCodeBlock(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"none", "plain", "plain"},
		{"one", "x\n```js\nf()\n```\ny", "f()\n"},
		{"last wins", "```\na\n```\n```python\nb\n```", "b\n"},
		{"tilde", "~~~\nc\n~~~", "c\n"},
		{"longer fence holds shorter", "````md\n```\ninner\n```\n````", "```\ninner\n```\n"},
		{"unclosed runs to end", "```go\nfunc f() {", "func f() {"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lastCode(tt.in); got != tt.want {
				t.Errorf("lastCode(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNumbers(t *testing.T) {
	tests := []struct {
		name, in string
		want     []float64
		percent  bool // of the last number
	}{
		{"plain", "12.5", []float64{12.5}, false},
		{"thousands", "total 1,234.5 dollars", []float64{1234.5}, false},
		{"full-width", "１２．５", []float64{12.5}, false},
		{"unicode minus", "−3", []float64{-3}, false},
		{"ascii minus after space", "x = -3", []float64{-3}, false},
		{"minus before currency", "-$3.50", []float64{-3.5}, false},
		{"yen sign after", "¥1,000円", []float64{1000}, false},
		{"trailing percent", "about 12.5%", []float64{12.5}, true},
		{"percent after space", "12.5 %", []float64{12.5}, true},
		{"last number wins", "step 1: 20, so ANSWER: 12.5", []float64{1, 20, 12.5}, false},
		{"date parts are not negative", "2027-01-11", []float64{2027, 1, 11}, false},
		{"range is not negative", "pages 3-5", []float64{3, 5}, false},
		{"list is not thousands", "1,2,3", []float64{1, 2, 3}, false},
		{"version tail skipped", "v1.2.3", []float64{1.2}, false},
		{"trailing period", "It is 42.", []float64{42}, false},
		{"none", "no digits here", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := Numbers(tt.in)
			var got []float64
			for _, n := range ns {
				got = append(got, n.Value)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Numbers(%q) (-want +got):\n%s", tt.in, diff)
			}
			if len(ns) > 0 && ns[len(ns)-1].Percent != tt.percent {
				t.Errorf("Numbers(%q) last Percent = %v, want %v", tt.in, ns[len(ns)-1].Percent, tt.percent)
			}
		})
	}
}

func TestDates(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"iso", "due 2027-01-11.", []string{"2027-01-11"}},
		{"slashes", "2027/1/11", []string{"2027-01-11"}},
		{"dots", "2027.01.11", []string{"2027-01-11"}},
		{"month day year", "January 11, 2027", []string{"2027-01-11"}},
		{"abbreviated no comma", "Jan 11 2027", []string{"2027-01-11"}},
		{"abbreviation with period and ordinal", "Jan. 11th, 2027", []string{"2027-01-11"}},
		{"day month year", "11 January 2027", []string{"2027-01-11"}},
		{"weekday first", "Monday, January 11, 2027", []string{"2027-01-11"}},
		{"japanese", "2027年1月11日", []string{"2027-01-11"}},
		{"japanese with weekday", "答え：2027年1月11日(月)です", []string{"2027-01-11"}},
		{"japanese full-width digits", "２０２７年１月１１日", []string{"2027-01-11"}},
		{"case-insensitive month", "JANUARY 11, 2027", []string{"2027-01-11"}},
		{"order of appearance", "from 2027-01-04 to January 11, 2027", []string{"2027-01-04", "2027-01-11"}},
		{"impossible day skipped", "2027-02-30", nil},
		{"month 13 skipped", "2027/13/01", nil},
		{"embedded in digits skipped", "12027-01-11", nil},
		{"none", "next Monday", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range Dates(tt.in) {
				got = append(got, d.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Dates(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  Tokyo ", "tokyo"},
		{"「東京」。", "東京"},
		{"『はい』、", "はい"},
		{"\"New   York\"", "new york"},
		{"ＡＢＣ", "abc"},
		{"(Paris).", "paris"},
		{"Straße", "strasse"},
		{"-5", "-5"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := normalize(tt.in); got != tt.want {
				t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzNumber(f *testing.F) {
	for _, s := range []string{"12.5", "1,234.5", "１２．５", "−3", "-$3", "12.5%", "step 1: 20, ANSWER: 12.5",
		"2027-01-11", "1e308", strings.Repeat("9", 400), "¥-1,000", "\xff-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ns := Numbers(s)
		last, ok := LastNumber(s)
		if ok != (len(ns) > 0) {
			t.Fatalf("LastNumber ok = %v with %d numbers", ok, len(ns))
		}
		for _, n := range ns {
			if math.IsNaN(n.Value) {
				t.Fatalf("NaN from %q", s)
			}
			if n.Text == "" || !utf8.ValidString(n.Text) {
				t.Fatalf("bad Text %q", n.Text)
			}
			if (n.Value < 0) != strings.HasPrefix(n.Text, "-") && n.Value != 0 {
				t.Fatalf("sign of %v does not match text %q", n.Value, n.Text)
			}
		}
		if ok && last != ns[len(ns)-1] {
			t.Fatalf("LastNumber = %+v, want the last of Numbers %+v", last, ns[len(ns)-1])
		}
		// A number alone is found as itself.
		if ok && !math.IsInf(last.Value, 0) {
			again, ok2 := LastNumber(last.Text)
			if !ok2 || again.Value != last.Value {
				t.Fatalf("LastNumber(%q) = %v, %v; want %v", last.Text, again.Value, ok2, last.Value)
			}
		}
	})
}

func FuzzDate(f *testing.F) {
	for _, s := range []string{"2027-01-11", "2027/1/11", "January 11, 2027", "11 January 2027", "2027年1月11日(月)",
		"Jan 11 2027", "２０２７年１月１１日", "2027-02-30", "0000-01-01", "Sept. 31st, 2027"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ds := Dates(s)
		last, ok := LastDate(s)
		if ok != (len(ds) > 0) {
			t.Fatalf("LastDate ok = %v with %d dates", ok, len(ds))
		}
		for _, d := range ds {
			if d.Month < 1 || d.Month > 12 || d.Day < 1 || d.Day > 31 || d.Year < 0 || d.Year > 9999 {
				t.Fatalf("impossible date %+v from %q", d, s)
			}
			// Every date found reads back from its ISO form.
			if back, ok := parseDate(d.String()); !ok || back != d {
				t.Fatalf("date %+v does not round-trip through %q", d, d.String())
			}
		}
		if ok && last != ds[len(ds)-1] {
			t.Fatalf("LastDate = %v, want %v", last, ds[len(ds)-1])
		}
	})
}
