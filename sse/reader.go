package sse

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"
)

// DefaultMaxEventSize is the limit on one line and on one event's data when
// Reader.MaxEventSize is zero: 8 MiB.
const DefaultMaxEventSize = 8 << 20

// ErrTooLong is returned by Reader.Next when a line, or the data of one
// event, exceeds the reader's MaxEventSize. The reader stops there: every
// later call returns ErrTooLong again.
var ErrTooLong = errors.New("sse: line or event exceeds the size limit")

// ErrReleased is returned by Reader.Next after Release, unless the reader
// had already stopped with another error.
var ErrReleased = errors.New("sse: reader released")

// bom is the UTF-8 byte order mark, skipped once at the start of a stream.
var bom = []byte("\xEF\xBB\xBF")

// Event is one dispatched server-sent event.
type Event struct {
	// Event is the value of the event's `event:` field; empty when it had
	// none (browsers call such an event "message").
	Event string
	// Data is the values of the event's `data:` lines joined with "\n".
	Data string
	// ID is the last event ID seen on the stream: set by an `id:` field and
	// kept for later events until another `id:` field changes it.
	ID string
	// Retry is the reconnection time in milliseconds from the event's
	// `retry:` field; 0 when the event had none (or said 0).
	Retry int
}

// Reader reads server-sent events from a byte stream as the HTML Living
// Standard's event-stream parser does, with two deliberate differences:
//
//   - At the end of the input, an event that has data but no terminating
//     blank line is still returned (then io.EOF), where a browser would drop
//     it; Incomplete reports when that happened, so callers can tell a
//     final event that may be cut short.
//   - A line, or one event's data, longer than MaxEventSize stops the reader
//     with ErrTooLong, so memory stays bounded whatever the input.
//
// Lines end in "\n", "\r\n" or "\r" (a "\r\n" split across two reads counts
// once, and a lone "\r" never waits for the next byte); a leading byte order
// mark is skipped; lines starting with ':' are comments and ignored; a line
// "field: value" has one optional space after the colon stripped; a line
// without a colon is a field with an empty value; unknown fields are ignored.
// An event is dispatched at a blank line when it had at least one `data:`
// line (events with no data are dropped, as the standard says). Bytes are
// not checked for valid UTF-8.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	// MaxEventSize caps one line and one event's data, in bytes. Zero means
	// DefaultMaxEventSize. Set it before the first call to Next.
	MaxEventSize int

	src io.Reader
	// read is the read buffer, from freeReads; nil while given back (see
	// trickle). released says Release ran.
	read     *[]byte
	released bool
	// rd and wr bound the unread input in the buffer the last read went
	// into: read when the reader holds it, else wait (see input). A line
	// cut off at the end of a read is carried to the buffer's start, and
	// the next read goes in behind it.
	rd, wr int
	// srcErr is the error the source returned with its last bytes, kept
	// for the read after them.
	srcErr error
	// trickle is set when the last read did not fill the buffer it read
	// into: it drained the source, so the next read will likely wait, and
	// it waits with the small buffer (wait) while the read buffer is given
	// back (freeReads). A read that filled its buffer left more behind:
	// the next reads with the read buffer.
	trickle bool
	wait    [waitBufSize]byte
	// cur is the current event's data: a view of the input where it came
	// (viewed) while it is one line that lies whole in the buffer, as
	// nearly every event of a stream is; else it is put together in data.
	// line holds a line too long to carry in the buffer (see readLine).
	// line and data are made when first needed and reused.
	cur    []byte
	viewed bool
	line   []byte
	data   []byte
	// event is the current event's type; lastEvent the last type string
	// made, reused when the next event names the same type.
	event     []byte
	lastEvent string
	id        string
	retry     int
	hasData   bool
	// skipLF is set after a line ended in '\r': a '\n' that follows belongs
	// to that line ending.
	skipLF     bool
	started    bool
	incomplete bool
	err        error
}

// readBufSize is the size of a Reader's read buffer. A short answer
// sent at once (a few KiB of events) is read in one read, so a writer
// that flushes when nothing more is buffered (Ready) sends it in one
// write; 2 KiB split such answers in two. A reader holds no read
// buffer while it waits once a read drained its source (trickle), so
// thousands of slow streams do not each keep one. A line longer than
// half of it is put together in the line buffer.
const readBufSize = 4 << 10

// waitBufSize is the size of the buffer a Reader waits with once a read
// drained its source (Reader.trickle): it holds one event of a typical
// stream, and a read that fills it says a burst came.
const waitBufSize = 512

