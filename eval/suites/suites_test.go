package suites

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/detourhq/detour/grade"
)

// The built-in suite must parse, and every grader must pass every
// known-good answer and fail every known-bad one.
func TestBuiltinCheck(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	if s.Name != "builtin" {
		t.Errorf("suite name = %q, want builtin", s.Name)
	}
	for _, p := range s.Check(context.Background(), grade.Env{}) {
		t.Error(p.String())
	}
}

// BuiltinYAML returns the embedded file, and a copy of it.
func TestBuiltinYAML(t *testing.T) {
	a := BuiltinYAML()
	if len(a) == 0 {
		t.Fatal("BuiltinYAML is empty")
	}
	a[0] ^= 0xff
	if b := BuiltinYAML(); b[0] == a[0] {
		t.Error("BuiltinYAML returns the embedded bytes themselves, not a copy")
	}
}

// categories are the suite's categories; each needs tasks in both
// languages.
var categories = []string{"arithmetic", "date-constraints", "tax", "relative-date", "constraints", "nuance"}

func TestBuiltinCoverage(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	count := map[string]int{}
	for _, task := range s.Tasks {
		if task.Lang != "en" && task.Lang != "ja" {
			t.Errorf("task %q: lang %q, want en or ja", task.ID, task.Lang)
		}
		if !slices.Contains(categories, task.Category) {
			t.Errorf("task %q: category %q is not one of %v", task.ID, task.Category, categories)
		}
		count[task.Category+"/"+task.Lang]++
		if len(task.Good) < 2 || len(task.Bad) < 2 {
			t.Errorf("task %q: %d good and %d bad answers, want at least 2 of each", task.ID, len(task.Good), len(task.Bad))
		}
		if task.MaxTokens != grade.DefaultMaxTokens {
			t.Errorf("task %q: max_tokens %d, want the default %d", task.ID, task.MaxTokens, grade.DefaultMaxTokens)
		}
		if !strings.Contains(task.Prompt, "`ANSWER: <") {
			t.Errorf("task %q: the prompt does not ask for an `ANSWER: <...>` line", task.ID)
		}
		if task.Lang == "ja" && !strings.Contains(task.Prompt, "最後の行に `ANSWER: <") {
			t.Errorf("task %q: the Japanese prompt does not ask for 最後の行に `ANSWER: <...>`", task.ID)
		}
	}
	for _, c := range categories {
		for _, lang := range []string{"en", "ja"} {
			if n := count[c+"/"+lang]; n < 2 {
				t.Errorf("category %s has %d %s tasks, want at least 2", c, n, lang)
			}
		}
	}
	if len(s.Tasks) < 28 {
		t.Errorf("%d tasks, want at least 28", len(s.Tasks))
	}
}

// rawTask is what the keys test reads of a task straight from the YAML,
// to compare the graders' values with the recomputed ones.
type rawTask struct {
	ID    string `yaml:"id"`
	Grade struct {
		Extract string `yaml:"extract"`
		Numeric *struct {
			Value     float64 `yaml:"value"`
			Tolerance float64 `yaml:"tolerance"`
		} `yaml:"numeric"`
		Date       string   `yaml:"date"`
		Normalized []string `yaml:"normalized"`
		Text       *struct {
			MustInclude []string `yaml:"must_include"`
			MustExclude []string `yaml:"must_exclude"`
			MaxChars    int      `yaml:"max_chars"`
		} `yaml:"text"`
	} `yaml:"grade"`
}

// want is a task's key, recomputed from the task's inputs.
type want struct {
	// num is a numeric key before rounding, places the decimals the
	// prompt asks for.
	num    *big.Rat
	places int
	// date is a date key.
	date time.Time
	// letter is a multiple-choice key; options are the letters offered.
	letter  string
	options []string
	// text is the constraints the prompt states.
	text *textWant
	// traps are the values of common mistakes: `ANSWER: <trap>` must fail.
	traps []string
}

// textWant is the constraints a constraints task's prompt states.
type textWant struct {
	include, exclude []string
	maxChars         int
}

