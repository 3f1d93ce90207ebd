//go:build race

package report

// raceDetector is true when the tests run with -race, which makes parsing
// about ten times slower: the scale tests then read smaller ledgers.
const raceDetector = true
