package simulate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Transport is an http.RoundTripper that serves requests with Handler in
// memory, without sockets, so tests can run under a fake clock. The response
// is returned as soon as the handler flushes or returns; its body streams
// what the handler writes next. Connection faults surface as they do over
// TCP: a Reset before the headers is a *net.OpError wrapping
// syscall.ECONNRESET, a cut after the headers fails the body read with
// io.ErrUnexpectedEOF, and a request whose context ends before the headers
// returns the context's error. Closing the body, or the request's context
// ending, cancels the handler's request context. Safe for concurrent use.
type Transport struct {
	// Handler serves the requests, typically a *Server.
	Handler http.Handler
}

// memAddr is the address in the errors of in-memory connections.
var memAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}

// resetError is what a read on a reset TCP connection returns.
func resetError() error {
	return &net.OpError{Op: "read", Net: "tcp", Source: memAddr, Addr: memAddr, Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

var errClosedBeforeResponse = fmt.Errorf("simulate: connection closed before the response: %w", io.ErrUnexpectedEOF)

// RoundTrip serves req with t.Handler.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	sreq := req.Clone(ctx)
	sreq.Body = io.NopCloser(bytes.NewReader(body))
	sreq.ContentLength = int64(len(body))
	sreq.GetBody = nil
	sreq.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	sreq.RequestURI = req.URL.RequestURI()
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	sreq.RemoteAddr = "127.0.0.1:1"
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1

	pr, pw := io.Pipe()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	w := &memWriter{pw: pw, ready: make(chan struct{}), header: http.Header{}}
	go func() {
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				w.abortConn(false) // a panicking handler breaks the connection, as net/http does
			}
			w.finish()
		}()
		t.Handler.ServeHTTP(w, sreq)
	}()

	select {
	case <-w.ready:
	case <-req.Context().Done():
	}
	if err := req.Context().Err(); err != nil {
		cancel()
		return nil, err
	}

	w.mu.Lock()
	state, status, header, aerr := w.state, w.status, w.sent, w.err
	buffered := w.buf.Bytes()
	w.mu.Unlock()
	if state == memAborted && aerr != nil {
		cancel()
		return nil, aerr
	}
	resp := &http.Response{
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode: status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        header,
		Request:       req,
		ContentLength: -1,
	}
	if state == memFinished {
		if header.Get("Content-Length") == "" {
			header.Set("Content-Length", strconv.Itoa(len(buffered)))
		}
		resp.ContentLength = int64(len(buffered))
		resp.Body = &memBody{r: bytes.NewReader(buffered), close: cancel}
		return resp, nil
	}
	if cl, err := strconv.ParseInt(header.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = cl
	}
	resp.Body = &memBody{r: pr, close: func() { pr.Close(); cancel() }}
	return resp, nil
}

// memBody is a response body whose Close releases the handler.
type memBody struct {
	r     io.Reader
	close func()
	once  sync.Once
}

func (b *memBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *memBody) Close() error {
	b.once.Do(b.close)
	return nil
}

type memState int

const (
	memBuffering memState = iota // nothing sent: writes are buffered
	memStreaming                 // headers sent: writes go to the pipe
	memFinished                  // handler returned before any flush
	memAborted                   // connection broken
)

// memWriter is the ResponseWriter of an in-memory exchange. It buffers until
// the first flush, then streams into a pipe read by the response body.
type memWriter struct {
	pw    *io.PipeWriter
	ready chan struct{} // closed once the response (or its failure) is known

	mu     sync.Mutex // guards the fields below
	header http.Header
	sent   http.Header // the headers as they were sent
	status int
	buf    bytes.Buffer
	state  memState
	err    error // the failure of the round trip when aborted before the headers
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	if code < 200 {
		return // informational responses are not modelled
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == memBuffering && w.status == 0 {
		w.status = code
	}
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	switch w.state {
	case memBuffering:
		defer w.mu.Unlock()
		return w.buf.Write(p)
	case memStreaming:
		w.mu.Unlock()
		return w.pw.Write(p)
	}
	w.mu.Unlock()
	return 0, io.ErrClosedPipe
}

// commitLocked sends the headers. w.mu must be held.
func (w *memWriter) commitLocked(next memState) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.sent = w.header.Clone()
	w.state = next
	close(w.ready)
}

// FlushError sends the headers and what was buffered.
func (w *memWriter) FlushError() error {
	w.mu.Lock()
	switch w.state {
	case memBuffering:
		w.commitLocked(memStreaming)
		data := bytes.Clone(w.buf.Bytes())
		w.buf.Reset()
		w.mu.Unlock()
		if len(data) > 0 {
			_, err := w.pw.Write(data)
			return err
		}
		return nil
	case memStreaming:
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	return io.ErrClosedPipe
}

// Flush is FlushError without the error, for http.Flusher.
func (w *memWriter) Flush() { w.FlushError() } //nolint:errcheck // Flusher has no error

// finish runs when the handler returns.
func (w *memWriter) finish() {
	w.mu.Lock()
	switch w.state {
	case memBuffering:
		w.commitLocked(memFinished)
	case memStreaming:
		w.mu.Unlock()
		w.pw.Close()
		return
	}
	w.mu.Unlock()
}

// abortConn breaks the connection: before the headers the round trip fails,
// after them the body read fails.
func (w *memWriter) abortConn(reset bool) {
	err := io.ErrUnexpectedEOF
	if reset {
		err = resetError()
	}
	w.mu.Lock()
	switch w.state {
	case memBuffering:
		w.state = memAborted
		w.err = err
		if !reset {
			w.err = errClosedBeforeResponse
		}
		close(w.ready)
	case memStreaming:
		w.state = memAborted
		w.mu.Unlock()
		w.pw.CloseWithError(err)
		return
	}
	w.mu.Unlock()
}

// connAborter is a ResponseWriter that can break its connection itself.
type connAborter interface{ abortConn(reset bool) }

// abortConn breaks the connection under w: with a TCP reset when reset is
// true, else with a plain close (FIN), so the client's read fails after the
// bytes already sent.
func abortConn(w http.ResponseWriter, reset bool) {
	if a, ok := w.(connAborter); ok {
		a.abortConn(reset)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0) //nolint:errcheck // best effort: a FIN still breaks the exchange
	}
	conn.Close()
}

// flush sends what w holds; false means the client is gone.
func flush(w http.ResponseWriter) bool {
	err := http.NewResponseController(w).Flush()
	return err == nil || errors.Is(err, http.ErrNotSupported)
}
