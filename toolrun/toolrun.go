package toolrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/llm"
)

// State is where one tool call stands.
type State string

// The states of a tool call, in the order a call goes through them.
const (
	// Planned: the call is known and about to start.
	Planned State = "planned"
	// Started: the tool was called; nobody knows yet what it did. A call
	// left here (a crash) is never started again: it is unknown.
	Started State = "started"
	// Succeeded: the tool returned a result, kept with the state.
	Succeeded State = "succeeded"
	// Failed: the tool said it did nothing (Run returned an error
	// wrapping ErrNotRun); it may run again.
	Failed State = "failed"
	// Unknown: the tool was called and then the run ended without an
	// answer (a timeout, a crash, any error but ErrNotRun).
	Unknown State = "unknown"
)

// Entry is what the journal keeps for one call.
type Entry struct {
	State  State     `json:"state"`
	Result string    `json:"result,omitempty"`
	At     time.Time `json:"at"`
}

// Journal keeps the entries of tool calls, by operation and call id.
type Journal interface {
	// Get returns the call's entry, and false when there is none.
	Get(op, callID string) (Entry, bool, error)
	// Set stores the call's entry.
	Set(op, callID string, e Entry) error
}

// ErrNotRun, wrapped by an error of Run, says the tool did nothing: the
// call may be made again (state Failed). Any other error leaves the call
// Unknown.
var ErrNotRun = errors.New("the tool did not run")

// ErrUnknownOutcome means a call may have had its effect and no one can
// say: it is not run again, and the conversation must not go on (to this
// model or another) until someone knows. Reconcile, when set, is asked
// first.
var ErrUnknownOutcome = errors.New("a tool call's outcome is unknown")

// Runner runs tool calls at most once each.
type Runner struct {
	// Journal keeps each call's state; nil means a journal in this
	// process's memory (RecordsJournal over a health.MemoryRecords).
	Journal Journal
	// Run calls the tool and returns its result, the content of the tool
	// message sent back to the model.
	Run func(ctx context.Context, call llm.ToolCall) (string, error)
	// Reconcile is asked about a call whose outcome is unknown (started
	// before and never finished, or a Run that ended without an answer):
	// it finds out, outside the model, what happened, and returns the
	// result to send back; an error leaves the call unknown. Nil means
	// every unknown outcome is an ErrUnknownOutcome.
	Reconcile func(ctx context.Context, op string, call llm.ToolCall) (string, error)
	// Now is the clock of the entries; nil means time.Now.
	Now func() time.Time

	mem RecordsJournal
}

// RunAll runs each call of an answer once, in order, under operation op
// (one user operation, such as an idempotency key), and returns the tool
// messages to send back. A call that succeeded before gives its kept
// result and is not run; one that started before, or whose run ends
// without an answer, goes to Reconcile and is never run again. The first
// call that cannot be settled stops the rest with its error.
func (r *Runner) RunAll(ctx context.Context, op string, calls []llm.ToolCall) ([]llm.Message, error) {
	out := make([]llm.Message, 0, len(calls))
	for _, c := range calls {
		res, err := r.run(ctx, op, c)
		if err != nil {
			return out, fmt.Errorf("toolrun: %s call %s (%s): %w", op, c.ID, c.Name, err)
		}
		out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: res})
	}
	return out, nil
}

// run settles one call.
func (r *Runner) run(ctx context.Context, op string, c llm.ToolCall) (string, error) {
	j := r.journal()
	e, found, err := j.Get(op, c.ID)
	if err != nil {
		return "", fmt.Errorf("the journal cannot say whether it ran, so it is not run: %w", err)
	}
	if found {
		switch e.State {
		case Succeeded:
			return e.Result, nil
		case Started, Unknown:
			return r.reconcile(ctx, op, c)
		}
	}
	if err := j.Set(op, c.ID, Entry{State: Planned, At: r.now()}); err != nil {
		return "", fmt.Errorf("the journal cannot record it, so it is not run: %w", err)
	}
	if err := j.Set(op, c.ID, Entry{State: Started, At: r.now()}); err != nil {
		return "", fmt.Errorf("the journal cannot record it, so it is not run: %w", err)
	}
	res, err := r.Run(ctx, c)
	switch {
	case err == nil:
		return res, j.Set(op, c.ID, Entry{State: Succeeded, Result: res, At: r.now()})
	case errors.Is(err, ErrNotRun):
		_ = j.Set(op, c.ID, Entry{State: Failed, At: r.now()})
		return "", err
	}
	_ = j.Set(op, c.ID, Entry{State: Unknown, At: r.now()}) // Started already says as much
	return r.reconcile(ctx, op, c)
}

// reconcile asks Reconcile about a call whose outcome is unknown.
func (r *Runner) reconcile(ctx context.Context, op string, c llm.ToolCall) (string, error) {
	if r.Reconcile == nil {
		return "", ErrUnknownOutcome
	}
	res, err := r.Reconcile(ctx, op, c)
	if err != nil {
		return "", fmt.Errorf("%w: reconcile: %w", ErrUnknownOutcome, err)
	}
	return res, r.journal().Set(op, c.ID, Entry{State: Succeeded, Result: res, At: r.now()})
}

func (r *Runner) journal() Journal {
	if r.Journal != nil {
		return r.Journal
	}
	if r.mem.Records == nil {
		r.mem.Records = &health.MemoryRecords{Now: r.Now}
	}
	return &r.mem
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// RecordsJournal is a Journal in health.Records: shared by processes and
// replicas when the records are (a Redis health store).
type RecordsJournal struct {
	Records health.Records
	// TTL is how long an entry is kept; 0 means a week.
	TTL time.Duration
}

func (j *RecordsJournal) key(op, id string) string {
	b, _ := json.Marshal([2]string{op, id})
	return "tool:" + string(b)
}

// Get implements Journal.
func (j *RecordsJournal) Get(op, callID string) (Entry, bool, error) {
	b, found, err := j.Records.Get(j.key(op, callID))
	if err != nil || !found {
		return Entry{}, false, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		// An entry nobody can read may have been a start: treat it so.
		return Entry{State: Unknown}, true, nil
	}
	return e, true, nil
}

// Set implements Journal.
func (j *RecordsJournal) Set(op, callID string, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ttl := j.TTL
	if ttl <= 0 {
		ttl = 7 * 24 * time.Hour
	}
	return j.Records.Put(j.key(op, callID), b, ttl)
}
