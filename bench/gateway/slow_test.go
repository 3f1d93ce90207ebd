package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReadEvents_CountsDataLinesOnce(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + "\n\n" // longer than the 32-byte buffer below
	body := "data: {\"a\":1}\n\n: ping\n\n" + long + "event: x\ndata: {}\n\ndata: [DONE]\n\ndata: partial"
	var n, done int
	err := readEvents(bufio.NewReaderSize(strings.NewReader(body), 32), func(_ time.Time, line []byte) {
		n++
		if strings.HasPrefix(string(line), "data: [DONE]") {
			done++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 || done != 1 {
		t.Errorf("events = %d, done = %d; want 5 and 1", n, done)
	}
	err = readEvents(bufio.NewReader(io.MultiReader(strings.NewReader("data: a\n"), errReader{})), func(time.Time, []byte) {})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("readEvents of a failing body = %v, want its error", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// slowServer streams n events gap apart, then [DONE]; ?fail answers 503,
// ?cut stops before [DONE], ?oops ends with an error event.
func slowServer(n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // test server
		if r.URL.Query().Has("fail") {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			if i > 0 {
				time.Sleep(gap)
			}
			io.WriteString(w, "data: {\"choices\":[]}\n\n") //nolint:errcheck // test server
			w.(http.Flusher).Flush()
		}
		if r.URL.Query().Has("oops") {
			io.WriteString(w, "data: {\"error\":{\"message\":\"upstream timed out\"}}\n\n") //nolint:errcheck // test server
		}
		if !r.URL.Query().Has("cut") {
			io.WriteString(w, "data: [DONE]\n\n") //nolint:errcheck // test server
		}
	}
}

func TestRunSlowLoad_MeasuresEveryStream(t *testing.T) {
	const streams, events, gap = 20, 5, 20 * time.Millisecond
	srv := httptest.NewServer(slowServer(events, gap))
	t.Cleanup(srv.Close)
	addr, _ := hostPort(srv.URL)
	run := func(path string) *slowResult {
		return runSlowLoad(slowSpec{addr: addr, streams: streams, ramp: 50 * time.Millisecond, timeout: 10 * time.Second,
			req: newRequest("", addr, path, []byte(`{}`), true)})
	}
	res := run("/")
	if res.completed != streams || res.failed != 0 {
		t.Fatalf("completed %d, failed %d (%s); want %d and 0", res.completed, res.failed, res.errSummary(), streams)
	}
	if want := uint64(streams * (events + 1)); res.events != want {
		t.Errorf("events = %d, want %d", res.events, want)
	}
	if res.peakInFlight < 2 || res.peakInFlight > streams {
		t.Errorf("peak in flight = %d, want between 2 and %d (streams overlap)", res.peakInFlight, streams)
	}
	if p50 := res.gaps.Quantile(0.5); p50 < gap || p50 > 5*gap {
		t.Errorf("gap p50 = %s, want about %s", p50, gap)
	}
	if res.ttfb.Count() != streams || res.dur.Quantile(0.5) < (events-1)*gap {
		t.Errorf("ttfb count %d, duration p50 %s: want %d and at least %s", res.ttfb.Count(), res.dur.Quantile(0.5), streams, (events-1)*gap)
	}
	for path, kind := range map[string]string{"/?fail": "status 503", "/?cut": "incomplete", "/?oops": "error event"} {
		res := run(path)
		if res.completed != 0 || res.errs[kind] != streams {
			t.Errorf("%s: completed %d, errors %v; want 0 and %d %q", path, res.completed, res.errs, streams, kind)
		}
		if kind == "error event" && !strings.Contains(res.errSample[kind], "upstream timed out") {
			t.Errorf("error event sample %q does not quote the event", res.errSample[kind])
		}
	}
	srv.Close()
	if res := run("/"); res.errs["dial"] != streams {
		t.Errorf("closed server: errors %v, want %d dial", res.errs, streams)
	}
}

func TestMergeShards_SumsEveryShard(t *testing.T) {
	shards := make([]slowShard, 3)
	shards[0].completed, shards[0].events, shards[0].lastOpen = 2, 10, time.Second
	shards[2].completed, shards[2].events, shards[2].lastOpen = 1, 5, 2*time.Second
	shards[0].gaps.Record(time.Millisecond)
	shards[2].gaps.Record(3 * time.Millisecond)
	shards[1].fail("io", errors.New("first"))
	shards[2].fail("io", errors.New("second"))
	shards[2].fail("dial", errors.New("refused"))
	res := mergeShards(shards)
	if res.completed != 3 || res.events != 15 || res.failed != 3 || res.lastOpen != 2*time.Second {
		t.Errorf("completed %d events %d failed %d lastOpen %s; want 3 15 3 2s", res.completed, res.events, res.failed, res.lastOpen)
	}
	if res.errs["io"] != 2 || res.errs["dial"] != 1 || res.errSample["io"] != "first" {
		t.Errorf("errors %v samples %v", res.errs, res.errSample)
	}
	if res.gaps.Count() != 2 || res.gaps.Max() != 3*time.Millisecond {
		t.Errorf("gaps: %d samples, max %s; want 2 and 3ms", res.gaps.Count(), res.gaps.Max())
	}
}

func TestSlowRun_Figures(t *testing.T) {
	r := &slowRun{hwm: 100 << 20, rss0: 10 << 20, sutCPU: 2 * time.Second,
		res: &slowResult{peakInFlight: 1000, events: 100000, wall: 10 * time.Second}}
	if got := r.kibPerStream(); got != 102.4 {
		t.Errorf("kibPerStream = %v, want 102.4", got)
	}
	if got := r.marginalKiB(); got != 92.16 {
		t.Errorf("marginalKiB = %v, want 92.16", got)
	}
	if got := r.usPerEvent(r.sutCPU); got != 20 {
		t.Errorf("usPerEvent = %v, want 20", got)
	}
	empty := &slowRun{res: &slowResult{}}
	if empty.kibPerStream() != 0 || empty.usPerEvent(time.Second) != 0 {
		t.Error("a run without streams or events should give 0, not divide by 0")
	}
}

func TestPace(t *testing.T) {
	rate, streams := pace(2, 50, 200, 10*time.Second)
	if rate != 40000 || streams != 2000 {
		t.Errorf("pace = %v events/s, %d streams; want 40000 and 2000", rate, streams)
	}
	if rate, streams := pace(2, 0, 200, time.Second); rate != 0 || streams != 0 {
		t.Errorf("pace with no cost = %v, %d; want 0, 0", rate, streams)
	}
}

func TestSlowStreams_FitTheOpenFilesLimit(t *testing.T) {
	for _, tc := range []struct {
		n     int
		limit uint64
		want  int
	}{{5000, 20000, 5000}, {5000, 1024, 384}, {5000, 10256, 5000}, {5000, 10255, 4999}, {10, 100, 0}} {
		if got := slowStreams(tc.n, tc.limit); got != tc.want {
			t.Errorf("slowStreams(%d, %d) = %d, want %d", tc.n, tc.limit, got, tc.want)
		}
	}
}

func TestParseOpenFiles(t *testing.T) {
	limits := "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max processes             95860                95860                processes \n" +
		"Max open files            20000                20000                files     \n"
	if got := parseOpenFiles(limits); got != "20000/20000" {
		t.Errorf("parseOpenFiles = %q, want 20000/20000", got)
	}
	if got := parseOpenFiles("Max processes 1 1\n"); got != "n/a" {
		t.Errorf("parseOpenFiles without the line = %q, want n/a", got)
	}
}

func TestNetstatField(t *testing.T) {
	text := "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 3945 3950\n" +
		"IpExt: InNoRoutes ListenOverflows\nIpExt: 1 7\n"
	if n, ok := netstatField(text, "TcpExt", "ListenOverflows"); !ok || n != 3945 {
		t.Errorf("TcpExt ListenOverflows = %d, %v; want 3945", n, ok)
	}
	if n, ok := netstatField(text, "IpExt", "ListenOverflows"); !ok || n != 7 {
		t.Errorf("IpExt ListenOverflows = %d, %v; want 7", n, ok)
	}
	if _, ok := netstatField(text, "TcpExt", "Nope"); ok {
		t.Error("a missing counter was found")
	}
}