// TestBuiltinKeys recomputes every task's key from its inputs, written
// out again here, and compares it with the grader's value in the YAML;
// then grades the key (must pass) and the common mistakes (must fail).
func TestBuiltinKeys(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	var file struct {
		Tasks []rawTask `yaml:"tasks"`
	}
	if err := yaml.Unmarshal(BuiltinYAML(), &file); err != nil {
		t.Fatalf("reading builtin.yaml: %v", err)
	}
	keys := builtinKeys()
	seen := map[string]bool{}
	for _, raw := range file.Tasks {
		seen[raw.ID] = true
		task := s.Task(raw.ID)
		if task == nil {
			t.Errorf("task %q in the YAML is not in the parsed suite", raw.ID)
			continue
		}
		key, ok := keys[raw.ID]
		if !ok {
			t.Errorf("task %q: no recomputed key in builtinKeys", raw.ID)
			continue
		}
		t.Run(raw.ID, func(t *testing.T) { checkKey(t, task, raw, key(t)) })
	}
	for id := range keys {
		if !seen[id] {
			t.Errorf("builtinKeys has %q, which the suite does not", id)
		}
	}
}

// checkKey compares task's graders in raw with w, and grades w's key and
// traps.
func checkKey(t *testing.T, task *grade.Task, raw rawTask, w want) {
	ctx := context.Background()
	var key string
	switch {
	case w.num != nil:
		n := raw.Grade.Numeric
		if n == nil {
			t.Fatalf("no numeric grader; want one with value %s", w.num.FloatString(w.places))
		}
		rounded, _ := strconv.ParseFloat(roundHalfUp(w.num, w.places), 64)
		if math.Abs(n.Value-rounded) > 1e-9 {
			t.Errorf("numeric value %v, recomputed %s (exactly %s)", n.Value, roundHalfUp(w.num, w.places), w.num.FloatString(6))
		}
		// At most one unit of the last place asked for: half a unit, or a
		// whole one where rounding up is as defensible as rounding off.
		if unit := math.Pow(10, -float64(w.places)); n.Tolerance > unit+1e-12 {
			t.Errorf("numeric tolerance %v is wider than the last place asked for (%v)", n.Tolerance, unit)
		}
		key = roundHalfUp(w.num, w.places)
	case !w.date.IsZero():
		if raw.Grade.Date != w.date.Format(time.DateOnly) {
			t.Errorf("date %q, recomputed %s (%s)", raw.Grade.Date, w.date.Format(time.DateOnly), w.date.Weekday())
		}
		key = w.date.Format(time.DateOnly)
	case w.letter != "":
		if !slices.Equal(raw.Grade.Normalized, []string{w.letter}) {
			t.Errorf("normalized %q, want [%q]", raw.Grade.Normalized, w.letter)
		}
		for _, o := range w.options {
			if !strings.Contains(task.Prompt, "\n"+o+". ") {
				t.Errorf("the prompt offers no option %s", o)
			}
		}
		if !slices.Contains(w.options, w.letter) {
			t.Errorf("key %s is not among the options %v", w.letter, w.options)
		}
		key = w.letter
		for _, o := range w.options {
			if o != w.letter {
				w.traps = append(w.traps, o)
			}
		}
	case w.text != nil:
		g := raw.Grade.Text
		if g == nil {
			t.Fatal("no text grader")
		}
		if raw.Grade.Extract != "auto" {
			t.Errorf("extract %q, want auto: the constraints apply to the ANSWER line", raw.Grade.Extract)
		}
		if !slices.Equal(g.MustInclude, w.text.include) || !slices.Equal(g.MustExclude, w.text.exclude) || g.MaxChars != w.text.maxChars {
			t.Errorf("text grader %+v, the prompt states include %q, exclude %q, max %d", *g, w.text.include, w.text.exclude, w.text.maxChars)
		}
		prompt := strings.ToLower(task.Prompt)
		for _, s := range append(append([]string{}, w.text.include...), w.text.exclude...) {
			s = strings.ToLower(s)
			if !strings.Contains(prompt, `"`+s+`"`) && !strings.Contains(prompt, "「"+s+"」") {
				t.Errorf("the prompt does not name %q", s)
			}
		}
		if !strings.Contains(task.Prompt, strconv.Itoa(w.text.maxChars)) {
			t.Errorf("the prompt does not state the limit %d", w.text.maxChars)
		}
		return
	default:
		t.Fatal("empty key")
	}
	if v, err := task.Grade(ctx, grade.Env{}, "ANSWER: "+key); err != nil || !v.Pass {
		t.Errorf("the recomputed key %q does not pass: %v %v", key, v.Why, err)
	}
	if len(w.traps) == 0 {
		t.Error("no common mistake recorded")
	}
	for _, trap := range w.traps {
		if trap == key {
			t.Errorf("common mistake %q equals the key: the task does not discriminate", trap)
			continue
		}
		if v, err := task.Grade(ctx, grade.Env{}, "ANSWER: "+trap); err != nil || v.Pass {
			t.Errorf("the common mistake %q passes the grader (%v)", trap, err)
		}
	}
}

