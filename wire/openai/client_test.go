package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

const testKey = "sk-secret-test"

var testReq = &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}}

// newServer starts a loopback server running h and returns a Client for it
// with testKey.
func newServer(t *testing.T, h http.HandlerFunc) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Client{BaseURL: srv.URL + "/v1/", APIKey: testKey, HTTPClient: srv.Client()}, srv
}

// writeJSON answers like OpenAI does: status, JSON content type, body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_5f3c1e0a9b")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// streamEvents writes the first n events of a fixture, flushing each (all
// of them when n < 0).
func streamEvents(w http.ResponseWriter, fix []byte, n int) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	wiretest.WriteEvents(w, wiretest.SplitEvents(fix, "\n\n"), n)
}

func TestClient_CompleteSendsOneWellFormedRequest(t *testing.T) {
	var calls atomic.Int32
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		want, _ := EncodeRequest(testReq, false)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
			t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
		case r.Header.Get("Authorization") != "Bearer "+testKey:
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		case r.Header.Get("Content-Type") != "application/json":
			t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
		case r.Header.Get("X-Title") != "detour-test":
			t.Errorf("X-Title = %q", r.Header.Get("X-Title"))
		case !bytes.Equal(body, want):
			t.Errorf("body = %s, want %s", body, want)
		}
		writeJSON(w, 200, completionJSON)
	})
	c.Header = http.Header{"X-Title": {"detour-test"}}
	got, err := c.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{ID: "chatcmpl-BcO1gPfCFAf86O5CyQ9CTeEyoc8KG", Model: "gpt-4o-2024-08-06",
		Message:      llm.Message{Role: llm.RoleAssistant, Content: "Hello! How can I help?"},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 19, OutputTokens: 6},
		ProviderRequestID: "req_5f3c1e0a9b"} // its x-request-id header
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestClient_NoAuthorizationHeaderWithoutKey(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if v, ok := r.Header["Authorization"]; ok {
			t.Errorf("Authorization sent: %q", v)
		}
		writeJSON(w, 200, completionJSON)
	})
	c.APIKey = ""
	if _, err := c.Complete(context.Background(), testReq); err != nil {
		t.Fatal(err)
	}
}

func TestClient_CompleteToolCalls(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, toolCallJSON) })
	got, err := c.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{{ID: "call_qOfTGgDrItLORNfC6VwUbyLL", Name: "get_weather", Arguments: `{"location":"Shanghai"}`}}
	if diff := cmp.Diff(want, got.Message.ToolCalls); diff != "" || got.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish %q, tool calls (-want +got):\n%s", got.FinishReason, diff)
	}
}

