// Package policy holds a request's Budget and the pure Decide, which turns one
// classified failure and what the router knows into exactly one Action.
//
// Decide reads no clock and no random source: now and the jitter are
// arguments, so every decision is a table test.
//
//	d := policy.Decide(policy.Input{Failure: f, Now: now, Budget: policy.Interactive(), ...})
//	switch d.Action { case policy.Retry: sleep(d.Wait) ... }
package policy