// TestBuiltinWeekdays checks every "Weekday, Month D[, YYYY]" and
// "[YYYY年]M月D日（曜）" in the prompts and known-good answers against the
// calendar; a date without a year is in the prompt's first year.
func TestBuiltinWeekdays(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	en := regexp.MustCompile(`(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (January|February|March|April|May|June|July|August|September|October|November|December) ([0-9]{1,2})(?:, ([0-9]{4}))?`)
	ja := regexp.MustCompile(`(?:([0-9]{4})年)?([0-9]{1,2})月([0-9]{1,2})日（([日月火水木金土])）`)
	yearRE := regexp.MustCompile(`20[0-9]{2}`)
	jaDays := []string{"日", "月", "火", "水", "木", "金", "土"}
	checked := 0
	for _, task := range s.Tasks {
		year := yearRE.FindString(task.Prompt)
		for _, text := range append([]string{task.Prompt}, task.Good...) {
			for _, m := range en.FindAllStringSubmatch(text, -1) {
				y := cmp(m[4], year)
				d, err := time.Parse("January 2 2006", m[2]+" "+m[3]+" "+y)
				if err != nil {
					t.Errorf("task %q: %q: %v", task.ID, m[0], err)
					continue
				}
				checked++
				if d.Weekday().String() != m[1] {
					t.Errorf("task %q: %q: %s is a %s", task.ID, m[0], d.Format(time.DateOnly), d.Weekday())
				}
			}
			for _, m := range ja.FindAllStringSubmatch(text, -1) {
				y, _ := strconv.Atoi(cmp(m[1], year))
				mo, _ := strconv.Atoi(m[2])
				dd, _ := strconv.Atoi(m[3])
				d := day(y, time.Month(mo), dd)
				checked++
				if jaDays[d.Weekday()] != m[4] {
					t.Errorf("task %q: %q: %s is %s曜日", task.ID, m[0], d.Format(time.DateOnly), jaDays[d.Weekday()])
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d weekday mentions; the patterns no longer match the suite", checked)
	}
}

// cmp returns a, or b when a is empty.
func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// builtinKeys recomputes each task's key from its inputs, restated here
// from the prompt.
func builtinKeys() map[string]func(t *testing.T) want {
	return map[string]func(t *testing.T) want{
		// ---- arithmetic
		"arith-margin-en": func(t *testing.T) want {
			list, disc, costShare := rat("240"), rat("0.25"), rat("0.55")
			sale := mul(list, sub(rat("1"), disc))
			cost := mul(list, costShare)
			return want{num: pct(sub(sale, cost), sale), places: 1, traps: []string{
				roundHalfUp(pct(sub(sale, cost), cost), 1),                           // margin over cost
				roundHalfUp(pct(sub(sale, mul(sale, costShare)), sale), 1),           // discount applied to the cost
				roundHalfUp(mul(sub(sub(rat("1"), costShare), disc), rat("100")), 1), // 100 − 55 − 25
			}}
		},
		"arith-stacked-discount-en": func(t *testing.T) want {
			list, cost := rat("180"), rat("95")
			fee := func(charged *big.Rat) *big.Rat { return add(mul(rat("0.029"), charged), rat("0.30")) }
			net := func(charged *big.Rat) *big.Rat { return pct(sub(sub(charged, cost), fee(charged)), charged) }
			charged := mul(list, rat("0.80"), rat("0.90"))
			flat30 := mul(list, rat("0.70"))
			return want{num: net(charged), places: 1, traps: []string{
				roundHalfUp(net(flat30), 1),                                      // 20% + 10% = 30% off
				roundHalfUp(pct(sub(sub(charged, cost), fee(charged)), cost), 1), // over cost
				roundHalfUp(pct(sub(charged, cost), charged), 1),                 // fee left out
			}}
		},
		"arith-list-price-en": func(t *testing.T) want {
			cost := rat("58.80")
			selling := quo(cost, rat("0.70"))
			return want{num: quo(selling, rat("0.90")), places: 2, traps: []string{
				roundHalfUp(quo(mul(cost, rat("1.30")), rat("0.90")), 2), // 30% markup on cost
				roundHalfUp(mul(selling, rat("1.10")), 2),                // +10% instead of ÷ 0.9
				roundHalfUp(selling, 2),                                  // the selling price
			}}
		},
		"arith-margin-ja": func(t *testing.T) want {
			list, disc, costShare := rat("12800"), rat("0.15"), rat("0.62")
			sale := mul(list, sub(rat("1"), disc))
			cost := mul(list, costShare)
			return want{num: pct(sub(sale, cost), sale), places: 1, traps: []string{
				roundHalfUp(pct(sub(sale, cost), cost), 1),
				roundHalfUp(pct(sub(sale, mul(sale, costShare)), sale), 1),
				roundHalfUp(mul(sub(sub(rat("1"), costShare), disc), rat("100")), 1),
			}}
		},
		"arith-lot-margin-ja": func(t *testing.T) want {
			perCase, cases, caseCost, shipping := 24, 5, rat("3600"), rat("1200")
			broken, price := 6, rat("250")
			totalCost := add(mul(caseCost, num(cases)), shipping)
			sold := perCase*cases - broken
			revenue := mul(price, num(sold))
			return want{num: pct(sub(revenue, totalCost), revenue), places: 1, traps: []string{
				roundHalfUp(pct(sub(mul(price, num(perCase*cases)), totalCost), mul(price, num(perCase*cases))), 1), // breakage ignored
				roundHalfUp(pct(sub(revenue, mul(caseCost, num(cases))), revenue), 1),                               // shipping left out
				roundHalfUp(pct(sub(revenue, totalCost), totalCost), 1),                                             // over cost
			}}
		},

		// ---- date-constraints
		"dc-release-review-en": func(t *testing.T) want {
			return dateConstraints(t, dateRules{
				start: day(2027, time.March, 1),
				after: day(2027, time.March, 4), days: 10,
				rules: []rule{
					weekend(),
					holidays(day(2027, time.March, 16), day(2027, time.March, 24)),
					nthWeekday(3, time.Thursday),
					{"odd date", func(d time.Time) bool { return d.Day()%2 == 1 }},
				},
			})
		},
		"dc-supplier-audit-en": func(t *testing.T) want {
			return dateConstraints(t, dateRules{
				start: day(2027, time.September, 1),
				after: day(2027, time.September, 3), days: 21,
				rules: []rule{
					weekend(),
					holidays(day(2027, time.September, 6), day(2027, time.September, 27)),
					lastWeekday(time.Friday),
					weekday(time.Tuesday),
				},
			})
		},
		"dc-delivery-ja": func(t *testing.T) want {
			return dateConstraints(t, dateRules{
				start: day(2027, time.April, 19),
				after: day(2027, time.April, 19), days: 10,
				rules: []rule{
					weekend(),
					holidays(day(2027, time.April, 29), day(2027, time.May, 3), day(2027, time.May, 4), day(2027, time.May, 5)),
					nthWeekday(1, time.Friday),
					{"even date", func(d time.Time) bool { return d.Day()%2 == 0 }},
					weekday(time.Tuesday),
				},
			})
		},
		"dc-client-visit-ja": func(t *testing.T) want {
			return dateConstraints(t, dateRules{
				start: day(2027, time.November, 1),
				after: day(2027, time.November, 12), days: 10,
				rules: []rule{
					weekend(),
					holidays(day(2027, time.November, 3), day(2027, time.November, 23)),
					nthWeekday(4, time.Thursday),
					{"even date", func(d time.Time) bool { return d.Day()%2 == 0 }},
					weekday(time.Monday),
				},
			})
		},

		// ---- tax
		"tax-vat-net-en": func(t *testing.T) want {
			// Pence; gross lines are standard-rated 20%, rail 0%.
			consulting := 6 * 8500
			licence := netOfVAT(23999, 20)
			rail := 4680
			catering := netOfVAT(15000, 20)
			printing := 7250
			total := consulting + licence + rail + catering + printing
			return want{num: big.NewRat(int64(total), 100), places: 2, traps: []string{
				pence(consulting + 23999*80/100 + rail + 15000*80/100 + printing),      // gross × 0.8
				pence(consulting + licence + netOfVAT(rail, 20) + catering + printing), // VAT taken out of rail
				pence(consulting + 23999 + rail + 15000 + printing),                    // gross lines as net
			}}
		},
		"tax-vat-gross-en": func(t *testing.T) want {
			// Cents; 19% standard, 7% food and books.
			chair := grossOfNet(24900, 19)
			coffee := grossOfNet(1890, 7)
			books, printer := 3400, 19900
			platter := grossOfNet(12000, 7)
			total := chair + coffee + books + printer + platter
			return want{num: big.NewRat(int64(total), 100), places: 2, traps: []string{
				pence(chair + grossOfNet(1890, 19) + books + printer + grossOfNet(12000, 19)),    // 19% on everything
				pence(chair + coffee + grossOfNet(books, 7) + grossOfNet(printer, 19) + platter), // VAT added to gross lines
				pence(24900 + 1890 + books + printer + 12000),                                    // no VAT added
			}}
		},
		"tax-receipt-excl-ja": func(t *testing.T) want {
			// Yen; 8% food, 10% everything else including beer.
			bento := exclOfIncl(780*5, 8)
			tea := exclOfIncl(150*12, 8)
			pens := 120 * 10
			room := exclOfIncl(8000, 10)
			beer := exclOfIncl(1280, 10)
			total := bento + tea + pens + room + beer
			return want{num: big.NewRat(int64(total), 1), places: 0, traps: []string{
				strconv.Itoa(bento + tea + pens + room + exclOfIncl(1280, 8)),                   // beer at 8%
				strconv.Itoa(exclOfIncl(780, 8)*5 + exclOfIncl(150, 8)*12 + pens + room + beer), // per unit, not per line
				strconv.Itoa(3900*100/110 + 1800*100/110 + pens + room + beer),                  // 10% everywhere
			}}
		},
		"tax-receipt-incl-ja": func(t *testing.T) want {
			// Yen; take-out food 8%, eat-in and the rest 10%.
			beans := inclOfExcl(1480, 8)
			lunch := inclOfExcl(1280, 10)
			bento, magazine := 864, 780
			detergent := inclOfExcl(398*2, 10)
			total := beans + lunch + bento + magazine + detergent
			return want{num: big.NewRat(int64(total), 1), places: 0, traps: []string{
				strconv.Itoa(beans + inclOfExcl(1280, 8) + bento + magazine + detergent),                  // eat-in at 8%
				strconv.Itoa(beans + lunch + bento + magazine + inclOfExcl(398, 10)*2),                    // per unit
				strconv.Itoa(beans + lunch + inclOfExcl(bento, 8) + inclOfExcl(magazine, 10) + detergent), // tax added twice
			}}
		},
		"tax-invoice-ja": func(t *testing.T) want {
			reduced := []int{4280, 1345, 248}
			standard := []int{598, 1198, 398}
			sum := func(xs []int) int {
				n := 0
				for _, x := range xs {
					n += x
				}
				return n
			}
			perLine := 0
			for _, x := range reduced {
				perLine += x * 8 / 100
			}
			for _, x := range standard {
				perLine += x * 10 / 100
			}
			total := sum(reduced)*8/100 + sum(standard)*10/100
			return want{num: big.NewRat(int64(total), 1), places: 0, traps: []string{
				strconv.Itoa(perLine), // rounded per line
				strconv.Itoa((sum(reduced)*8 + sum(standard)*10) / 100),           // rounded once for both rates
				strconv.Itoa((sum(reduced)*8+50)/100 + (sum(standard)*10+50)/100), // rounded half up
			}}
		},

		// ---- relative-date
		"rd-second-monday-en": func(t *testing.T) want {
			today := day(2027, time.January, 14)
			next := firstOfMonth(today, 1)
			key := nthWeekdayOf(next.Year(), next.Month(), time.Monday, 2)
			return want{date: key, traps: dates(key.AddDate(0, 0, 7), key.AddDate(0, 0, 6), nthWeekdayOf(2027, time.January, time.Monday, 2))}
		},
		"rd-last-business-day-en": func(t *testing.T) want {
			today := day(2027, time.May, 20)
			m := firstOfMonth(today, 2)
			key := lastBusinessDay(m.Year(), m.Month())
			next := firstOfMonth(today, 1)
			return want{date: key, traps: dates(firstOfMonth(today, 3).AddDate(0, 0, -1), lastBusinessDay(next.Year(), next.Month()))}
		},
		"rd-week-after-next-en": func(t *testing.T) want {
			today := day(2027, time.June, 16)
			monday := mondayOf(today)
			key := monday.AddDate(0, 0, 14+3)
			return want{date: key, traps: dates(key.AddDate(0, 0, -7), key.AddDate(0, 0, 1), today.AddDate(0, 0, 14))}
		},
		"rd-net-45-en": func(t *testing.T) want {
			due := day(2027, time.January, 27).AddDate(0, 0, 45)
			key := due
			for key.Weekday() == time.Saturday || key.Weekday() == time.Sunday {
				key = key.AddDate(0, 0, 1)
			}
			return want{date: key, traps: dates(due, due.AddDate(0, 0, -1), due.AddDate(0, 0, -2))}
		},
		"rd-saraishu-ja": func(t *testing.T) want {
			today := day(2027, time.September, 3)
			key := mondayOf(today).AddDate(0, 0, 14+2)
			return want{date: key, traps: dates(key.AddDate(0, 0, -7), key.AddDate(0, 0, 7), today.AddDate(0, 0, 14))}
		},
		"rd-second-monday-ja": func(t *testing.T) want {
			today := day(2027, time.May, 27)
			next := firstOfMonth(today, 1)
			key := nthWeekdayOf(next.Year(), next.Month(), time.Monday, 2)
			// The Monday of the month's second calendar week; reading June 1
			// as a Monday.
			return want{date: key, traps: dates(key.AddDate(0, 0, -7), day(2027, time.June, 8))}
		},
		"rd-business-days-ja": func(t *testing.T) want {
			today := day(2027, time.April, 28)
			gw := holidays(day(2027, time.April, 29), day(2027, time.May, 3), day(2027, time.May, 4), day(2027, time.May, 5))
			we := weekend()
			off := func(d time.Time) bool { return we.excludes(d) || gw.excludes(d) }
			key := addBusinessDays(today, 5, off)
			return want{date: key, traps: dates(
				addBusinessDays(today, 5, we.excludes), // holidays counted as business days
				addBusinessDays(today, 4, off),         // today counted as day 1
				addBusinessDays(today, 6, off),
			)}
		},

		// ---- constraints
		"cn-umbrella-en": func(t *testing.T) want {
			return want{text: &textWant{include: []string{"portable"}, exclude: []string{"rain", "wet", "water"}, maxChars: 100}}
		},
		"cn-lipogram-en": func(t *testing.T) want {
			return want{text: &textWant{include: []string{"city"}, exclude: []string{"e"}, maxChars: 90}}
		},
		"cn-moon-en": func(t *testing.T) want {
			return want{text: &textWant{include: []string{"tides"}, exclude: []string{"night", "sky", "space", "earth"}, maxChars: 80}}
		},
		"cn-smartphone-ja": func(t *testing.T) want {
			return want{text: &textWant{include: []string{"ポケット"}, exclude: []string{"スマートフォン", "スマホ", "電話", "携帯"}, maxChars: 40}}
		},
		"cn-sakura-ja": func(t *testing.T) want {
			return want{text: &textWant{include: []string{"四月"}, exclude: []string{"桜", "花", "春", "ピンク"}, maxChars: 30}}
		},
		"cn-video-call-ja": func(t *testing.T) want {
			return want{text: &textWant{include: []string{"画面"}, exclude: []string{"会議", "ミーティング", "打ち合わせ", "Zoom"}, maxChars: 35}}
		},

		// ---- nuance
		"nu-fortnight-en": func(t *testing.T) want {
			today := day(2027, time.February, 17)
			friday := nextWeekday(today, time.Friday)
			key := friday.AddDate(0, 0, 14)
			return want{date: key, traps: dates(today.AddDate(0, 0, 14), friday.AddDate(0, 0, 7), key.AddDate(0, 0, 2))}
		},
		"nu-week-on-tuesday-en": func(t *testing.T) want {
			today := day(2027, time.August, 30)
			tuesday := nextWeekday(today, time.Tuesday)
			key := tuesday.AddDate(0, 0, 7)
			return want{date: key, traps: dates(tuesday, key.AddDate(0, 0, 7), today.AddDate(0, 0, 7))}
		},
		"nu-bear-in-mind-en": func(t *testing.T) want {
			return want{letter: "C", options: []string{"A", "B", "C"}}
		},
		"nu-asatte-ja": func(t *testing.T) want {
			now := time.Date(2027, time.March, 30, 23, 40, 0, 0, time.UTC)
			y, m, d := now.Date()
			key := day(y, m, d+2) // 明後日: two calendar days after today
			return want{date: key, traps: dates(key.AddDate(0, 0, -1), key.AddDate(0, 0, 1))}
		},
		"nu-keigo-ja": func(t *testing.T) want {
			return want{letter: "C", options: []string{"A", "B", "C"}}
		},
		"nu-maemuki-ja": func(t *testing.T) want {
			return want{letter: "B", options: []string{"A", "B", "C"}}
		},
	}
}

// ---- date-constraint solving

// rule is one exclusion of a date-constraint task.
type rule struct {
	name     string
	excludes func(time.Time) bool
}

// dateRules is a date-constraint task: the earliest date from start that
// is at least days after after and that no rule excludes.
type dateRules struct {
	start time.Time
	after time.Time
	days  int
	rules []rule
}

// earliest solves r with the "at least days after" rule read as days+slack
// and with rule skip left out (-1: none).
func (r dateRules) earliest(slack, skip int) time.Time {
	from := r.after.AddDate(0, 0, r.days+slack)
	for d := r.start; ; d = d.AddDate(0, 0, 1) {
		if d.Before(from) {
			continue
		}
		ok := true
		for i, ru := range r.rules {
			if i != skip && ru.excludes(d) {
				ok = false
				break
			}
		}
		if ok {
			return d
		}
	}
}

// dateConstraints solves r, checks that reading "at least N days after"
// inclusively or exclusively gives the same date, and makes the dates
// found by ignoring one rule at a time (the common mistakes) its traps.
// At least three rules must change the answer when ignored.
func dateConstraints(t *testing.T, r dateRules) want {
	key := r.earliest(0, -1)
	if alt := r.earliest(1, -1); !alt.Equal(key) {
		t.Errorf("ambiguous: %d days after reads as %s or %s", r.days, key.Format(time.DateOnly), alt.Format(time.DateOnly))
	}
	w := want{date: key}
	binding := 0
	for i, ru := range r.rules {
		if d := r.earliest(0, i); !d.Equal(key) {
			binding++
			w.traps = append(w.traps, d.Format(time.DateOnly))
		} else {
			t.Logf("rule %q does not change the answer", ru.name)
		}
	}
	w.traps = append(w.traps, r.after.AddDate(0, 0, r.days).Format(time.DateOnly))
	if binding < 3 {
		t.Errorf("only %d rules change the answer when ignored; want at least 3", binding)
	}
	return w
}

func weekend() rule {
	return rule{"weekend", func(d time.Time) bool { return d.Weekday() == time.Saturday || d.Weekday() == time.Sunday }}
}

func weekday(wd time.Weekday) rule {
	return rule{wd.String(), func(d time.Time) bool { return d.Weekday() == wd }}
}

func holidays(days ...time.Time) rule {
	return rule{"holiday", func(d time.Time) bool {
		return slices.ContainsFunc(days, d.Equal)
	}}
}

// nthWeekday excludes the nth wd of every month.
func nthWeekday(n int, wd time.Weekday) rule {
	return rule{fmt.Sprintf("%d. %s", n, wd), func(d time.Time) bool {
		return d.Weekday() == wd && (d.Day()-1)/7+1 == n
	}}
}

// lastWeekday excludes the last wd of every month.
func lastWeekday(wd time.Weekday) rule {
	return rule{"last " + wd.String(), func(d time.Time) bool {
		return d.Weekday() == wd && d.AddDate(0, 0, 7).Month() != d.Month()
	}}
}

// ---- calendar helpers

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// firstOfMonth returns the first day of the month n months after d's.
func firstOfMonth(d time.Time, n int) time.Time { return day(d.Year(), d.Month()+time.Month(n), 1) }

// nthWeekdayOf returns the nth wd of the month.
func nthWeekdayOf(y int, m time.Month, wd time.Weekday, n int) time.Time {
	d := day(y, m, 1)
	for d.Weekday() != wd {
		d = d.AddDate(0, 0, 1)
	}
	return d.AddDate(0, 0, 7*(n-1))
}

// lastBusinessDay returns the month's last Monday-to-Friday day.
func lastBusinessDay(y int, m time.Month) time.Time {
	d := day(y, m+1, 0)
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, -1)
	}
	return d
}

// mondayOf returns the Monday that begins d's Monday-to-Sunday week.
func mondayOf(d time.Time) time.Time {
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// nextWeekday returns the first wd after d.
func nextWeekday(d time.Time, wd time.Weekday) time.Time {
	d = d.AddDate(0, 0, 1)
	for d.Weekday() != wd {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

// addBusinessDays returns the nth day after d that off does not exclude.
func addBusinessDays(d time.Time, n int, off func(time.Time) bool) time.Time {
	for n > 0 {
		d = d.AddDate(0, 0, 1)
		if !off(d) {
			n--
		}
	}
	return d
}

// dates formats ds as YYYY-MM-DD.
func dates(ds ...time.Time) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Format(time.DateOnly)
	}
	return out
}

// ---- exact arithmetic

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("bad rational " + s)
	}
	return r
}

