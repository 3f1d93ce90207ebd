package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/detourhq/detour/health"
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

// idemMaxAnswer caps a kept answer; a larger one is not kept (and the key
// is released), so a repeat is served afresh.
const idemMaxAnswer = 4 << 20

// idemAnswer is the value kept under one key: the answer as it was sent.
type idemAnswer struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Answer []byte            `json:"answer,omitempty"`
}

// idempotent applies the request's Idempotency-Key before routing
// (health.Once over the health store's records). It reports true when it
// answered the request itself (a replay, a 409, a 422, or a client gone
// while waiting); otherwise the request is served, and finish must run
// once it has been answered.
func (c *call) idempotent(ctx context.Context, body []byte) (answered bool, finish func()) {
	s := c.s
	name := ""
	if c.key != nil {
		name = c.key.name
	}
	key := "idem:" + digest(name, c.d.String(), c.idem)
	fp := digest(c.r.URL.Path, string(body))
	once := health.Once{Records: s.records, Ceiling: s.idempotencyCeiling(), OnEvict: s.idempotencyEvicted}
	for {
		claim, kept, err := once.Begin(ctx, key, fp, !s.v().gw.IdempotencyConflict)
		switch {
		case errors.Is(err, health.ErrOnceReused):
			c.reject(&apiError{Status: http.StatusUnprocessableEntity, Type: "invalid_request_error", Code: "idempotency_key_reused",
				Reason: "idempotency_conflict", NoRetry: true,
				Message: fmt.Sprintf("Idempotency-Key %q was first used with another request: send a new key with a new request", c.idem)})
			return true, nil
		case errors.Is(err, health.ErrOnceInFlight):
			c.reject(&apiError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "idempotency_key_in_flight",
				Reason: "idempotency_conflict", RetryAfter: 1,
				Message: fmt.Sprintf("a request with Idempotency-Key %q is in flight: send it again once that one ends to get its answer", c.idem)})
			return true, nil
		case err != nil && ctx.Err() != nil:
			c.setError(&apiError{Status: 499, Message: "the client went away while its repeat waited"})
			return true, nil
		case err != nil:
			s.log.Warn("idempotency record unavailable: serving without it", "id", c.id, "error", err)
			return false, func() {}
		case claim != nil:
			tee := &teeWriter{ResponseWriter: c.w}
			c.w = tee
			return false, func() { c.keep(claim, tee) }
		}
		var a idemAnswer
		if json.Unmarshal(kept, &a) != nil || a.Status == 0 {
			s.records.Delete(key) //nolint:errcheck // a value nobody can read: serve afresh
			continue
		}
		c.replay(a)
		return true, nil
	}
}

// keep stores the answer tee saw when it is a whole success, else lets
// the key go so that a repeat is served afresh.
func (c *call) keep(claim *health.OnceClaim, tee *teeWriter) {
	if c.errStatus != 0 || tee.status < 200 || tee.status > 299 || tee.over {
		claim.Abandon()
		return
	}
	a := idemAnswer{Status: tee.status, Answer: tee.buf, Header: map[string]string{}}
	for k, v := range tee.Header() {
		if len(v) > 0 && (k == "Content-Type" || strings.HasPrefix(k, "X-Detour-")) {
			a.Header[k] = v[0]
		}
	}
	if err := claim.Finish(a, c.s.v().gw.IdempotencyTTL); err != nil {
		c.s.log.Warn("idempotency record not kept", "id", c.id, "error", err)
	}
}

// idempotencyCeiling is the ceiling of kept Idempotency-Key answers
// (gateway.idempotency_max_records and _bytes).
func (s *Server) idempotencyCeiling() health.Ceiling {
	g := s.v().gw
	return health.Ceiling{Count: g.IdempotencyMaxRecords, Bytes: g.IdempotencyMaxBytes}
}

// idempotencyEvicted counts n kept Idempotency-Key answers evicted.
func (s *Server) idempotencyEvicted(n int) {
	s.metrics.evicted.With(evictedIdempotency).Add(float64(n))
}

// keptAnswers is the router's ceiling of answers kept for cache_answers
// (gateway.cache_max_answers and _bytes), read at each answer kept.
func (s *Server) keptAnswers() health.Ceiling {
	g := s.v().gw
	return health.Ceiling{Count: g.CacheMaxAnswers, Bytes: g.CacheMaxBytes}
}

// answersEvicted counts n answers kept for cache_answers evicted.
func (s *Server) answersEvicted(n int) { s.metrics.evicted.With(evictedAnswers).Add(float64(n)) }

// bufferedMax is the budget of every buffered stream together
// (gateway.buffered_max_bytes), read at each chunk held.
func (s *Server) bufferedMax() int64 { return s.v().gw.BufferedMaxBytes }

// replay answers with a kept answer.
func (c *call) replay(rec idemAnswer) {
	// Kept as it was sent, so with every key known then redacted; a key
	// added since (a reload) is redacted now.
	rec.Answer = redactEvents(c.answerKeys(), rec.Answer, 0)
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
