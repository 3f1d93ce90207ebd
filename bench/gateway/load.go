package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// request is one HTTP/1.1 request the load generator sends, built once and
// written as is, so that sending costs the generator as little CPU as the
// machine allows.
type request struct {
	// name labels the request's latencies ("" for a run's only request).
	name string
	// addr is the host:port the request goes to; "" for the run's addr.
	addr string
	// raw is the whole request: request line, headers and body.
	raw []byte
	// stream says the answer is an event stream.
	stream bool
	// done is what a complete answer holds: "data: [DONE]" for an OpenAI
	// stream, "choices" for a chat completion, Anthropic's message_stop
	// event or stop_reason field.
	done []byte
}

// newRequest builds a POST of an OpenAI chat completions body to path on
// host.
func newRequest(name, host, path string, body []byte, stream bool) request {
	r := newPost(name, host, path, body, stream)
	r.done = []byte(`"choices"`)
	if stream {
		r.done = []byte("data: [DONE]")
	}
	return r
}

// newAnthropicRequest builds a POST of an Anthropic Messages body to path
// on host.
func newAnthropicRequest(name, host, path string, body []byte, stream bool) request {
	r := newPost(name, host, path, body, stream)
	r.raw = bytes.Replace(r.raw, []byte("Content-Type: application/json\r\n"),
		[]byte("Content-Type: application/json\r\nAnthropic-Version: 2023-06-01\r\n"), 1)
	r.done = []byte(`"stop_reason"`)
	if stream {
		r.done = []byte("event: message_stop")
	}
	return r
}

// newResponsesRequest builds a POST of a Responses API body to path on
// host.
func newResponsesRequest(name, host, path string, body []byte, stream bool) request {
	r := newPost(name, host, path, body, stream)
	r.done = []byte(`"object":"response"`)
	if stream {
		r.done = []byte("event: response.completed")
	}
	return r
}

// newPost builds a POST of a JSON body to path on host.
func newPost(name, host, path string, body []byte, stream bool) request {
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n"+
		"User-Agent: detour-bench\r\nContent-Length: %d\r\n\r\n", path, host, accept, len(body))
	b.Write(body)
	return request{name: name, addr: host, raw: b.Bytes(), stream: stream}
}

// loadSpec is one run of the load generator: conns persistent connections,
// each sending requests back to back (round robin over requests) for
// warmup+duration. Only requests that start and end inside the measured
// window (the duration after the warm-up) count.
type loadSpec struct {
	addr     string // host:port of the system under test
	requests []request
	conns    int
	warmup   time.Duration
	duration time.Duration
	// onStart and onEnd, when set, run at the start and the end of the
	// measured window (CPU snapshots, memory sampling).
	onStart, onEnd func()
}

// loadResult is what a run measured.
type loadResult struct {
	duration time.Duration
	// hists holds latencies by label: the request's name, with "/failover"
	// appended when the answer's x-detour-attempts says more than one
	// target was tried.
	hists map[string]*Histogram
	// ttfb holds the times to the response's status line, all labels.
	ttfb     Histogram
	ok, fail uint64
	// errs counts failures by kind ("status 503", "io", "bad body",
	// "dial"), with one message of each kind in errSample.
	errs      map[string]int
	errSample map[string]string
}

// all returns the latencies of every label merged.
func (r *loadResult) all() *Histogram {
	var h Histogram
	for _, x := range r.hists {
		h.Merge(x)
	}
	return &h
}

// rps returns the successful requests per second of the measured window.
func (r *loadResult) rps() float64 {
	if r.duration <= 0 {
		return 0
	}
	return float64(r.ok) / r.duration.Seconds()
}

// errSummary returns the failures as "N status 503, M io (first message)".
func (r *loadResult) errSummary() string {
	var b bytes.Buffer
	for k, n := range r.errs {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d %s (%s)", n, k, r.errSample[k])
	}
	return b.String()
}

