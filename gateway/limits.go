package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/detourhq/detour/config"
)

// admit applies k's rate and concurrency limits. When it returns nil the
// caller holds one of k's concurrency slots and must call k.release. A local
// limit is a passing condition, so the 429 carries Retry-After and lets the
// SDKs retry (unlike an exhausted chain, which says x-should-retry: false).
func (s *Server) admit(k *clientKey) *apiError {
	if k.lim != nil {
		now := s.clk.Now()
		res := k.lim.ReserveN(now, 1)
		if d := res.DelayFrom(now); !res.OK() || d > 0 {
			res.CancelAt(now)
			secs := 1
			if res.OK() {
				secs = max(1, int(math.Ceil(d.Seconds())))
			}
			return &apiError{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Reason: "rate_limited",
				RetryAfter: min(secs, maxRetryAfter),
				Message:    fmt.Sprintf("rate limit of client key %q reached: try again in %d s", k.name, secs)}
		}
	}
	if k.sem != nil {
		select {
		case k.sem <- struct{}{}:
		default:
			return &apiError{Status: http.StatusTooManyRequests, Code: "concurrency_limit_exceeded", Reason: "concurrency",
				RetryAfter: 1,
				Message: fmt.Sprintf("client key %q already has %d requests in flight, its limit: wait for one to finish",
					k.name, cap(k.sem))}
		}
	}
	return nil
}

// release gives back the concurrency slot admit took.
func (k *clientKey) release() {
	if k.sem != nil {
		<-k.sem
	}
}

// bufPool holds request body buffers and response buffers, so the hot path
// allocates none in the steady state.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled is the largest buffer given back to bufPool; bigger ones are
// left to the collector so one huge request does not pin memory.
const maxPooled = 256 << 10

func getBuf() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		b.Reset()
		bufPool.Put(b)
	}
}

// bytesPool holds output buffers for responses and stream events.
var bytesPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// getBytes returns an empty pooled buffer; give it back with putBytes.
func getBytes() *[]byte {
	p := bytesPool.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// putBytes gives back p, now holding b (grown from *p by appends), unless b
// grew past maxPooled.
func putBytes(p *[]byte, b []byte) {
	if cap(b) <= maxPooled {
		*p = b[:0]
		bytesPool.Put(p)
	}
}

// readBody reads r's body into buf, at most s.v().gw.MaxBody bytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) *apiError {
	v := s.v()
	// A client that sends its headers and then stalls must not hold its
	// slot: the body has BodyTimeout to arrive. The deadline is the
	// socket's (real time), cleared once the body is in.
	rc := http.NewResponseController(w)
	timeout := s.bodyTimeout()
	if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
		defer rc.SetReadDeadline(time.Time{}) //nolint:errcheck // the connection may be gone
	}
	tooLarge := func() *apiError {
		// Read on (up to a bound) before answering: a client that writes
		// its whole body before it reads (no Expect: 100-continue) would
		// otherwise meet a closed socket instead of the 413.
		io.Copy(io.Discard, io.LimitReader(r.Body, discardLimit)) //nolint:errcheck // best effort
		w.Header().Set("Connection", "close")
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large", Reason: "too_large",
			Message: fmt.Sprintf("request body is larger than the gateway's limit of %s (gateway.max_body)", config.SizeText(v.gw.MaxBody))}
	}
	if r.ContentLength > v.gw.MaxBody {
		return tooLarge()
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, v.gw.MaxBody))
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
			Reason:  "body_timeout",
			Message: fmt.Sprintf("the request body did not arrive within %s (gateway.body_timeout): send it at once, or raise the limit", timeout)}
	case err != nil:
		return badRequest("", "could not read the request body: %v", err)
	}
	return nil
}

// discardLimit bounds what readBody reads past max_body before its 413.
const discardLimit = 64 << 20

// bodyTimeout returns the time a request body has to arrive
// (gateway.body_timeout).
func (s *Server) bodyTimeout() time.Duration {
	v := s.v()
	if v.gw.BodyTimeout > 0 {
		return v.gw.BodyTimeout
	}
	return config.DefaultBodyTimeout
}
