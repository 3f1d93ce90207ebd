package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinels that the problems of this package wrap; test for them with
// errors.Is, which sees through Errors and *Error.
var (
	// ErrKeyInFile means a key (or something that looks like one) was written
	// into the config file instead of an environment variable named by key_env.
	ErrKeyInFile = errors.New("key written in the config file")
	// ErrNoKeys means no config file was found and no provider key is set in
	// the environment, so Default has nothing to route to.
	ErrNoKeys = errors.New("no provider key set")
	// ErrUnknownRoute means Lookup was given a name that is neither a route
	// nor a provider/model address.
	ErrUnknownRoute = errors.New("unknown route")
	// ErrUnknownProvider means a provider/model address names a provider that
	// is neither declared nor a preset.
	ErrUnknownProvider = errors.New("unknown provider")
)

// Error is one problem in a config, located as precisely as the source allows.
// Its message reads "FILE:LINE:COLUMN: FIELD: MSG"; parts that are unknown
// (zero Line, empty File or Field) are left out.
type Error struct {
	// File is the config file's name as given to Load or Parse; empty for a
	// config built in code or by Default.
	File string
	// Line and Column are 1-based; 0 means unknown.
	Line, Column int
	// Field is the path of the offending field, like
	// "routes.default.chain[2]"; empty for a problem with the whole file.
	Field string
	// Msg says what is wrong and how to fix it. It never contains a key.
	Msg string
	// Err is the sentinel this problem is an instance of (ErrKeyInFile,
	// ErrUnknownProvider, ...), or nil.
	Err error
}

// Error returns "FILE:LINE:COLUMN: FIELD: MSG".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d:%d: ", e.Line, e.Column)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found in one config, in file order. Load and Parse
// return it (never empty) when the file is wrong, so all problems show at once.
type Errors []*Error

// Error returns one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem, so errors.As finds an *Error and errors.Is a
// sentinel.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sortErrors orders es by position; problems without one come last, in the
// order they were found.
func sortErrors(es Errors) {
	slices.SortStableFunc(es, func(a, b *Error) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

// synonyms maps words people often write to the field detour calls them.
var synonyms = map[string]string{
	"model_family":      "family",
	"context_window":    "context",
	"context_length":    "context",
	"max_tokens":        "max_output",
	"max_output_tokens": "max_output",
	"input":             "in",
	"output":            "out",
	"url":               "base_url",
	"base":              "base_url",
	"api_base":          "base_url",
	"endpoint":          "base_url",
	"env":               "key_env",
	"api_key_env":       "key_env",
	"key_var":           "key_env",
	"type":              "dialect",
	"api":               "dialect",
	"format":            "dialect",
	"billing":           "pool",
	"models":            "chain",
	"targets":           "chain",
	"fallbacks":         "chain",
	"timeout":           "deadline",
	"retries":           "max_per_target",
	"fail_closed":       "fail_closed_on",
	"no_fallback":       "fallback",
	"header":            "headers",
	"breaker":           "health",
	"threshold":         "failure_threshold",
	"failures":          "failure_threshold",
	"cooldown":          "wall_cooldown",
	"max_time":          "max_duration",
}

// suggest returns the candidate closest to word when it is close enough to
// be a typo, else "".
func suggest(word string, candidates []string) string {
	norm := strings.ToLower(strings.ReplaceAll(word, "-", "_"))
	if s, ok := synonyms[norm]; ok && slices.Contains(candidates, s) {
		return s
	}
	best, bestD := "", 0
	for _, c := range candidates {
		if strings.EqualFold(c, word) || strings.EqualFold(c, norm) {
			return c
		}
		d := distance(norm, strings.ToLower(c))
		limit := max(1, min(len(c), len(norm))/3)
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// didYouMean returns ` (did you mean "x"? WHAT are: a, b, c)`, leaving out
// the parts it has nothing for.
func didYouMean(word string, candidates []string, what string) string {
	s := suggest(word, candidates)
	var parts []string
	if s != "" {
		parts = append(parts, fmt.Sprintf("did you mean %q?", s))
	}
	if len(candidates) > 0 && what != "" {
		parts = append(parts, what+" are: "+strings.Join(candidates, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, " ") + ")"
}

// quote returns s quoted for a message, or a placeholder when s looks like a
// key, so that no key ever reaches an error string.
func quote(s string) string {
	if looksSecret(s) {
		return "(a value that looks like a key, not shown)"
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}