// runLoad runs spec and returns what it measured. It returns once every
// connection has finished its last request and been closed.
func runLoad(spec loadSpec) *loadResult {
	t0 := time.Now()
	mStart := t0.Add(spec.warmup)
	mEnd := mStart.Add(spec.duration)
	workers := make([]*worker, spec.conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{spec: &spec, mStart: mStart, mEnd: mEnd, first: i, hists: map[string]*Histogram{},
			errs: map[string]int{}, errSample: map[string]string{}}
		workers[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	ctl := make(chan struct{})
	go func() {
		defer close(ctl)
		time.Sleep(time.Until(mStart))
		if spec.onStart != nil {
			spec.onStart()
		}
		time.Sleep(time.Until(mEnd))
		if spec.onEnd != nil {
			spec.onEnd()
		}
	}()
	wg.Wait()
	<-ctl
	res := &loadResult{duration: spec.duration, hists: map[string]*Histogram{}, errs: map[string]int{},
		errSample: map[string]string{}}
	for _, w := range workers {
		for label, h := range w.hists {
			if res.hists[label] == nil {
				res.hists[label] = &Histogram{}
			}
			res.hists[label].Merge(h)
		}
		res.ttfb.Merge(&w.ttfb)
		res.ok += w.ok
		res.fail += w.fail
		for k, n := range w.errs {
			res.errs[k] += n
			if _, ok := res.errSample[k]; !ok {
				res.errSample[k] = w.errSample[k]
			}
		}
	}
	return res
}

// worker is one connection of a run.
type worker struct {
	spec         *loadSpec
	mStart, mEnd time.Time
	first        int // index of its first request, so connections start spread over requests
	// conns holds the worker's connection to each address its requests
	// go to (one, unless the requests name several).
	conns map[string]*clientConn

	hists     map[string]*Histogram
	ttfb      Histogram
	ok, fail  uint64
	errs      map[string]int
	errSample map[string]string
}

// run sends requests until the end of the measured window.
func (w *worker) run() {
	w.conns = map[string]*clientConn{}
	defer func() {
		for _, c := range w.conns {
			c.close()
		}
	}()
	reqs := w.spec.requests
	dialFails := 0
	for i := w.first; time.Now().Before(w.mEnd); i++ {
		req := &reqs[i%len(reqs)]
		addr := req.addr
		if addr == "" {
			addr = w.spec.addr
		}
		conn := w.conns[addr]
		if conn == nil {
			c, err := dial(addr, w.mEnd.Add(10*time.Second))
			if err != nil {
				w.failed(time.Now(), "dial", err)
				dialFails++
				time.Sleep(min(time.Duration(dialFails)*10*time.Millisecond, 200*time.Millisecond))
				i-- // the same request once connected
				continue
			}
			conn, dialFails = c, 0
			w.conns[addr] = conn
		}
		start := time.Now()
		resp, err := conn.roundTrip(req)
		end := time.Now()
		if err != nil || resp.closeConn {
			conn.close()
			delete(w.conns, addr)
		}
		if start.Before(w.mStart) || end.After(w.mEnd) {
			continue
		}
		if err != nil {
			var se *statusError
			kind := "io"
			switch {
			case errors.As(err, &se):
				kind = fmt.Sprintf("status %d", se.status)
			case errors.Is(err, errBadBody):
				kind = "bad body"
			}
			w.failed(start, kind, err)
			continue
		}
		label := req.name
		if resp.attempts > 1 {
			label += "/failover"
		}
		h := w.hists[label]
		if h == nil {
			h = &Histogram{}
			w.hists[label] = h
		}
		h.Record(end.Sub(start))
		w.ttfb.Record(resp.header.Sub(start))
		w.ok++
	}
}

// failed counts a failure of kind that happened at t, if t is in the
// measured window.
func (w *worker) failed(t time.Time, kind string, err error) {
	if t.Before(w.mStart) || t.After(w.mEnd) {
		return
	}
	w.fail++
	w.errs[kind]++
	if _, ok := w.errSample[kind]; !ok {
		w.errSample[kind] = err.Error()
	}
}

// clientConn is a minimal HTTP/1.1 client over one TCP connection: it
// writes prebuilt requests and reads responses with a Content-Length, a
// chunked body (trailers included) or a body ending at EOF.
type clientConn struct {
	nc   net.Conn
	br   *bufio.Reader
	body []byte // the last response's body, reused
}

// response is what the load generator keeps of an answer.
type response struct {
	header    time.Time // when the status line arrived
	attempts  int       // x-detour-attempts, 0 when absent
	closeConn bool      // the server closes the connection after it
}

// statusError is an answer whose status is not 200.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %.200s", e.status, e.body) }

var (
	errBadBody     = errors.New("the body is not a complete answer")
	errBadResponse = errors.New("malformed HTTP response")
)

// maxResponse caps a response body.
const maxResponse = 4 << 20

func dial(addr string, deadline time.Time) (*clientConn, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	// One deadline for the whole run bounds every read and write: no request
	// can hang past it.
	if err := nc.SetDeadline(deadline); err != nil {
		nc.Close()
		return nil, err
	}
	return &clientConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), body: make([]byte, 0, 8<<10)}, nil
}

func (c *clientConn) close() { c.nc.Close() }

