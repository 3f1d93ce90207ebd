package prom_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/detourhq/detour/prom"
)

func TestHandler_ServesTextFormatOnGetAndHeadOnly(t *testing.T) {
	reg := prom.NewRegistry()
	reg.Counter("c_total", "C.").With().Inc()
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "# HELP c_total C.\n# TYPE c_total counter\nc_total 1\n"
	if resp.StatusCode != 200 || string(body) != want {
		t.Errorf("GET: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}

	resp, err = http.Head(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != strconv.Itoa(len(want)) ||
		resp.Header.Get("Content-Type") != prom.ContentType {
		t.Errorf("HEAD: %d, headers %v", resp.StatusCode, resp.Header)
	}

	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q; want 405, GET, HEAD", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, io.ErrShortWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteTo_ReportsBytesAndTheWriteError(t *testing.T) {
	reg := prom.NewRegistry()
	reg.Gauge("a", "A.")
	reg.Gauge("b", "B.")
	full := text(t, reg)
	n, err := reg.WriteTo(&failWriter{n: len(full)})
	if n != int64(len(full)) || err != nil {
		t.Errorf("WriteTo: %d, %v; want %d, nil", n, err, len(full))
	}
	n, err = reg.WriteTo(&failWriter{n: 30})
	if n != 30 || err != io.ErrShortWrite {
		t.Errorf("WriteTo a failing writer: %d, %v; want 30, ErrShortWrite", n, err)
	}
}
