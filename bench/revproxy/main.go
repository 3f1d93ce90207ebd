// Command revproxy is the floor of `make bench-gateway`: a plain
// httputil.ReverseProxy in front of one upstream, with a pooled transport
// (256 idle connections per host, as detour's own client keeps), and
// nothing else but full duplex (see run). Whatever a Go proxy costs on this machine, this one costs at least.
//
// Every request path is appended to -upstream, so with -upstream
// http://127.0.0.1:PORT/up a POST /v1/chat/completions reaches
// /up/v1/chat/completions. The first stdout line is the URL it listens on.
// It exits on SIGINT, SIGTERM or when its stdin closes (its parent died).
//
//	go run ./bench/revproxy -upstream http://127.0.0.1:41234/up
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	upstream := flag.String("upstream", "", "upstream root URL the request paths are appended to (required)")
	listen := flag.String("listen", "127.0.0.1:0", "loopback host:port to listen on (port 0 picks a free one)")
	flag.Parse()
	if err := run(*upstream, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "revproxy:", err)
		os.Exit(1)
	}
}

func run(upstream, listen string) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Scheme == "" || target.Host == "" {
		return fmt.Errorf("-upstream %q is not an absolute URL", upstream)
	}
	host, _, err := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: only a loopback address is allowed", listen)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 256
	tr.IdleConnTimeout = 90 * time.Second
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: tr,
		ErrorLog:  log.New(os.Stderr, "revproxy: ", 0),
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// Full duplex: without it the HTTP/1 server closes the inbound body
	// when the response headers go out, the transport's last read of that
	// body (the check that it ends where Content-Length says) fails, and
	// the transport drops the upstream connection mid-stream — about 3% of
	// streamed answers cut here (golang/go#40747).
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex() //nolint:errcheck // HTTP/1 always supports it
		rp.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	stdinClosed := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stdinClosed) }() //nolint:errcheck // EOF or error: the parent is gone
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-sigc:
	case <-stdinClosed:
	}
	return srv.Close()
}
