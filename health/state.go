package health

import (
	"errors"
	"fmt"
	"time"

	"github.com/detourhq/detour/classify"
)

// State is where a target's breaker stands. The words appear in `detour
// check` and in metrics.
type State string

// The breaker states.
const (
	// Closed is the normal state: traffic flows and transient failures are
	// counted.
	Closed State = "closed"
	// Open means the target is parked until a set time: Allow refuses it
	// with a *ParkedError and no request reaches it.
	Open State = "open"
	// HalfOpen means the park is over and the target is on trial: one caller
	// at a time gets a probe permit; its outcome closes or re-opens the
	// target. The others are refused while the probe is out.
	HalfOpen State = "half_open"
)

// String returns the state's word.
func (s State) String() string { return string(s) }

// The defaults of Settings.
const (
	DefaultFailureThreshold = 3
	DefaultOpenFor          = 10 * time.Second
	DefaultWallCooldown     = 5 * time.Minute
	DefaultMaxPark          = 24 * time.Hour
	DefaultProbeTimeout     = 2 * time.Minute
	DefaultForget           = 10 * time.Minute
)

// Settings shape a Breaker. The zero value of each field (or a negative one)
// means its default; a Settings is a plain value, safe to copy.
type Settings struct {
	// FailureThreshold is how many consecutive transient (or unknown)
	// failures open a closed target. Default 3.
	FailureThreshold int `json:"failure_threshold" yaml:"failure_threshold"`
	// OpenFor is how long a run of transient failures, or a failed probe
	// after one, parks the target. Default 10 s: seconds, not minutes, so a
	// flapping primary soon gets its traffic back.
	OpenFor time.Duration `json:"open_for" yaml:"open_for"`
	// WallCooldown is how long a wall parks the target when the provider
	// named no reset time. Default 5 min.
	WallCooldown time.Duration `json:"wall_cooldown" yaml:"wall_cooldown"`
	// MaxPark caps every park, whatever reset a provider names. Default 24 h.
	MaxPark time.Duration `json:"max_park" yaml:"max_park"`
	// ProbeTimeout is how long a half-open target waits for its probe to
	// report before another caller may probe. It only matters when a permit
	// is lost (Done never called: a crashed process sharing a store, a bug).
	// It must exceed the longest attempt, streams included. Default 2 min.
	ProbeTimeout time.Duration `json:"probe_timeout" yaml:"probe_timeout"`
	// Forget is how long an entry that holds no park and no probe is
	// kept after its last change: a target that failed and was never
	// asked for again is then forgotten (it reads closed, as one never
	// seen). Default 10 min.
	Forget time.Duration `json:"forget" yaml:"forget"`
}

// withDefaults returns s with every zero or negative field set to its default.
func (s Settings) withDefaults() Settings {
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = DefaultFailureThreshold
	}
	if s.OpenFor <= 0 {
		s.OpenFor = DefaultOpenFor
	}
	if s.WallCooldown <= 0 {
		s.WallCooldown = DefaultWallCooldown
	}
	if s.MaxPark <= 0 {
		s.MaxPark = DefaultMaxPark
	}
	if s.ProbeTimeout <= 0 {
		s.ProbeTimeout = DefaultProbeTimeout
	}
	if s.Forget <= 0 {
		s.Forget = DefaultForget
	}
	return s
}

// ErrParked is the sentinel every *ParkedError matches with errors.Is.
var ErrParked = errors.New("target parked")

// ParkedError is Allow's refusal: the target is open, or half-open with its
// probe out. It matches ErrParked with errors.Is.
type ParkedError struct {
	// Key is the target ("provider/model").
	Key string
	// Until is when the target may be tried again. For Open, the end of the
	// park. For HalfOpen, the latest time the probe slot frees (the probe's
	// timeout); it usually frees sooner, as soon as the probe reports.
	Until time.Time
	// Reason is the one-line reason the target was parked.
	Reason string
	// State is Open or HalfOpen.
	State State
	// Kind and Status are those of the failure that parked the key
	// (classify kind, ledger status); empty when a caller parked it.
	Kind   classify.Kind
	Status string
}

// Error returns "health: KEY parked until TIME: REASON" (or, half-open,
// "health: KEY half-open, probe in flight: REASON").
func (e *ParkedError) Error() string {
	var msg string
	if e.State == HalfOpen {
		msg = fmt.Sprintf("health: %s half-open, probe in flight", e.Key)
	} else {
		msg = fmt.Sprintf("health: %s parked until %s", e.Key, e.Until.UTC().Format(time.RFC3339))
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns ErrParked.
func (e *ParkedError) Unwrap() error { return ErrParked }

// Permit is Allow's leave to send one attempt to a target. Hand it back to
// Done with the attempt's outcome, exactly once. It is a small value, safe to
// copy; the zero Permit is stale for every key.
type Permit struct {
	// Key is the target the permit is for.
	Key string
	// Probe is true for the single trial attempt of a half-open target.
	Probe bool
	// gen is the entry's generation when the permit was issued; Done drops
	// outcomes whose permit is from an older generation.
	gen uint64
}

// Outcome is what one attempt came to, as Done needs it.
type Outcome struct {
	// Kind is the failure kind; "" means success.
	Kind classify.Kind
	// Until, when after now, is when the target may be tried again: a
	// wall's reset, or (transient) a server-asked wait longer than the
	// router will wait. Zero (or not after now) means none was named.
	Until time.Time
	// Reason is one line for `detour check` and ParkedError.
	Reason string
	// Status is the failed attempt's ledger status ("http_429"), kept with
	// a park so that a later skip can tell a rate limit from an outage.
	Status string
}

// excluded reports whether k is not the target's fault: such outcomes never
// open a target and never count.
func excluded(k classify.Kind) bool {
	switch k {
	case classify.Invalid, classify.Policy, classify.Canceled, classify.ContextOverflow:
		return true
	}
	return false
}