// freeReads holds read buffers of readBufSize bytes that readers gave
// back, up to maxFreeReads; a buffer given back past that is left to the
// garbage collector. Not a sync.Pool: every waiting reader gives its
// buffer back, and a pool would keep them all, one per open stream, where
// only the readers reading at this moment need one.
var freeReads struct {
	mu   sync.Mutex
	bufs []*[]byte
}

// maxFreeReads bounds freeReads: readers that read at the same time are
// about as many as the CPUs that run them.
var maxFreeReads = 16 * runtime.GOMAXPROCS(0)

// getRead returns a read buffer, a free one when there is one.
func getRead() *[]byte {
	freeReads.mu.Lock()
	if n := len(freeReads.bufs); n > 0 {
		b := freeReads.bufs[n-1]
		freeReads.bufs[n-1] = nil
		freeReads.bufs = freeReads.bufs[:n-1]
		freeReads.mu.Unlock()
		return b
	}
	freeReads.mu.Unlock()
	b := make([]byte, readBufSize)
	return &b
}

// putRead gives b back for getRead, unless enough are free already.
func putRead(b *[]byte) {
	freeReads.mu.Lock()
	if len(freeReads.bufs) < maxFreeReads {
		freeReads.bufs = append(freeReads.bufs, b)
	}
	freeReads.mu.Unlock()
}

// NewReader returns a Reader reading from r. Its read buffer comes from
// a shared free list: Release gives it back once the reader is done.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r}
}

// Init readies r, a zero Reader (one embedded by value in a struct of the
// caller's), to read src: new(Reader) after Init(src) is NewReader(src).
func (r *Reader) Init(src io.Reader) { r.src = src }

// unread returns the input read and not yet consumed.
func (r *Reader) unread() []byte {
	if r.released {
		return nil
	}
	return r.input()[r.rd:r.wr]
}

// input returns the buffer reads go into: the read buffer while the
// reader holds it, else the small one it waits with. A trickle's events
// are parsed where they came, in the small one, with no copy.
func (r *Reader) input() []byte {
	if r.read != nil {
		return *r.read
	}
	return r.wait[:]
}

// keep copies the current event's data into the reader's own buffer
// when it is a view of the input, which the next read writes over.
func (r *Reader) keep() {
	if r.viewed {
		r.data = append(r.data[:0], r.cur...)
		r.cur, r.viewed = r.data, false
	}
}

// discard consumes the first n bytes of the buffered input.
func (r *Reader) discard(n int) { r.rd += n }

// maxEmptyReads is how many reads in a row may return nothing before the
// reader gives up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// fill reads more input once what is buffered holds no whole line: the
// unread rest (the start of a line, at most half the buffer it goes to)
// is carried to the start of the buffer and the read goes in behind it.
// It returns the source's error when no byte came; the carried bytes
// stay unread then. A reader whose last read drained its source waits
// with its small buffer and holds no read buffer while it waits: a slow
// stream's reads each drain it, and so do a loaded gateway's, where
// several events wait at each read.
func (r *Reader) fill() error {
	r.keep() // the data's view is in the buffer about to be written
	carry := r.input()[r.rd:r.wr]
	if r.srcErr != nil {
		err := r.srcErr
		r.srcErr = nil
		return err
	}
	// A burst, a long start of a line, or the middle of a long line: read
	// with the large buffer; else with the small one, giving the large one
	// back once the carry left it.
	large := !r.trickle || len(carry) > waitBufSize/2 || r.read != nil && len(r.line) > 0
	into := r.wait[:]
	if large {
		if r.read == nil {
			r.read = getRead()
		}
		into = *r.read
	}
	copy(into, carry)
	if !large && r.read != nil {
		putRead(r.read)
		r.read = nil
	}
	r.rd, r.wr = 0, len(carry)
	room := into[len(carry):]
	for range maxEmptyReads {
		n, err := r.src.Read(room)
		if n < 0 || n > len(room) {
			return errors.New("sse: the source returned an invalid count")
		}
		if n == 0 && err == nil {
			continue
		}
		r.trickle = n < len(room)
		if n > 0 {
			r.wr, r.srcErr = r.wr+n, err
			return nil
		}
		return err
	}
	return io.ErrNoProgress
}

