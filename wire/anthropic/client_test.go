package anthropic

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
	"github.com/detourhq/detour/wire/exchange"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

const testKey = "sk-ant-api03-secret-test"

var testReq = &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{
	{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "Say hello. Use only one word."}}}

// newServer starts a loopback server running h and returns a Client for it
// with testKey.
func newServer(t *testing.T, h http.HandlerFunc) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Client{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client()}, srv
}

// writeJSON answers as the API does: status, JSON content type, request-id,
// body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_011CXtrhKydjvSnjbWWZm6BB")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// streamEvents writes the first n events of a fixture, flushing each (all
// of them when n < 0), with the API's stream headers.
func streamEvents(w http.ResponseWriter, fix []byte, n int) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	wiretest.WriteEvents(w, wiretest.SplitEvents(fix, "\n\n"), n)
}

func TestClient_CompleteSendsOneWellFormedRequest(t *testing.T) {
	var calls atomic.Int32
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		want, _ := EncodeRequest(testReq, false)
		for _, check := range []struct{ name, got, want string }{
			{"method", r.Method, http.MethodPost},
			{"path", r.URL.Path, "/v1/messages"},
			{"x-api-key", r.Header.Get("X-Api-Key"), testKey},
			{"anthropic-version", r.Header.Get("Anthropic-Version"), "2023-06-01"},
			{"content-type", r.Header.Get("Content-Type"), "application/json"},
			{"accept", r.Header.Get("Accept"), "application/json"},
			{"anthropic-beta", r.Header.Get("Anthropic-Beta"), "token-efficient-tools-2025-02-19"},
			{"authorization", r.Header.Get("Authorization"), ""},
			{"body", string(body), string(want)},
		} {
			if check.got != check.want {
				t.Errorf("%s = %q, want %q", check.name, check.got, check.want)
			}
		}
		writeJSON(w, 200, haikuTextJSON)
	})
	c.Header = http.Header{"anthropic-beta": {"token-efficient-tools-2025-02-19"}}
	got, err := c.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{ID: "msg_016bat7yTjWZrtqaMMhR8rtg", Model: "claude-haiku-4-5-20251001",
		Message:      llm.Message{Role: llm.RoleAssistant, Content: "Hello."},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 15, OutputTokens: 5},
		ProviderRequestID: "req_011CXtrhKydjvSnjbWWZm6BB"} // its request-id header
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestClient_BaseURLVersionAndHeaderOverrides(t *testing.T) {
	tests := []struct {
		name, base, version, wantVersion string
		key                              string
		header                           http.Header
		wantKey                          []string
	}{
		{name: "trailing slash", base: "/", key: testKey, wantVersion: "2023-06-01", wantKey: []string{testKey}},
		{name: "trailing /v1", base: "/v1", key: testKey, wantVersion: "2023-06-01", wantKey: []string{testKey}},
		{name: "version set", base: "/v1/", version: "2026-10-21", wantVersion: "2026-10-21", key: testKey, wantKey: []string{testKey}},
		{name: "no key, no header", wantVersion: "2023-06-01"},
		{name: "header replaces key and version", key: testKey, wantVersion: "2099-01-01",
			header:  http.Header{"x-api-key": {"other-key-123"}, "Anthropic-Version": {"2099-01-01"}},
			wantKey: []string{"other-key-123"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/messages" {
					t.Errorf("path = %q", r.URL.Path)
				}
				if got := r.Header.Values("X-Api-Key"); !cmp.Equal(got, tt.wantKey) {
					t.Errorf("x-api-key = %q, want %q", got, tt.wantKey)
				}
				if got := r.Header.Get("Anthropic-Version"); got != tt.wantVersion {
					t.Errorf("anthropic-version = %q, want %q", got, tt.wantVersion)
				}
				writeJSON(w, 200, haikuTextJSON)
			})
			c.BaseURL, c.APIKey, c.Version, c.Header = srv.URL+tt.base, tt.key, tt.version, tt.header
			if _, err := c.Complete(context.Background(), testReq); err != nil {
				t.Fatal(err)
			}
		})
	}
	if got := endpoint(""); got != "https://api.anthropic.com/v1/messages" {
		t.Errorf("default endpoint = %q", got)
	}
}

func TestClient_CompleteToolUse(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, haikuToolJSON) })
	got, err := c.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{{ID: "toolu_013rHbV5NvhikKNLZxxcEw8T", Name: "square_root", Arguments: `{"number":132413}`}}
	if diff := cmp.Diff(want, got.Message.ToolCalls); diff != "" || got.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish %q, tool calls (-want +got):\n%s", got.FinishReason, diff)
	}
}