func num(n int) *big.Rat { return big.NewRat(int64(n), 1) }

func mul(xs ...*big.Rat) *big.Rat {
	z := big.NewRat(1, 1)
	for _, x := range xs {
		z.Mul(z, x)
	}
	return z
}

func add(a, b *big.Rat) *big.Rat { return new(big.Rat).Add(a, b) }
func sub(a, b *big.Rat) *big.Rat { return new(big.Rat).Sub(a, b) }
func quo(a, b *big.Rat) *big.Rat { return new(big.Rat).Quo(a, b) }

// pct returns part / whole × 100.
func pct(part, whole *big.Rat) *big.Rat { return mul(quo(part, whole), rat("100")) }

// roundHalfUp formats the non-negative x with places decimals, rounding
// half up.
func roundHalfUp(x *big.Rat, places int) string {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	scaled := mul(x, new(big.Rat).SetInt(scale), big.NewRat(2, 1))
	scaled.Add(scaled, big.NewRat(1, 1))
	q := new(big.Int).Quo(scaled.Num(), scaled.Denom()) // floor of 2x·10^p + 1
	q.Quo(q, big.NewInt(2))
	return new(big.Rat).SetFrac(q, scale).FloatString(places)
}

// pence formats an amount in hundredths.
func pence(n int) string { return fmt.Sprintf("%d.%02d", n/100, n%100) }

// netOfVAT takes rate% VAT out of gross (hundredths), rounding half up.
func netOfVAT(gross, rate int) int { return (gross*100*2 + (100 + rate)) / (2 * (100 + rate)) }

// grossOfNet adds rate% VAT to net (hundredths), rounding half up.
func grossOfNet(net, rate int) int { return (net*(100+rate)*2 + 100) / 200 }

// exclOfIncl takes rate% tax out of a tax-inclusive yen amount, rounding
// down.
func exclOfIncl(incl, rate int) int { return incl * 100 / (100 + rate) }

// inclOfExcl adds rate% tax to a yen amount, rounding down.
func inclOfExcl(excl, rate int) int { return excl * (100 + rate) / 100 }