// Release gives the reader's buffers back for reuse and stops the reader:
// later calls to Next return the error the reader stopped with, or
// ErrReleased. Calling it is optional (unreleased buffers are simply
// garbage collected) and it must not run concurrently with Next; later
// calls do nothing.
func (r *Reader) Release() {
	if r.released {
		return
	}
	if r.err == nil {
		r.err = ErrReleased
	}
	r.reset()
	if r.read != nil {
		putRead(r.read)
		r.read = nil
	}
	r.line, r.data = nil, nil
	r.released, r.src, r.srcErr = true, nil, nil
	r.rd, r.wr = 0, 0
}

// Ready reports whether the input already buffered holds the whole of an
// event with non-blank data, or whether the reader has stopped: then the
// next call to Next returns without waiting for more input. False says
// nothing: a writer that batches its output flushes it when Ready is
// false, so a lone event never waits for the next one. It reads no input
// and does not change the reader.
func (r *Reader) Ready() bool {
	return r.buffered(func(_ []byte, data bool) bool { return data })
}

// HoldsEvent reports whether the input already buffered holds the whole of
// an event with non-blank data whose type (its event: field) is one of
// names, or whether the reader has stopped. A reader of a stream that ends with a known event
// (Anthropic's message_stop) knows from it that Next will not wait until
// that event, whatever the events before it yield. It reads no input and
// does not change the reader.
func (r *Reader) HoldsEvent(names ...string) bool {
	return r.buffered(func(name []byte, data bool) bool {
		if !data {
			return false
		}
		for _, n := range names {
			if string(name) == n {
				return true
			}
		}
		return false
	})
}

// buffered calls match for each whole event in the buffered input, with its
// type and whether it has non-blank data, until match returns true; it
// reports whether one did, or whether the reader has stopped.
func (r *Reader) buffered(match func(name []byte, data bool) bool) bool {
	if r.err != nil || r.released {
		return true
	}
	buf := r.unread()
	var name []byte
	data, skipLF := false, r.skipLF
	for {
		if skipLF && len(buf) > 0 && buf[0] == '\n' {
			buf = buf[1:]
		}
		i := indexEOL(buf)
		if i < 0 {
			return false
		}
		line := buf[:i]
		skipLF = buf[i] == '\r'
		buf = buf[i+1:]
		switch {
		case len(line) == 0:
			if match(name, data) {
				return true
			}
			name, data = nil, false
		case bytes.HasPrefix(line, []byte("data:")):
			data = data || len(bytes.Trim(line[len("data:"):], " \t")) > 0
		case bytes.HasPrefix(line, []byte("event:")):
			name = bytes.TrimPrefix(line[len("event:"):], []byte(" "))
		}
	}
}

// Incomplete reports whether the event returned by the last call to Next
// ended at the end of the input without its terminating blank line (so its
// last line may have been cut short).
func (r *Reader) Incomplete() bool { return r.incomplete }

// View is an event as NextView returns it: Data borrows the reader's
// buffer.
type View struct {
	// Event, ID and Retry are as in Event.
	Event string
	ID    string
	Retry int
	// Data is the event's data, as in Event, in the reader's own buffer:
	// it holds until the next call to Next, NextView or Release, which
	// write over it.
	Data []byte
}

// Next returns the next event. It returns io.EOF after the last event, the
// reader's error when reading fails (a pending event is then dropped), and
// ErrTooLong when an event is too large. Once Next has returned an error it
// returns the same error on every later call.
func (r *Reader) Next() (Event, error) {
	v, err := r.NextView()
	if err != nil {
		return Event{}, err
	}
	return Event{Event: v.Event, Data: string(v.Data), ID: v.ID, Retry: v.Retry}, nil
}

// NextView is Next without a copy of the event's data: a reader of a long
// stream that decodes each event before it asks for the next one makes no
// garbage per event. View.Data holds until the next call.
func (r *Reader) NextView() (View, error) {
	r.incomplete = false
	if r.err != nil {
		return View{}, r.err
	}
	limit := r.MaxEventSize
	if limit <= 0 {
		limit = DefaultMaxEventSize
	}
	for {
		line, err := r.readLine(limit)
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, bom)
		}
		if err != nil {
			if err == io.EOF && line == nil {
				r.err = io.EOF
				if r.hasData {
					r.incomplete = true
					return r.dispatch(), nil
				}
				r.reset()
				return View{}, io.EOF
			}
			if err != io.EOF {
				r.err = err
				r.reset()
				return View{}, err
			}
			// A last line without a terminator: process it, then the
			// next call reports EOF (and the pending event, if any).
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			r.reset()
			continue
		}
		if ferr := r.field(line, limit); ferr != nil {
			r.err = ferr
			r.reset()
			return View{}, ferr
		}
	}
}

