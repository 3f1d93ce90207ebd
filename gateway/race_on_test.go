//go:build race

package gateway_test

// raceOn says the race detector is on: the long loops of a test run
// shorter, as each request costs several times as much.
const raceOn = true
