package exchange

import (
	"errors"
	"io"
	"net/http"
	"testing"
)

// The transport may rewind the body (GetBody) until the answer began; after
// release it cannot, and the bytes are no longer held.
func TestSetBody_RewindUntilReleased(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	body := []byte(`{"model":"m"}`)
	held := setBody(req, body, true)
	if req.ContentLength != int64(len(body)) {
		t.Fatalf("ContentLength %d", req.ContentLength)
	}
	sent, _ := io.ReadAll(req.Body)
	if string(sent) != string(body) || req.Body.(*sendBody).b != nil {
		t.Fatalf("body read %q; the reader still holds its bytes after EOF: %v", sent, req.Body.(*sendBody).b != nil)
	}
	rc, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := io.ReadAll(rc); string(again) != string(body) {
		t.Fatalf("rewound body %q", again)
	}
	held.release()
	if _, err := req.GetBody(); !errors.Is(err, errBodyReleased) {
		t.Fatalf("GetBody after release: %v, want errBodyReleased", err)
	}
	if held.b != nil {
		t.Fatal("released, yet the bytes are still held")
	}
	empty, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	if h := setBody(empty, nil, true); h != nil || empty.Body != http.NoBody || empty.ContentLength != 0 {
		t.Fatalf("an empty body: %v, %v, %d", h, empty.Body, empty.ContentLength)
	}
	h := (*heldBody)(nil)
	h.release() // nil-safe
}
