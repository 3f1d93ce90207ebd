// Package classify reads one failed attempt, an *llm.ProviderError or a
// transport error, and says what it means: its Kind, how long the provider
// asked to wait, when the target may be tried again, and a one-line reason.
//
// It is pure: it knows no HTTP client, reads no clock (now is an argument) and
// imports no wire package. All provider error knowledge lives in its tables
// (tables.go), each row with its source; the retry hints each have a small
// parser of their own (ParseRetryAfter, ParseDuration, ParseMessageWait, ...).
//
//	f := classify.Classify(err, time.Now())
//	if f.Kind == classify.Wall { /* park until f.Until, move on */ }
//	log.Print(f.Status, " ", f.Reason) // http_429 429 tokens per day (TPD) exhausted; resets in 7m12s
package classify
