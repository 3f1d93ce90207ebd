package evalresults

import (
	"strconv"
	"time"
)

// Outcome is what became of one call: the answer graded, or no answer.
type Outcome string

// The outcomes of a call. Correct, Wrong and Truncated are answers;
// Error is no answer (the target did not answer, after the router's
// retries on it), which counts against reachability, never accuracy.
const (
	// Correct is an answer its task's graders all passed.
	Correct Outcome = "correct"
	// Wrong is an answer a grader failed.
	Wrong Outcome = "wrong"
	// Truncated is an answer cut at its output limit (finish reason
	// length), whatever it says: it counts as not correct.
	Truncated Outcome = "truncated"
	// Error is a call that got no answer.
	Error Outcome = "error"
)

// Answered reports whether the outcome is an answer.
func (o Outcome) Answered() bool { return o == Correct || o == Wrong || o == Truncated }

// Record is one line of a results file: one call of one target on one
// task, one repetition.
type Record struct {
	// Suite and Digest name the suite and its version (grade.Suite.Digest):
	// a rerun on a changed suite measures again.
	Suite  string `json:"suite"`
	Digest string `json:"digest"`
	// Target is the target measured, "provider/model".
	Target string `json:"target"`
	// Task is the task's id; Rep the repetition, from 1.
	Task string `json:"task"`
	Rep  int    `json:"rep"`
	// Outcome is correct, wrong, truncated or error.
	Outcome Outcome `json:"outcome"`
	// Model is the model that answered, as the provider named it.
	Model string `json:"model,omitempty"`
	// TokensIn and TokensOut are the provider's token counts.
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
	// MS is the call's time in milliseconds, retries on the target
	// included.
	MS int64 `json:"ms"`
	// Cost is the call's USD cost at the target's prices.
	Cost float64 `json:"cost_usd"`
	// Kind is the failure kind of an error (classify.Kind).
	Kind string `json:"kind,omitempty"`
	// Why says why an answer was wrong, or what the error was.
	Why string `json:"why,omitempty"`
	// Answer is the answer's text, cut to MaxAnswer bytes.
	Answer string `json:"answer,omitempty"`
	// RequestID ties the line to the ledger's lines of the call.
	RequestID string `json:"request_id,omitempty"`
	// Time is when the call began.
	Time time.Time `json:"time"`
}

// MaxAnswer is the most of an answer a Record keeps, in bytes.
const MaxAnswer = 4096

// key is the identity of a call in a results file.
func (r *Record) key() string { return callKey(r.Digest, r.Target, r.Task, r.Rep) }

func callKey(digest, target, task string, rep int) string {
	return digest + "\x00" + target + "\x00" + task + "\x00" + strconv.Itoa(rep)
}
