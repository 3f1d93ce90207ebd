package policy

import "time"

// Budget bounds one request end to end. The zero value of each field means
// its default (see Interactive); a Budget is a plain value, safe to copy.
type Budget struct {
	// MaxAttempts is the most sends that reach a provider for one request,
	// retries and hops together. Default 6.
	MaxAttempts int `json:"max_attempts" yaml:"max_attempts"`
	// MaxPerTarget is the most sends to one target (1 = no retry). Default 2.
	MaxPerTarget int `json:"max_per_target" yaml:"max_per_target"`
	// Deadline is the whole request's time, waits included. Default 60 s.
	Deadline time.Duration `json:"deadline" yaml:"deadline"`
	// Reserve is time kept for the rest of the chain: while another
	// candidate remains, neither a retry wait nor an attempt eats into it.
	// Once less than twice the reserve is left, the router shares what is
	// left evenly among the candidates still to try, so a run of silent
	// targets cannot starve the last one. Default 10 s.
	Reserve time.Duration `json:"reserve" yaml:"reserve"`
	// MaxServerWait caps a server-directed wait (Retry-After and kin); a
	// longer one parks the target instead. Default 60 s.
	MaxServerWait time.Duration `json:"max_server_wait" yaml:"max_server_wait"`
	// MaxRetryWait is the longest wait before a retry of the same target
	// while a candidate the request may move to remains: a server-asked
	// wait longer than it parks the target until the reset it named, and
	// a longer backoff moves on, both at once. With no such candidate
	// left the request may still wait, within MaxServerWait and the
	// deadline. Default 5 s interactive: a healthy candidate answers in
	// about a second, so a person never sits out a sick target for more
	// than 5 s of a 60 s deadline; batch keeps MaxServerWait (60 s), as
	// its work can wait and a retry of the cheap head costs less than a
	// dearer fallback.
	MaxRetryWait time.Duration `json:"max_retry_wait" yaml:"max_retry_wait"`
	// BaseBackoff and MaxBackoff shape the jittered exponential backoff used
	// when the server names no wait. Defaults 500 ms and 8 s.
	BaseBackoff time.Duration `json:"base_backoff" yaml:"base_backoff"`
	MaxBackoff  time.Duration `json:"max_backoff" yaml:"max_backoff"`
	// MaxExtraCost is the most USD that failed attempts and dearer
	// candidates may add to a request; 0 means no ceiling.
	MaxExtraCost float64 `json:"max_extra_cost" yaml:"max_extra_cost"`
	// Queue lets a request wait for the earliest parked target's reset when
	// every candidate is parked and the reset falls inside the deadline.
	Queue bool `json:"queue" yaml:"queue"`
}

// Interactive is the profile of `ask` and the gateway: a person is waiting.
func Interactive() Budget {
	return Budget{
		MaxAttempts:   6,
		MaxPerTarget:  2,
		Deadline:      60 * time.Second,
		Reserve:       10 * time.Second,
		MaxServerWait: 60 * time.Second,
		MaxRetryWait:  5 * time.Second,
		BaseBackoff:   500 * time.Millisecond,
		MaxBackoff:    8 * time.Second,
	}
}

// Batch is the profile of nightly work: more patience, queueing allowed.
func Batch() Budget {
	return Budget{
		MaxAttempts:   12,
		MaxPerTarget:  4,
		Deadline:      15 * time.Minute,
		Reserve:       30 * time.Second,
		MaxServerWait: 60 * time.Second,
		MaxRetryWait:  60 * time.Second,
		BaseBackoff:   1 * time.Second,
		MaxBackoff:    30 * time.Second,
		Queue:         true,
	}
}

// Profile returns the built-in budget named name ("interactive" or "batch").
func Profile(name string) (Budget, bool) {
	switch name {
	case "", "interactive":
		return Interactive(), true
	case "batch":
		return Batch(), true
	}
	return Budget{}, false
}

// WithDefaults returns b with every zero field taken from Interactive.
func (b Budget) WithDefaults() Budget {
	d := Interactive()
	if b.MaxAttempts <= 0 {
		b.MaxAttempts = d.MaxAttempts
	}
	if b.MaxPerTarget <= 0 {
		b.MaxPerTarget = d.MaxPerTarget
	}
	if b.Deadline <= 0 {
		b.Deadline = d.Deadline
	}
	if b.Reserve <= 0 {
		b.Reserve = d.Reserve
	}
	if b.MaxServerWait <= 0 {
		b.MaxServerWait = d.MaxServerWait
	}
	if b.MaxRetryWait <= 0 {
		b.MaxRetryWait = d.MaxRetryWait
	}
	if b.BaseBackoff <= 0 {
		b.BaseBackoff = d.BaseBackoff
	}
	if b.MaxBackoff <= 0 {
		b.MaxBackoff = d.MaxBackoff
	}
	return b
}
