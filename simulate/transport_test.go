package simulate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTransport_HangReturnsExactlyTheContextError(t *testing.T) {
	srv, err := NewServer(Provider{Name: "p", Script: Faults(Hang)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.BaseURL("p")+"/chat/completions", strings.NewReader(chatBody("m", false)))
	time.AfterFunc(20*time.Millisecond, cancel)
	resp, err := srv.Transport().RoundTrip(req)
	if resp != nil || err != context.Canceled {
		t.Errorf("RoundTrip = %v, %v; want nil, context.Canceled", resp, err)
	}
}

func TestTransport_ReturnsAtTheFirstFlushAndStreamsTheRest(t *testing.T) {
	release := make(chan struct{})
	handlerDone := make(chan error, 1)
	tr := &Transport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(201)
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: two\n\n")
		handlerDone <- r.Context().Err()
	})}
	req, _ := http.NewRequest(http.MethodGet, "http://any.invalid/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.ContentLength != -1 {
		t.Errorf("response %d %v %d", resp.StatusCode, resp.Header, resp.ContentLength)
	}
	buf := make([]byte, len("data: one\n\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data: one\n\n" {
		t.Fatalf("first event %q, %v", buf, err)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: two\n\n" {
		t.Errorf("rest %q, %v", rest, err)
	}
	if err := <-handlerDone; err != nil {
		t.Errorf("handler context ended early: %v", err)
	}
	resp.Body.Close()
}

func TestTransport_ClosingTheBodyCancelsTheHandler(t *testing.T) {
	ended := make(chan struct{})
	tr := &Transport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(ended)
	})}
	req, _ := http.NewRequest(http.MethodGet, "http://any.invalid/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler still runs after Body.Close")
	}
}

func TestTransport_PanicsAndPlainHandlers(t *testing.T) {
	panicky := &Transport{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })}
	req, _ := http.NewRequest(http.MethodGet, "http://any.invalid/x", nil)
	if _, err := panicky.RoundTrip(req); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("aborting handler: %v", err)
	}
	plain := &Transport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(append([]byte(r.Method+" "+r.RequestURI+" "), b...))
	})}
	req, _ = http.NewRequest(http.MethodPut, "http://any.invalid/a/b?c=d", strings.NewReader("body"))
	resp, err := plain.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "PUT /a/b?c=d body" || resp.ContentLength != int64(len(b)) || resp.StatusCode != 200 {
		t.Errorf("got %q, length %d, status %d", b, resp.ContentLength, resp.StatusCode)
	}
}

func TestTransport_ResetAfterCloseOfTheServer(t *testing.T) {
	srv, err := NewServer(Provider{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.BaseURL("p")+"/chat/completions", strings.NewReader(chatBody("m", false)))
	if _, err := srv.Transport().RoundTrip(req); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("request to a closed server: %v", err)
	}
}
