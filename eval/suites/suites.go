package suites

import (
	_ "embed"

	"github.com/detourhq/detour/grade"
)

// builtinYAML is builtin.yaml, embedded at build time.
//
//go:embed builtin.yaml
var builtinYAML []byte

// Builtin parses and returns the built-in suite "builtin": multi-step
// arithmetic, date constraints, tax normalisation, relative dates,
// negative text constraints and nuance, each in English and Japanese.
// Each call parses anew, so callers own the result. The error is never
// expected in a released binary: the package's tests parse and check the
// suite.
func Builtin() (*grade.Suite, error) {
	return grade.Parse("builtin", builtinYAML)
}

// BuiltinYAML returns a copy of the built-in suite's YAML source, e.g. to
// write it out as a starting point for a custom suite.
func BuiltinYAML() []byte {
	return append([]byte(nil), builtinYAML...)
}
