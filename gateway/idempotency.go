package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// An Idempotency-Key header binds one client operation to one answer: the
// first request with the key is served and its answer kept
// (gateway.idempotency_ttl); a repeat with the same body gets that answer
// again with no new upstream send (Idempotent-Replayed: true), a repeat
// while the first is in flight waits for it (or gets 409 with
// idempotency_in_flight: conflict), and the same key with another body is
// a 422. Keys are per client key, so clients never see each other's
// answers. The records live in the health store (health.Records): shared
// by replicas when it is Redis.

// OutcomeReplayed: an Idempotency-Key repeat answered with the answer the
// first request got, with no send.
const OutcomeReplayed = "idempotent_replay"

const (
	// idemInFlight bounds how long a claim holds a key when the request
	// that made it never finishes (a crashed replica): then the next
	// repeat is served afresh.
	idemInFlight = 15 * time.Minute
	// idemMaxAnswer caps a kept answer; a larger one is not kept (and the
	// key is released), so a repeat is served afresh.
	idemMaxAnswer = 4 << 20
	// idemPoll is how often a repeat waiting on a request in flight looks
	// at the record.
	idemPoll = 20 * time.Millisecond
)

// idemRecord is what the records hold under one key: the request's
// fingerprint and, once done, its answer.
type idemRecord struct {
	Request string            `json:"request"`
	Done    bool              `json:"done,omitempty"`
	Status  int               `json:"status,omitempty"`
	Header  map[string]string `json:"header,omitempty"`
	Answer  []byte            `json:"answer,omitempty"`
}

// idempotent applies the request's Idempotency-Key before routing. It
// reports true when it answered the request itself (a replay, a 409, a 422,
// or a client gone while waiting); otherwise the request is served, and
// finish must run once it has been answered.
func (c *call) idempotent(ctx context.Context, body []byte) (answered bool, finish func()) {
	s := c.s
	recs := s.records
	name := ""
	if c.key != nil {
		name = c.key.name
	}
	key := "idem:" + digest(name, c.d.String(), c.idem)
	fp := digest(c.r.URL.Path, string(body))
	pending, _ := json.Marshal(idemRecord{Request: fp})
	for {
		held, claimed, err := recs.Claim(key, pending, idemInFlight)
		if err != nil {
			s.log.Warn("idempotency record unavailable: serving without it", "id", c.id, "error", err)
			return false, func() {}
		}
		if claimed {
			tee := &teeWriter{ResponseWriter: c.w}
			c.w = tee
			return false, func() { c.keep(key, fp, tee) }
		}
		var rec idemRecord
		if json.Unmarshal(held, &rec) != nil {
			recs.Delete(key) //nolint:errcheck // a record nobody can read: serve afresh
			continue
		}
		switch {
		case rec.Request != fp:
			c.reject(&apiError{Status: http.StatusUnprocessableEntity, Type: "invalid_request_error", Code: "idempotency_key_reused",
				Reason: "idempotency_conflict", NoRetry: true,
				Message: fmt.Sprintf("Idempotency-Key %q was first used with another request: send a new key with a new request", c.idem)})
			return true, nil
		case rec.Done:
			c.replay(rec)
			return true, nil
		case s.v().gw.IdempotencyConflict:
			c.reject(&apiError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "idempotency_key_in_flight",
				Reason: "idempotency_conflict", RetryAfter: 1,
				Message: fmt.Sprintf("a request with Idempotency-Key %q is in flight: send it again once that one ends to get its answer", c.idem)})
			return true, nil
		}
		// In flight: wait for its answer, or for the key to be free again
		// (the first one failed and let it go); then claim again.
		if !c.await(ctx, key) {
			c.setError(&apiError{Status: 499, Message: "the client went away while its repeat waited"})
			return true, nil
		}
	}
}

// await waits until key's record is done or gone; false when ctx ended
// first.
func (c *call) await(ctx context.Context, key string) bool {
	t := time.NewTicker(idemPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		v, found, err := c.s.records.Get(key)
		var rec idemRecord
		if err != nil || !found || json.Unmarshal(v, &rec) != nil || rec.Done {
			return true
		}
	}
}

// keep stores the answer tee saw when it is a whole success, else lets
// the key go so that a repeat is served afresh.
func (c *call) keep(key, fp string, tee *teeWriter) {
	recs := c.s.records
	if c.errStatus != 0 || tee.status < 200 || tee.status > 299 || tee.over {
		recs.Delete(key) //nolint:errcheck // expires anyway
		return
	}
	rec := idemRecord{Request: fp, Done: true, Status: tee.status, Answer: tee.buf, Header: map[string]string{}}
	for k, v := range tee.Header() {
		if len(v) > 0 && (k == "Content-Type" || strings.HasPrefix(k, "X-Detour-")) {
			rec.Header[k] = v[0]
		}
	}
	b, err := json.Marshal(rec)
	if err == nil {
		err = recs.Put(key, b, c.s.v().gw.IdempotencyTTL)
	}
	if err != nil {
		c.s.log.Warn("idempotency record not kept", "id", c.id, "error", err)
		recs.Delete(key) //nolint:errcheck // expires anyway
	}
}

// replay answers with a kept answer.
func (c *call) replay(rec idemRecord) {
	h := c.w.Header()
	for k, v := range rec.Header {
		h[k] = []string{v}
	}
	h["Idempotent-Replayed"] = []string{"true"}
	h["Content-Length"] = []string{strconv.Itoa(len(rec.Answer))}
	c.status, c.outcome = rec.Status, OutcomeReplayed
	c.w.WriteHeader(rec.Status)
	c.w.Write(rec.Answer) //nolint:errcheck // nothing to do for a gone client
}

// digest is the hex SHA-256 of parts, each ended by a NUL.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// teeWriter keeps what a response writes, up to idemMaxAnswer, for an
// idempotency record. Flush and Unwrap keep streaming and write deadlines
// working through it.
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    []byte
	over   bool
}

// WriteHeader records the status.
func (t *teeWriter) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

// Write keeps a copy of p.
func (t *teeWriter) Write(p []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if !t.over {
		if len(t.buf)+len(p) > idemMaxAnswer {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p...)
		}
	}
	return t.ResponseWriter.Write(p)
}

// Flush flushes the response.
func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the response writer, for http.ResponseController.
func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
