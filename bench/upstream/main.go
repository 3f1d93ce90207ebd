// Command upstream is the fake LLM provider of `make bench-gateway`: a
// simulate server on a free loopback port, in a process of its own so that
// its CPU time and memory stay apart from the system under test.
//
// It hosts five providers: "up" (OpenAI dialect), which answers every
// request (any model name); "upa", the same in Anthropic's dialect;
// "fail" (OpenAI dialect), which answers every request with a 429 rate
// limit whose Retry-After is -fail-retry-after; "slow429", the same
// with a Retry-After of -tail-retry-after (1 s: a wait detour would obey);
// and "slow" (OpenAI dialect), which answers every request in -slow-pieces
// content chunks -slow-gap apart (200 x 50 ms: a 10 s stream, as an LLM
// writes). The first stdout line is the server's root URL; providers live
// under /up/v1, /upa (the client appends /v1/messages), /fail/v1 and so on.
//
// Two control endpoints serve the harness:
//
//	GET /_bench/stats   JSON: requests per provider since the last reset,
//	                    and the arrival times (Unix ns) at "fail"
//	POST /_bench/reset  forget the requests seen so far
//
// It exits on SIGINT, SIGTERM or when its stdin closes (its parent died).
//
//	go run ./bench/upstream -fail-retry-after 200ms
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/detourhq/detour/simulate"
)

// Stats is the body of GET /_bench/stats.
type Stats struct {
	// Requests counts the chat requests each provider received since the
	// last reset.
	Requests map[string]int `json:"requests"`
	// FailArrivals are the arrival times at the failing provider, Unix ns,
	// in arrival order.
	FailArrivals []int64 `json:"fail_arrivals"`
}

func main() {
	retryAfter := flag.Duration("fail-retry-after", 200*time.Millisecond, "Retry-After of the failing provider's 429s")
	tailRetryAfter := flag.Duration("tail-retry-after", time.Second, "Retry-After of the slow429 provider's 429s")
	firstToken := flag.Duration("latency", 0, "time before the headers of each answer (0: at once)")
	perChunk := flag.Duration("per-chunk", 0, "time between streamed chunks (0: at once)")
	slowPieces := flag.Int("slow-pieces", 200, "content chunks of each answer of the slow provider")
	slowGap := flag.Duration("slow-gap", 50*time.Millisecond, "time between the streamed chunks of the slow provider")
	flag.Parse()
	slow := simulate.Fault{Kind: simulate.OK, Pieces: *slowPieces, Gap: *slowGap}
	if err := run(*retryAfter, *tailRetryAfter, simulate.Latency{FirstToken: *firstToken, PerChunk: *perChunk}, slow); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func run(retryAfter, tailRetryAfter time.Duration, lat simulate.Latency, slow simulate.Fault) error {
	sim, err := simulate.NewServer(
		simulate.Provider{Name: "up", Latency: lat},
		simulate.Provider{Name: "upa", Dialect: simulate.DialectAnthropic, Latency: lat},
		simulate.Provider{Name: "fail",
			Profile: simulate.Always(simulate.Fault{Kind: simulate.RateLimit, RetryAfter: retryAfter})},
		simulate.Provider{Name: "slow429",
			Profile: simulate.Always(simulate.Fault{Kind: simulate.RateLimit, RetryAfter: tailRetryAfter})},
		simulate.Provider{Name: "slow", Profile: simulate.Always(slow)},
	)
	if err != nil {
		return err
	}
	defer sim.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_bench/stats", func(w http.ResponseWriter, _ *http.Request) {
		st := Stats{Requests: map[string]int{}}
		for _, r := range sim.Stats().Records {
			st.Requests[r.Provider]++
			if r.Provider == "fail" {
				st.FailArrivals = append(st.FailArrivals, r.At.UnixNano())
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st) //nolint:errcheck // the harness sees a short body
	})
	mux.HandleFunc("POST /_bench/reset", func(w http.ResponseWriter, _ *http.Request) {
		sim.ClearStats()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", sim)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	stdinClosed := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stdinClosed) }() //nolint:errcheck // EOF or error: the parent is gone
	select {
	case err := <-errc:
		return err
	case <-sigc:
	case <-stdinClosed:
	}
	return srv.Close()
}
