package grade

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/unicode/norm"
)

// Date is a calendar date found in an answer's text.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// String returns the date as YYYY-MM-DD.
func (d Date) String() string {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// monthRE matches an English month name or its abbreviation.
const monthRE = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`

// dateForms are the date forms Dates reads, each with the submatch
// indexes of year, month and day, compiled on first use. A weekday
// before ("Monday, January 11, 2027") or after ("2027年1月11日(月)") is
// left outside the match.
var dateForms = sync.OnceValue(func() []dateForm {
	return []dateForm{
		{regexp.MustCompile(`([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})`), 1, 2, 3, false},
		{regexp.MustCompile(`([0-9]{4})/([0-9]{1,2})/([0-9]{1,2})`), 1, 2, 3, false},
		{regexp.MustCompile(`([0-9]{4})\.([0-9]{1,2})\.([0-9]{1,2})`), 1, 2, 3, false},
		{regexp.MustCompile(`([0-9]{4})\s*年\s*([0-9]{1,2})\s*月\s*([0-9]{1,2})\s*日`), 1, 2, 3, false},
		// January 11, 2027; Jan 11 2027; Jan. 11th, 2027
		{regexp.MustCompile(`(?i)\b` + monthRE + `\s+([0-9]{1,2})(?:st|nd|rd|th)?,?\s+([0-9]{4})`), 3, 1, 2, true},
		// 11 January 2027; 11th of January, 2027
		{regexp.MustCompile(`(?i)\b([0-9]{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRE + `,?\s+([0-9]{4})`), 3, 2, 1, true},
	}
})

// dateForm is one form of dateForms.
type dateForm struct {
	re          *regexp.Regexp
	y, m, d     int
	namedMonths bool
}

// monthNames maps the first three letters of a month's name to it.
var monthNames = map[string]time.Month{
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August,
	"sep": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
}

// Dates returns the valid calendar dates written in s, in the order they
// begin: 2027-01-11, 2027/1/11, 2027.01.11, January 11, 2027, Jan 11 2027,
// 11 January 2027, 2027年1月11日. s is NFKC-normalized first, so
// full-width digits read too. A match with digits right before or after
// it ("12027-01-11") or an impossible day ("2027-02-30") is skipped.
func Dates(s string) []Date {
	s = norm.NFKC.String(s)
	type found struct {
		at int
		d  Date
	}
	var all []found
	for _, f := range dateForms() {
		for _, m := range f.re.FindAllStringSubmatchIndex(s, -1) {
			if m[0] > 0 && isDigitByte(s[m[0]-1]) || m[1] < len(s) && isDigitByte(s[m[1]-1]) && isDigitByte(s[m[1]]) {
				continue
			}
			part := func(i int) string { return s[m[2*i]:m[2*i+1]] }
			y, _ := strconv.Atoi(part(f.y))
			d, _ := strconv.Atoi(part(f.d))
			var mon time.Month
			if f.namedMonths {
				mon = monthNames[strings.ToLower(part(f.m))[:3]]
			} else {
				n, _ := strconv.Atoi(part(f.m))
				mon = time.Month(n)
			}
			if mon < time.January || mon > time.December || d < 1 {
				continue
			}
			t := time.Date(y, mon, d, 0, 0, 0, 0, time.UTC)
			if t.Day() != d || t.Month() != mon {
				continue // February 30th
			}
			all = append(all, found{m[0], Date{y, mon, d}})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })
	out := make([]Date, len(all))
	for i, f := range all {
		out[i] = f.d
	}
	return out
}

// LastDate returns the last date of s; ok is false when s has none.
func LastDate(s string) (d Date, ok bool) {
	ds := Dates(s)
	if len(ds) == 0 {
		return Date{}, false
	}
	return ds[len(ds)-1], true
}

// parseDate reads a YYYY-MM-DD literal.
func parseDate(s string) (Date, bool) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
	if err != nil {
		return Date{}, false
	}
	return Date{t.Year(), t.Month(), t.Day()}, true
}
