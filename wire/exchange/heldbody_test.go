package exchange

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"testing"
)

// A stream's body: the transport may rewind it (GetBody) until the answer
// began, and its reader lets go of the bytes once the first send's write
// ended; after release GetBody fails and nothing holds the bytes.
func TestSetBody_StreamLetsGoOnceWritten(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	body := []byte(`{"model":"m"}`)
	held := &heldBody{b: body, r: bytes.NewReader(body)}
	setBody(req, body, held)
	if req.ContentLength != int64(len(body)) {
		t.Fatalf("ContentLength %d", req.ContentLength)
	}
	if sent, _ := io.ReadAll(req.Body); string(sent) != string(body) {
		t.Fatalf("body read %q", sent)
	}
	rc, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := io.ReadAll(rc); string(again) != string(body) {
		t.Fatalf("rewound body %q", again)
	}
	// The resend's body, read to its end, lets go of the bytes too: the
	// transport keeps it for the stream's life.
	if spent, ok := rc.(*spentReader); !ok {
		t.Fatalf("GetBody's reader is a %T, want a *spentReader", rc)
	} else if spent.b != nil {
		t.Fatalf("the resend's body, read to its end, still holds %d bytes", len(spent.b))
	}
	held.wrote(httptrace.WroteRequestInfo{})
	if held.r.Size() != 0 {
		t.Fatalf("written, yet the first reader still holds %d bytes", held.r.Size())
	}
	held.release()
	if _, err := req.GetBody(); !errors.Is(err, errBodyReleased) {
		t.Fatalf("GetBody after release: %v, want errBodyReleased", err)
	}
	if held.b != nil {
		t.Fatal("released, yet the bytes are still held")
	}

	// A first send whose write failed keeps its reader as it is (a retry
	// reads another, from GetBody), and later writes change nothing.
	failed := &heldBody{b: body, r: bytes.NewReader(body)}
	failed.wrote(httptrace.WroteRequestInfo{Err: errors.New("broken pipe")})
	failed.wrote(httptrace.WroteRequestInfo{})
	if failed.r.Size() != int64(len(body)) {
		t.Fatalf("after a failed first write the reader holds %d bytes, want %d", failed.r.Size(), len(body))
	}

	plain, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	setBody(plain, body, nil)
	if sent, _ := io.ReadAll(plain.Body); string(sent) != string(body) {
		t.Fatalf("plain body read %q", sent)
	}
	if rc, err := plain.GetBody(); err != nil {
		t.Fatal(err)
	} else if again, _ := io.ReadAll(rc); string(again) != string(body) {
		t.Fatalf("plain body rewound %q", again)
	}
	empty, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	if setBody(empty, nil, nil); empty.Body != http.NoBody || empty.ContentLength != 0 {
		t.Fatalf("an empty body: %v, %d", empty.Body, empty.ContentLength)
	}
	h := (*heldBody)(nil)
	h.release() // nil-safe
}
