package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"
)

// The slow-stream load: many streamed answers open at once, each on a
// connection of its own, each read event by event as it arrives — the way
// LLM traffic loads a gateway (few requests per second, thousands of
// long-lived streams). A stream's state is its goroutine, a 4 KiB read
// buffer and a 1 KiB line buffer; what it measures goes to one of
// slowShards shared histograms.

// slowSpec is one slow-stream run.
type slowSpec struct {
	addr    string  // host:port of the system under test
	req     request // a streamed request
	streams int     // how many streams, each on its own connection
	// ramp spreads the streams' starts evenly: stream i dials at
	// i*ramp/streams.
	ramp time.Duration
	// timeout bounds each stream, from its dial to its last byte.
	timeout time.Duration
}

// slowShards is the number of shards the streams record into.
const slowShards = 32

// slowShard is what a share of the streams measured, under its mutex.
type slowShard struct {
	mu sync.Mutex
	// ttfb is the time from the request to the status line, first the time
	// to the first data event, dur the time from the request to the end of
	// the stream (completed streams only), gaps the time between two data
	// events of a stream, connect the time dial took.
	ttfb, first, dur, gaps, connect Histogram
	completed                       int
	events                          uint64
	lastOpen                        time.Duration // when the last connection was open, from the run's start
	errs                            map[string]int
	errSample                       map[string]string
}

// slowResult is what a slow-stream run measured.
type slowResult struct {
	streams, completed, failed int
	// events counts the SSE data events delivered, [DONE] included.
	events                          uint64
	ttfb, first, dur, gaps, connect Histogram
	peakInFlight                    int64
	lastOpen                        time.Duration
	wall                            time.Duration
	errs                            map[string]int
	errSample                       map[string]string
}

// errSummary returns the failures as "N kind (first message); ...".
func (r *slowResult) errSummary() string {
	lr := loadResult{errs: r.errs, errSample: r.errSample}
	return lr.errSummary()
}

// inFlight counts the streams between their request and their end, and
// keeps the peak.
type inFlight struct{ cur, peak atomic.Int64 }

