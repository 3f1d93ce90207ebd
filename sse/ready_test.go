package sse

import (
	"errors"
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
			r.br.Peek(len(in)) //nolint:errcheck // fills the buffer; errBlocked after it
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
