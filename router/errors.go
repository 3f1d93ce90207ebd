package router

import (
	"errors"
	"fmt"
	"strings"

	"github.com/detourhq/detour/classify"
)

// ErrAllFailed means every candidate of the route failed or was skipped.
var ErrAllFailed = errors.New("every candidate failed")

// ErrFailClosed means a failure of a fail-closed kind (invalid, policy, ...)
// ended the request: the same request would fail everywhere, or must not be
// routed around.
var ErrFailClosed = errors.New("request failed closed")

// ErrCanceled means the caller cancelled the request.
var ErrCanceled = errors.New("request cancelled")

// Candidate is one target's last word in a failed request.
type Candidate struct {
	// Target is the target's "provider/model".
	Target string
	// Status is the ledger status of its last attempt or skip.
	Status string
	// Kind is the failure kind; empty for a skip.
	Kind classify.Kind
	// Reason is the full reason (the one-line reason plus the provider's
	// message where it says more).
	Reason string
}

// Error is the final error of a request that got no answer. It lists every
// candidate's reason in chain order. errors.Is matches ErrAllFailed,
// ErrFailClosed or ErrCanceled, and errors.As reaches the last failure's
// provider error through Cause.
type Error struct {
	Route     string
	RequestID string
	// Kind is the kind of the failure that ended the request.
	Kind classify.Kind
	// Candidates are in chain order; targets never reached are left out.
	Candidates []Candidate
	// Attempts counts sends that reached a provider.
	Attempts int
	// Cause is the last attempt's error, for errors.As.
	Cause error
	// sentinel is one of ErrAllFailed, ErrFailClosed, ErrCanceled.
	sentinel error
}

// Error returns a summary naming every candidate's reason, one per line.
func (e *Error) Error() string {
	var b strings.Builder
	switch e.sentinel {
	case ErrFailClosed:
		fmt.Fprintf(&b, "route %q failed closed (%s) after %d attempt(s)", e.Route, e.Kind, e.Attempts)
	case ErrCanceled:
		fmt.Fprintf(&b, "route %q cancelled after %d attempt(s)", e.Route, e.Attempts)
	default:
		fmt.Fprintf(&b, "route %q: every candidate failed (%d attempt(s))", e.Route, e.Attempts)
	}
	for i, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %d. %s: %s", i+1, c.Target, c.Reason)
	}
	return b.String()
}

// Is reports whether target is the error's sentinel.
func (e *Error) Is(target error) bool { return target == e.sentinel }

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Cause }
