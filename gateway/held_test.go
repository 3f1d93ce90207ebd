package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
)

// heldUpstream is an OpenAI- and Anthropic-compatible upstream whose
// streams, once the request's body is read, send a few chunks a few
// milliseconds apart, then stay open, silent, until the test ends: a
// stream waiting for its next token.
type heldUpstream struct {
	*httptest.Server
	release chan struct{}
	flowed  sync.WaitGroup // Done once a stream sent its chunks
}

// newHeldUpstream starts a heldUpstream whose streams send chunks content
// chunks (after Anthropic's message_start and content_block_start).
func newHeldUpstream(t *testing.T, chunks int) *heldUpstream {
	u := &heldUpstream{release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			t.Errorf("upstream: reading the request: %v", err)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		anthropic := strings.HasSuffix(r.URL.Path, "/messages")
		if anthropic {
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		}
		for i := range chunks {
			if anthropic {
				fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word %d \"}}\n\n", i)
			} else {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word %d \"},\"finish_reason\":null}]}\n\n", i)
			}
			w.(http.Flusher).Flush()
			if i < chunks-1 {
				time.Sleep(3 * time.Millisecond)
			}
		}
		u.flowed.Done()
		select {
		case <-u.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(u.release)
		u.Close()
	})
	return u
}

// newHeldGateway returns a gateway whose route held goes to up/m in
// dialect (openai or anthropic), shut down when the test ends.
func newHeldGateway(t *testing.T, up *heldUpstream, dialect string) *gateway.Server {
	t.Helper()
	base := up.URL + "/v1"
	if dialect == "anthropic" {
		base = up.URL
	}
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  up: {dialect: `+dialect+`, base_url: `+base+`, key_env: "", pool: local}
routes:
  held: {chain: [up/m]}
`))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{File: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gw.Shutdown(ctx) //nolint:errcheck // the streams were closed
	})
	return gw
}
