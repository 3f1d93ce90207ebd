package ledger

import (
	"errors"
	"slices"
	"sync"
)

// Sink receives the router's records. Write returns once the record is
// stored (the router writes each record before its next attempt starts).
// Implementations are safe for concurrent use.
type Sink interface {
	// Write stores one record.
	Write(r Record) error
	// Close releases the sink; Write after Close fails (except where a
	// sink documents otherwise).
	Close() error
}

// Memory is a Sink that keeps records in memory, for tests and the demo. The
// zero value is ready to use; it is safe for concurrent use. Close is a no-op:
// a closed Memory still accepts and returns records.
type Memory struct {
	mu   sync.Mutex // guards recs
	recs []Record
}

// Write appends r.
func (m *Memory) Write(r Record) error {
	m.mu.Lock()
	m.recs = append(m.recs, r)
	m.mu.Unlock()
	return nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }

// Records returns a copy of the records written so far, in order.
func (m *Memory) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

// Multi returns a Sink that writes each record to every one of sinks in
// order (nil ones are skipped) and closes them all. Errors are joined; a
// failing sink does not stop the others. It is safe for concurrent use when
// every sink is.
func Multi(sinks ...Sink) Sink {
	m := make(multi, 0, len(sinks))
	for _, s := range sinks {
		if s != nil {
			m = append(m, s)
		}
	}
	return m
}

type multi []Sink

func (m multi) Write(r Record) error {
	var errs []error
	for _, s := range m {
		if err := s.Write(r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Begin passes r to each sink that is a Journal.
func (m multi) Begin(r Record) error {
	var errs []error
	for _, s := range m {
		if j, ok := s.(Journal); ok {
			if err := j.Begin(r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (m multi) Close() error {
	var errs []error
	for _, s := range m {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Discard is a Sink that drops every record. Safe for concurrent use.
var Discard Sink = discard{}

type discard struct{}

func (discard) Write(Record) error { return nil }
func (discard) Close() error       { return nil }
