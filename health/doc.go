// Package health keeps each target's circuit breaker: it parks a target after
// a wall or a run of transient failures, then lets exactly one probe through
// when the park ends.
//
// Health is per target ("provider/model"), never per host: two models of one
// provider are two keys. The package reads no clock; every method takes now.
//
//	b := health.New(health.Settings{}) // defaults: 3 failures, open 10 s
//	p, err := b.Allow("groq/llama-3.3-70b-versatile", now)
//	if errors.Is(err, health.ErrParked) {
//		// skip the target, record skipped_parked, try the next one
//	}
//	resp, err := send(...)
//	f := classify.Classify(err, now)
//	b.Done("groq/llama-3.3-70b-versatile", p, health.Outcome{Kind: f.Kind, Until: f.Until, Reason: f.Reason}, now)
package health