// roundTrip sends req and reads its whole response. An error other than a
// *statusError leaves the connection unusable.
func (c *clientConn) roundTrip(req *request) (response, error) {
	if _, err := c.nc.Write(req.raw); err != nil {
		return response{}, fmt.Errorf("write: %w", err)
	}
	resp, h, err := readHead(c.br)
	if err != nil {
		return resp, err
	}
	status, length, chunked := h.status, h.length, h.chunked
	c.body = c.body[:0]
	switch {
	case chunked:
		err = c.readChunked()
	case length >= 0:
		if length > maxResponse {
			return resp, fmt.Errorf("%w: Content-Length %d", errBadResponse, length)
		}
		c.body = grow(c.body, length)
		_, err = io.ReadFull(c.br, c.body)
	default:
		resp.closeConn = true
		c.body, err = readAll(c.br, c.body)
	}
	if err != nil {
		return resp, fmt.Errorf("body: %w", err)
	}
	if status != 200 {
		return resp, &statusError{status: status, body: string(c.body)}
	}
	if !bytes.Contains(c.body, req.done) {
		return resp, fmt.Errorf("%w: %.200q", errBadBody, c.body)
	}
	return resp, nil
}

// head is the framing of a response read by readHead.
type head struct {
	status  int
	length  int  // Content-Length, -1 when absent
	chunked bool // Transfer-Encoding: chunked
}

// readHead reads a response's status line and headers from br.
func readHead(br *bufio.Reader) (response, head, error) {
	var resp response
	h := head{length: -1}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return resp, h, fmt.Errorf("status line: %w", err)
	}
	resp.header = time.Now()
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return resp, h, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	var ok bool
	if h.status, ok = atoi(line[9:12]); !ok {
		return resp, h, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return resp, h, fmt.Errorf("header: %w", err)
		}
		if len(line) <= 2 {
			return resp, h, nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return resp, h, fmt.Errorf("%w: header %q", errBadResponse, line)
		}
		name, val := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if h.length, ok = atoi(val); !ok {
				return resp, h, fmt.Errorf("%w: Content-Length %q", errBadResponse, val)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.chunked = bytes.EqualFold(val, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			resp.closeConn = bytes.EqualFold(val, []byte("close"))
		case bytes.EqualFold(name, []byte("X-Detour-Attempts")):
			resp.attempts, _ = atoi(val)
		}
	}
}

// readChunked reads a chunked body into c.body, then its trailers.
func (c *clientConn) readChunked() error {
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, ok := chunkSize(line)
		if !ok {
			return fmt.Errorf("%w: chunk size %q", errBadResponse, line)
		}
		if size == 0 {
			for { // trailers, then the blank line
				line, err = c.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(line) <= 2 {
					return nil
				}
			}
		}
		if len(c.body)+size > maxResponse {
			return fmt.Errorf("%w: body over %d bytes", errBadResponse, maxResponse)
		}
		n := len(c.body)
		c.body = grow(c.body, n+size)
		if _, err := io.ReadFull(c.br, c.body[n:]); err != nil {
			return err
		}
		crlf, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(crlf) != 2 || crlf[0] != '\r' {
			return fmt.Errorf("%w: chunk not followed by CRLF", errBadResponse)
		}
	}
}

// chunkSize parses the hex size of a chunk line ("1a;ext\r\n").
func chunkSize(line []byte) (int, bool) {
	n, digits := 0, 0
	for _, c := range line {
		var v int
		switch {
		case c >= '0' && c <= '9':
			v = int(c - '0')
		case c >= 'a' && c <= 'f':
			v = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v = int(c-'A') + 10
		case c == ';' || c == '\r' || c == '\n' || c == ' ':
			return n, digits > 0
		default:
			return 0, false
		}
		if digits++; digits > 7 {
			return 0, false
		}
		n = n<<4 | v
	}
	return n, digits > 0
}

// atoi parses a non-negative decimal number of at most 9 digits.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// grow returns b with length n, reusing its array when large enough.
func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// readAll appends r's bytes to b until EOF (at most maxResponse).
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			if len(b) >= maxResponse {
				return b, fmt.Errorf("%w: body over %d bytes", errBadResponse, maxResponse)
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// hostPort returns the host:port of an "http://host:port[/path]" URL.
func hostPort(u string) (string, error) {
	rest, ok := bytes.CutPrefix([]byte(u), []byte("http://"))
	if !ok {
		return "", fmt.Errorf("%q is not an http:// URL", u)
	}
	if i := bytes.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	host, _, err := net.SplitHostPort(string(rest))
	if err != nil {
		return "", fmt.Errorf("%q: %w", u, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%q is not a loopback address: the benchmark only talks to 127.0.0.1", u)
	}
	return string(rest), nil
}