func (f *inFlight) add() {
	n := f.cur.Add(1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
}

func (f *inFlight) done() { f.cur.Add(-1) }

// runSlowLoad runs spec and returns once every stream has ended.
func runSlowLoad(spec slowSpec) *slowResult {
	shards := make([]slowShard, slowShards)
	var fl inFlight
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range spec.streams {
		at := t0.Add(time.Duration(int64(spec.ramp) * int64(i) / int64(max(spec.streams, 1))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(at))
			slowStream(&spec, &shards[i%slowShards], &fl, t0)
		}()
	}
	wg.Wait()
	res := mergeShards(shards)
	res.streams, res.peakInFlight, res.wall = spec.streams, fl.peak.Load(), time.Since(t0)
	return res
}

// mergeShards sums the shards into one result.
func mergeShards(shards []slowShard) *slowResult {
	res := &slowResult{errs: map[string]int{}, errSample: map[string]string{}}
	for i := range shards {
		s := &shards[i]
		for _, m := range []struct{ dst, src *Histogram }{{&res.ttfb, &s.ttfb}, {&res.first, &s.first},
			{&res.dur, &s.dur}, {&res.gaps, &s.gaps}, {&res.connect, &s.connect}} {
			m.dst.Merge(m.src)
		}
		res.completed += s.completed
		res.events += s.events
		res.lastOpen = max(res.lastOpen, s.lastOpen)
		for k, n := range s.errs {
			res.errs[k] += n
			res.failed += n
			if _, ok := res.errSample[k]; !ok {
				res.errSample[k] = s.errSample[k]
			}
		}
	}
	return res
}

// fail counts a failed stream of kind.
func (s *slowShard) fail(kind string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errs == nil {
		s.errs, s.errSample = map[string]int{}, map[string]string{}
	}
	s.errs[kind]++
	if _, ok := s.errSample[kind]; !ok {
		s.errSample[kind] = err.Error()
	}
}

// slowStream runs one stream: dial, send, read the answer event by event.
func slowStream(spec *slowSpec, sh *slowShard, fl *inFlight, t0 time.Time) {
	start := time.Now()
	nc, err := net.DialTimeout("tcp", spec.addr, 10*time.Second)
	if err != nil {
		sh.fail("dial", err)
		return
	}
	defer nc.Close()
	opened := time.Now()
	sh.mu.Lock()
	sh.connect.Record(opened.Sub(start))
	sh.lastOpen = max(sh.lastOpen, opened.Sub(t0))
	sh.mu.Unlock()
	nc.SetDeadline(start.Add(spec.timeout)) //nolint:errcheck // a failed deadline shows as a hang, then an error
	sent := time.Now()
	if _, err := nc.Write(spec.req.raw); err != nil {
		sh.fail("write", err)
		return
	}
	fl.add()
	defer fl.done()
	br := bufio.NewReaderSize(nc, 4<<10)
	_, h, err := readHead(br)
	if err != nil {
		sh.fail("head", err)
		return
	}
	ttfb := time.Since(sent)
	if h.status != 200 {
		line, _ := br.Peek(min(br.Buffered(), 200))
		sh.fail(fmt.Sprintf("status %d", h.status), &statusError{status: h.status, body: string(line)})
		return
	}
	if !h.chunked {
		sh.fail("not chunked", errors.New("a 200 stream without Transfer-Encoding: chunked"))
		return
	}
	var st streamStats
	err = readEvents(bufio.NewReaderSize(httputil.NewChunkedReader(br), 1<<10), func(t time.Time, line []byte) {
		st.event(t, sh)
		st.done = st.done || bytes.HasPrefix(line, doneEvent)
		if st.errEvent == "" && bytes.Contains(line, errorField) {
			st.errEvent = string(line[:min(len(line), 300)])
		}
	})
	end := time.Now()
	sh.mu.Lock()
	sh.ttfb.Record(ttfb)
	sh.events += st.events
	if st.events > 0 {
		sh.first.Record(st.first.Sub(sent))
	}
	if err == nil && st.done && st.errEvent == "" {
		sh.completed++
		sh.dur.Record(end.Sub(sent))
	}
	sh.mu.Unlock()
	switch {
	case st.errEvent != "":
		sh.fail("error event", fmt.Errorf("after %d events: %s", st.events, bytes.TrimSpace([]byte(st.errEvent))))
	case err != nil:
		sh.fail("io", fmt.Errorf("after %d events: %w", st.events, err))
	case !st.done:
		sh.fail("incomplete", fmt.Errorf("%w: the stream ended after %d events without data: [DONE]", errBadBody, st.events))
	}
}

// streamStats is one stream's count of events, the time of its first and
// latest, and the first error event it carried, if any.
type streamStats struct {
	events      uint64
	first, prev time.Time
	done        bool
	errEvent    string
}

// event records an event that arrived at t: the gap since the one before
// goes to sh.
func (s *streamStats) event(t time.Time, sh *slowShard) {
	if s.events == 0 {
		s.first = t
	} else {
		sh.mu.Lock()
		sh.gaps.Record(t.Sub(s.prev))
		sh.mu.Unlock()
	}
	s.events++
	s.prev = t
}

var (
	dataPrefix = []byte("data:")
	doneEvent  = []byte("data: [DONE]")
	errorField = []byte(`"error"`)
)

// readEvents reads an SSE body line by line until EOF and calls onEvent,
// with the time it was read and the line (valid only during the call, at
// most r's buffer long), for each line starting with "data:". A line longer
// than r's buffer counts once.
func readEvents(r *bufio.Reader, onEvent func(t time.Time, line []byte)) error {
	mid := false // inside a line longer than the buffer
	for {
		line, err := r.ReadSlice('\n')
		if !mid && bytes.HasPrefix(line, dataPrefix) {
			onEvent(time.Now(), line)
		}
		mid = errors.Is(err, bufio.ErrBufferFull)
		switch {
		case err == nil || mid:
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}
