package sse

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// errBlocked stands for a read that would wait for the network.
var errBlocked = errors.New("would block")

// onceReader returns its bytes, then errBlocked forever.
type onceReader struct{ b []byte }

func (o *onceReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, errBlocked
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, nil
}

// FuzzReadyMeansNoWait holds Ready and HoldsEvent to their promise: when
// they say so, Next returns the event (a data event; for HoldsEvent, one of
// the named type) from what is buffered, without reading again.
func FuzzReadyMeansNoWait(f *testing.F) {
	for _, s := range []string{
		"event: ping\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: message_stop\ndata: {}\n", "event: message_stop\n\n", "data: x\r\n\r\n", ": c\n\ndata:  \n\ndata: y\n\n",
		"event:message_stop\ndata: z\n\n", "data: a\n\nevent: ping\ndata: b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > readBufSize { // the whole input must fit the buffer
			return
		}
		for _, named := range []bool{false, true} {
			r := NewReader(&onceReader{b: in})
			r.fill() //nolint:errcheck // one read takes it all; errBlocked after it
			ready := r.Ready()
			if named {
				ready = r.HoldsEvent("message_stop")
			}
			if !ready {
				continue
			}
			for {
				ev, err := r.Next()
				if errors.Is(err, errBlocked) {
					t.Fatalf("%q: said ready (named %v), then Next had to read", in, named)
				}
				if err != nil {
					break // the input ended: no wait either
				}
				if !named && ev.Data != "" || named && ev.Event == "message_stop" {
					break
				}
			}
		}
	})
}

// gatedReader is a listReader whose every read waits for a signal on
// next, and says on entered that a read is waiting.
type gatedReader struct {
	listReader
	entered chan struct{}
	next    chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.entered <- struct{}{}
	<-g.next
	return g.listReader.Read(p)
}

// A reader whose source sends an event at a time holds no read buffer
// while it waits for the next; one whose source sends bursts keeps it, so
// a burst is read whole and Ready can see the events after the first.
func TestReader_WaitsWithoutItsReadBufferOnATrickle(t *testing.T) {
	event := "data: " + strings.Repeat("x", 200) + "\n\n"
	burst := strings.Repeat(event, 8)
	r, waits := gatedWaits(t, event, event, burst)
	for i, want := range [][]bool{
		{true},  // the first read: nothing known of the source yet
		{false}, // a lone event came: the source trickles
		{false}, // the burst's first read fills the small buffer
		nil,     // the burst's second event was in it
		{true},  // a burst: the rest is read with the large buffer
	} {
		if got := waits(); !slices.Equal(got, want) {
			t.Fatalf("event %d: read buffer held during each wait %v, want %v", i+1, got, want)
		}
	}
	if !r.Ready() {
		t.Fatal("after the burst's second read, Ready is false: its events were not all buffered")
	}
}

// A source that is behind (a loaded gateway: several events wait in the
// socket at each read, fewer than the read buffer holds) is drained by
// each read, so the next read waits: with the small buffer, not holding
// the read buffer. Holding it there cost 5,000 slow streams on two CPUs
// about 6 KiB each.
func TestReader_WaitsWithoutItsReadBufferWhenAReadDrainedTheSource(t *testing.T) {
	event := "data: " + strings.Repeat("x", 200) + "\n\n"
	fills := "data: " + strings.Repeat("y", waitBufSize-8) + "\n\n" // exactly the small buffer
	behind := "data: " + strings.Repeat("z", 992) + "\n\n"          // past it, short of the read buffer
	_, waits := gatedWaits(t, event, fills, behind, event)
	for i, want := range [][]bool{
		{true},  // the first read
		{false}, // the source trickled
		{true},  // the small buffer came back full: read on with the large one
		{false}, // that read did not fill it: the source was drained
	} {
		if got := waits(); !slices.Equal(got, want) {
			t.Fatalf("event %d: read buffer held during each wait %v, want %v", i+1, got, want)
		}
	}
}

// A trickling source's events are read where they came, in the small
// buffer: the reader takes no read buffer for them at all, not even
// between its waits.
func TestReader_TrickleTakesNoReadBuffer(t *testing.T) {
	event := "data: " + strings.Repeat("x", 200) + "\n\n"
	r, waits := gatedWaits(t, event, event, event)
	for i := range 3 {
		waits()
		if held := r.read != nil; held != (i == 0) { // the first read knew nothing of the source
			t.Fatalf("event %d: read buffer held after it: %v", i+1, held)
		}
	}
}

// gatedWaits returns a reader of pieces, one per read, and waits, which
// reads its next event and returns, for each read the reader waited on,
// whether it held its read buffer during it.
func gatedWaits(t *testing.T, pieces ...string) (*Reader, func() []bool) {
	g := &gatedReader{listReader: listReader{pieces: pieces}, entered: make(chan struct{}), next: make(chan struct{})}
	r := NewReader(g)
	t.Cleanup(r.Release)
	return r, func() []bool {
		got := make(chan error, 1)
		go func() {
			_, err := r.Next()
			got <- err
		}()
		var held []bool
		for {
			select {
			case <-g.entered:
				held = append(held, r.read != nil)
				g.next <- struct{}{}
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
				return held
			}
		}
	}
}

// The read buffers readers give back are kept for the next readers only
// up to maxFreeReads: every waiting reader gives its buffer back, and
// keeping them all would hold one per open stream.
func TestFreeReads_KeepsOnlyAFew(t *testing.T) {
	for range maxFreeReads + 10 {
		b := make([]byte, readBufSize)
		putRead(&b)
	}
	freeReads.mu.Lock()
	kept := len(freeReads.bufs)
	freeReads.mu.Unlock()
	if kept != maxFreeReads {
		t.Fatalf("%d buffers kept after %d given back, want %d", kept, maxFreeReads+10, maxFreeReads)
	}
	for range kept + 1 {
		if b := getRead(); len(*b) != readBufSize {
			t.Fatalf("a read buffer of %d bytes, want %d", len(*b), readBufSize)
		}
	}
}