func TestClient_StreamTextToolUseAndUsage(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.HasSuffix(body, []byte(`,"stream":true}`)) {
			t.Errorf("body %s does not ask for a stream", body)
		}
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		streamEvents(w, wiretest.Fixture(t, "tool_use.sse"), -1)
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
	want := chunks("msg_019Q1hrJbZG26Fb9BQhrkHEr", "claude-sonnet-4-20250514",
		role, text("I"), text("'ll check the current weather in Paris for you."),
		llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather"}}},
		args(0, `{"locati`), args(0, `on": "P`), args(0, "ar"), args(0, `is"}`),
		finish(llm.FinishToolCalls, &llm.Usage{InputTokens: 377, OutputTokens: 65}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestClient_StreamSkipsPings(t *testing.T) {
	ping := []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var fix []byte
		for _, ev := range wiretest.SplitEvents(wiretest.Fixture(t, "haiku_text.sse"), "\n\n") {
			fix = append(append(fix, ping...), ev...)
		}
		streamEvents(w, fix, -1)
	})
	st, err := c.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := wiretest.Drain(t, st)
	if err != io.EOF || len(got) != 3 || got[1].Content != "Hello." {
		t.Fatalf("got %+v, %v; want role, \"Hello.\", finish, then io.EOF", got, err)
	}
}

func TestClient_StreamErrorEventMidway(t *testing.T) {
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
	if pe := wiretest.WantStreamError(t, err, dialect); pe.Type != "overloaded_error" || pe.Header.Get("Content-Type") == "" {
		t.Errorf("ProviderError = %+v, want overloaded_error with the response header", pe)
	}
}

func TestClient_StreamCutBeforeMessageStopIsTruncated(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		// Everything up to and including message_delta, then a cut.
		streamEvents(w, wiretest.Fixture(t, "text.sse"), 8)
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
	if diff := cmp.Diff(textChunks(), got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
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
	_, err := c.Complete(ctx, testReq)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestClient_ContextCancelAbortsStreamRead(t *testing.T) {
	c := hangingServer(t, func(w http.ResponseWriter) { streamEvents(w, wiretest.Fixture(t, "text.sse"), 1) })
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
	if _, err = st.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestClient_CloseFromAnotherGoroutineAbortsStreamRead(t *testing.T) {
	c := hangingServer(t, func(w http.ResponseWriter) { streamEvents(w, wiretest.Fixture(t, "text.sse"), 1) })
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

func TestClient_Refusal200(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, refusalJSON) })
	_, err := c.Complete(context.Background(), testReq)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Code != "refusal" || pe.Type != "refusal" || pe.Status != 200 || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %#v, want a refusal ProviderError", err)
	}
}

func TestClient_ErrorStatusIsProviderError(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "20")
		w.Header().Set("Anthropic-Ratelimit-Input-Tokens-Remaining", "0")
		w.Header().Set("Anthropic-Ratelimit-Input-Tokens-Reset", "2025-08-21T12:41:19Z")
		writeJSON(w, http.StatusTooManyRequests, body429)
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
			if pe.Status != 429 || pe.Type != "rate_limit_error" || pe.Header.Get("Retry-After") != "20" ||
				pe.Header.Get("Anthropic-Ratelimit-Input-Tokens-Reset") != "2025-08-21T12:41:19Z" ||
				string(pe.Body) != body429 || pe.Phase != llm.PhaseResponse {
				t.Errorf("ProviderError = %+v", pe)
			}
		})
	}
}

func TestClient_OneExchangeNoRetryNoRedirect(t *testing.T) {
	for _, status := range []int{529, 500, 307} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var calls atomic.Int32
			c, srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if status == 307 {
					http.Redirect(w, r, "/v1/elsewhere", status)
					return
				}
				w.Header().Set("X-Should-Retry", "true")
				writeJSON(w, status, body529)
			})
			c.HTTPClient = nil // the package default: no redirects
			c.BaseURL = srv.URL
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

func TestClient_EncodeErrorSendsNothing(t *testing.T) {
	var calls atomic.Int32
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	bad := &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f", Arguments: "{"}}}}}
	if _, err := c.Complete(context.Background(), bad); err == nil {
		t.Fatal("want an encoding error")
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func TestClient_KeyNeverInErrors(t *testing.T) {
	echo := `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: ` + testKey + `"},"request_id":"req_1"}`
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
		{"stream error event echoing the key", func(t *testing.T) error {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamEvents(w, []byte("event: error\ndata: "+echo+"\n\n"), -1)
			})
			st, err := c.Stream(context.Background(), testReq)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.Next()
			return err
		}},
		{"malformed stream event echoing the key", func(t *testing.T) error {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamEvents(w, []byte("event: message_start\ndata: {"+testKey+"\n\nevent: ping\ndata: {}\n\n"), -1)
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
			c := &Client{BaseURL: srv.URL + "/" + testKey, APIKey: testKey}
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
				streamEvents(w, wiretest.Fixture(t, "text.sse"), 2)
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

func TestRedact_ShortKeysAreLeftAlone(t *testing.T) {
	err := errors.New("model ollama not found")
	if got := exchange.Redact(err, "ollama"); got != err {
		t.Errorf("redact with a short key = %v, want the error unchanged", got)
	}
}