// dispatch turns the pending event into a View and clears it; the view's
// data stays where it is (the input, or r.data) until the next call.
func (r *Reader) dispatch() View {
	ev := View{Data: r.cur, ID: r.id, Retry: r.retry}
	if len(r.event) > 0 {
		if string(r.event) != r.lastEvent {
			r.lastEvent = string(r.event)
		}
		ev.Event = r.lastEvent
	}
	r.reset()
	return ev
}

// reset clears the pending event (the last event ID persists).
func (r *Reader) reset() {
	r.cur, r.viewed = nil, false
	r.data = r.data[:0]
	r.event = r.event[:0]
	r.retry = 0
	r.hasData = false
}

// field applies one non-blank line to the pending event.
func (r *Reader) field(line []byte, limit int) error {
	if line[0] == ':' {
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		n := len(r.cur) + len(value)
		if r.hasData {
			n++
		}
		if n > limit {
			return ErrTooLong
		}
		switch {
		case !r.hasData && len(r.line) == 0:
			// The line lies whole in the input: the data is a view of it.
			r.cur, r.viewed = value, true
		case !r.hasData:
			r.data = append(r.data[:0], value...)
			r.cur = r.data
		default:
			r.keep()
			r.data = append(r.data, '\n')
			r.data = append(r.data, value...)
			r.cur = r.data
		}
		r.hasData = true
	case "event":
		r.event = append(r.event[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
			r.id = string(value)
		}
	case "retry":
		if n, ok := parseRetry(value); ok {
			r.retry = n
		}
	}
	return nil
}

// parseRetry reads a value of ASCII digits only, refusing values past 2^31-1.
func parseRetry(v []byte) (int, bool) {
	if len(v) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > 1<<31-1 {
			return 0, false
		}
	}
	return n, true
}

// readLine returns the next line without its terminator. At the end of the
// input it returns the unterminated last line with io.EOF, or nil and io.EOF
// when nothing is left. The returned slice is valid until the next call.
//
// A line cut off at the end of a read stays in the buffer, carried to its
// start by the next read (fill); only a line longer than half the read
// buffer is put together in the line buffer. So the line, and the event
// data it holds, is nearly always a view of the input, copied nowhere.
func (r *Reader) readLine(limit int) ([]byte, error) {
	r.line = r.line[:0]
	for {
		buf := r.unread()
		if r.skipLF && len(buf) > 0 {
			r.skipLF = false
			if buf[0] == '\n' {
				r.discard(1)
				continue
			}
		}
		if i := indexEOL(buf); i >= 0 {
			if len(r.line)+i > limit {
				return nil, ErrTooLong
			}
			r.skipLF = buf[i] == '\r'
			r.discard(i + 1)
			if len(r.line) == 0 {
				// The whole line is buffered: hand out the buffer's own
				// bytes, which stay as they are until the next read.
				return buf[:i], nil
			}
			r.line = append(r.line, buf[:i]...)
			return r.line, nil
		}
		if len(r.line)+len(buf) > limit {
			return nil, ErrTooLong
		}
		if len(r.line) > 0 || len(buf) > readBufSize/2 {
			// Too long to carry: put together in the line buffer.
			r.line = append(r.line, buf...)
			r.discard(len(buf))
		}
		if err := r.fill(); err != nil {
			if rest := r.unread(); len(rest) > 0 {
				r.discard(len(rest))
				return rest, err
			}
			if err == io.EOF && len(r.line) == 0 {
				return nil, io.EOF
			}
			return r.line, err
		}
	}
}

// indexEOL returns the index of the first '\n' or '\r' in b, or -1: the
// first '\n', then a '\r' before it, each found with bytes.IndexByte's
// vector search. A stream that ends its lines in '\r' alone has the
// first search run to the end of what is buffered, at most the read
// buffer, for each line.
func indexEOL(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	head := b
	if n >= 0 {
		head = b[:n]
	}
	if r := bytes.IndexByte(head, '\r'); r >= 0 {
		return r
	}
	return n
}

// FirstData returns the data of the first event in b that has any (its data
// lines joined by "\n"), or nil. It reads b with a Reader, so comments,
// line endings and field rules are those of Next.
func FirstData(b []byte) []byte {
	r := NewReader(bytes.NewReader(b))
	defer r.Release()
	for {
		ev, err := r.Next()
		if err != nil {
			return nil
		}
		if ev.Data != "" {
			return []byte(ev.Data)
		}
	}
}