func TestClient_StreamWithUsageChunk(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"stream":true,"stream_options":{"include_usage":true}`)) {
			t.Errorf("body %s does not ask for a stream with usage", body)
		}
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		streamEvents(w, wiretest.Fixture(t, "text_usage.sse"), -1)
	})
	st, err := c.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := wiretest.Drain(t, st)
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	if diff := cmp.Diff(textChunks(), got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestClient_StreamErrorFrameMidway(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, wiretest.Fixture(t, "error_midstream.sse"), -1)
	})
	st, err := c.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := wiretest.Drain(t, st)
	if len(got) != 3 {
		t.Errorf("%d chunks before the error, want 3", len(got))
	}
	wiretest.WantStreamError(t, err, dialect)
}

func TestClient_StreamCutAfterTwoChunksIsTruncated(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, wiretest.Fixture(t, "text_usage.sse"), 2)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close() // no final chunk of the chunked encoding: a cut
	})
	st, err := c.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := wiretest.Drain(t, st)
	if len(got) != 2 {
		t.Errorf("%d chunks, want 2", len(got))
	}
	if !errors.Is(err, llm.ErrStreamTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		t.Fatalf("end = %v, want ErrStreamTruncated wrapping io.ErrUnexpectedEOF", err)
	}
}

// hangingServer answers after `before` is written (nil: no answer at all)
// and then hangs until the client goes away or the test ends.
func hangingServer(t *testing.T, before func(w http.ResponseWriter)) *Client {
	t.Helper()
	h, release := wiretest.Hanging(before)
	c, _ := newServer(t, h)
	t.Cleanup(release) // runs before the server's Close
	return c
}

func TestClient_ContextCancelAbortsHangingRequest(t *testing.T) {
	c := hangingServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, testReq)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v", d)
	}
}

func TestClient_ContextCancelAbortsStreamRead(t *testing.T) {
	c := hangingServer(t, func(w http.ResponseWriter) { streamEvents(w, wiretest.Fixture(t, "text_usage.sse"), 1) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.Stream(ctx, testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = st.Next()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestClient_CloseFromAnotherGoroutineAbortsStreamRead(t *testing.T) {
	c := hangingServer(t, func(w http.ResponseWriter) { streamEvents(w, wiretest.Fixture(t, "text_usage.sse"), 1) })
	st, err := c.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { st.Close() })
	if _, err := st.Next(); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("err = %v, want ErrStreamClosed", err)
	}
}

func TestClient_ContentFilter200(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, contentFilterJSON) })
	_, err := c.Complete(context.Background(), testReq)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Code != "content_filter" || pe.Type != "content_filter" || pe.Status != 200 {
		t.Fatalf("err = %#v, want a content_filter ProviderError", err)
	}
}

func TestClient_ErrorStatusIsProviderError(t *testing.T) {
	body := `{"error":{"message":"Rate limit reached for model llama-3.3-70b-versatile in organization org_01 service tier on_demand on tokens per day (TPD): Limit 100000, Used 99871, Requested 1043.","type":"tokens","code":"rate_limit_exceeded"}}`
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		writeJSON(w, http.StatusTooManyRequests, body)
	})
	for name, call := range map[string]func() error{
		"complete": func() error { _, err := c.Complete(context.Background(), testReq); return err },
		"stream":   func() error { _, err := c.Stream(context.Background(), testReq); return err },
	} {
		t.Run(name, func(t *testing.T) {
			var pe *llm.ProviderError
			if err := call(); !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *llm.ProviderError", err)
			}
			if pe.Status != 429 || pe.Header.Get("Retry-After") != "7" || string(pe.Body) != body || pe.Phase != llm.PhaseResponse {
				t.Errorf("ProviderError = %+v", pe)
			}
		})
	}
}

func TestClient_OneExchangeNoRetryNoRedirect(t *testing.T) {
	for _, status := range []int{500, 503, 307} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var calls atomic.Int32
			c, srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if status == 307 {
					http.Redirect(w, r, "/v1/elsewhere", status)
					return
				}
				writeJSON(w, status, `{"error":{"message":"boom","type":"server_error"}}`)
			})
			c.HTTPClient = nil // the package default: no redirects
			c.BaseURL = srv.URL + "/v1"
			_, err := c.Complete(context.Background(), testReq)
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != status {
				t.Fatalf("err = %v, want a %d ProviderError", err, status)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d requests, want exactly 1", n)
			}
		})
	}
}

func TestClient_KeyNeverInErrors(t *testing.T) {
	echo := `{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	tests := []struct {
		name string
		run  func(t *testing.T) error
	}{
		{"401 echoing the key", func(t *testing.T) error {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 401, echo) })
			_, err := c.Complete(context.Background(), testReq)
			return err
		}},
		{"200 error body echoing the key", func(t *testing.T) error {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, echo) })
			_, err := c.Complete(context.Background(), testReq)
			return err
		}},
		{"stream error frame echoing the key", func(t *testing.T) error {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamEvents(w, []byte("data: "+echo+"\n\n"), -1)
			})
			st, err := c.Stream(context.Background(), testReq)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.Next()
			return err
		}},
		{"connection refused, key in the URL", func(t *testing.T) error {
			srv := httptest.NewServer(http.NotFoundHandler())
			srv.Close()
			c := &Client{BaseURL: srv.URL + "/" + testKey + "/v1", APIKey: testKey}
			_, err := c.Complete(context.Background(), testReq)
			return err
		}},
		{"invalid base URL holding the key", func(t *testing.T) error {
			c := &Client{BaseURL: "http://[::1" + testKey, APIKey: testKey}
			_, err := c.Stream(context.Background(), testReq)
			return err
		}},
		{"cancelled", func(t *testing.T) error {
			c := hangingServer(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := c.Complete(ctx, testReq)
			return err
		}},
		{"truncated stream", func(t *testing.T) error {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamEvents(w, wiretest.Fixture(t, "text_usage.sse"), 2)
			})
			st, err := c.Stream(context.Background(), testReq)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = wiretest.Drain(t, st)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wiretest.WantKeyless(t, tt.run(t), testKey)
		})
	}
}
