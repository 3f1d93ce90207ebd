package gemini

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// testKey looks like a Google API key (AIza + 35 characters).
const testKey = "AIzaSyD-test0key0not0real0abcdefghijk"

var testReq = &llm.Request{Model: "gemini-2.5-flash-lite", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}}

// newServer starts a loopback server running h and returns a Client for
// it with testKey.
func newServer(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Client{BaseURL: srv.URL + "/v1beta/", APIKey: testKey, HTTPClient: srv.Client()}
}

// writeJSON answers like Gemini does: status, JSON content type, body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Server", "scaffolding on HTTPServer2")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// streamEvents writes the first n events of a fixture, flushing each (all
// of them when n < 0), with Gemini's stream headers.
func streamEvents(w http.ResponseWriter, fix []byte, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	wiretest.WriteEvents(w, wiretest.SplitEvents(fix, "\r\n\r\n"), n)
}

// checkRequest checks what every request must look like.
func checkRequest(t *testing.T, r *http.Request, wantURI string) {
	t.Helper()
	body, _ := io.ReadAll(r.Body)
	want, _ := EncodeRequest(testReq)
	switch {
	case r.Method != http.MethodPost || r.RequestURI != wantURI:
		t.Errorf("request %s %s, want POST %s", r.Method, r.RequestURI, wantURI)
	case r.Header.Get("X-Goog-Api-Key") != testKey:
		t.Errorf("x-goog-api-key = %q", r.Header.Get("X-Goog-Api-Key"))
	case r.Header.Get("Authorization") != "":
		t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
	case strings.Contains(r.RequestURI, testKey) || strings.Contains(r.URL.RawQuery, "key="):
		t.Errorf("key in the URL %q", r.RequestURI)
	case r.Header.Get("Content-Type") != "application/json":
		t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
	case !bytes.Equal(body, want):
		t.Errorf("body = %s, want %s", body, want)
	}
}

func TestClient_CompletePlainAnswer(t *testing.T) {
	var calls atomic.Int32
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		checkRequest(t, r, "/v1beta/models/gemini-2.5-flash-lite:generateContent")
		if r.Header.Get("X-Title") != "detour-test" {
			t.Errorf("X-Title = %q", r.Header.Get("X-Title"))
		}
		writeJSON(w, 200, textAnswer)
	})
	c.Header = http.Header{"X-Title": {"detour-test"}}
	got, err := c.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{ID: "7QaFaPmxAtSL-sAP_oGJsQs", Model: "gemini-2.5-flash-lite",
		Message:      llm.Message{Role: llm.RoleAssistant, Content: "363.89"},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 157, OutputTokens: 6},
		ProviderRequestID: "7QaFaPmxAtSL-sAP_oGJsQs"} // no request-id header: its responseId
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestClient_ModelPrefixIsNotDoubled(t *testing.T) {
	for model, uri := range map[string]string{
		"models/gemini-2.5-flash":  "/v1beta/models/gemini-2.5-flash:generateContent",
		"gemini-2.5-flash":         "/v1beta/models/gemini-2.5-flash:generateContent",
		"tunedModels/my-model-x1":  "/v1beta/tunedModels/my-model-x1:generateContent",
		"bad model?":               "/v1beta/models/bad%20model%3F:generateContent",
		"gemini-2.5-flash-lite-01": "/v1beta/models/gemini-2.5-flash-lite-01:generateContent",
	} {
		t.Run(model, func(t *testing.T) {
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.RequestURI != uri {
					t.Errorf("RequestURI = %q, want %q", r.RequestURI, uri)
				}
				writeJSON(w, 200, textAnswer)
			})
			req := testReq.Clone()
			req.Model = model
			if _, err := c.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		})
	}
	c := &Client{}
	if _, err := c.Complete(context.Background(), &llm.Request{}); !errors.Is(err, ErrNoModel) {
		t.Errorf("no model: err = %v, want ErrNoModel", err)
	}
}

func TestClient_CompleteFunctionCall(t *testing.T) {
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, callAnswer) })
	got, err := c.Complete(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_0", Name: "best_country", Arguments: `{"country":"Canada"}`},
		{ID: "call_1", Name: "best_country", Arguments: `{"country":"USA"}`},
	}
	if diff := cmp.Diff(want, got.Message.ToolCalls); diff != "" || got.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish %q, tool calls (-want +got):\n%s", got.FinishReason, diff)
	}
}

func TestClient_StreamTextFunctionCallAndUsage(t *testing.T) {
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		checkRequest(t, r, "/v1beta/models/gemini-2.5-flash-lite:streamGenerateContent?alt=sse")
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		streamEvents(w, wiretest.Fixture(t, "text_then_call.sse"), -1)
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
	ch := withID("Xq3aaN2fB8Wz7M8Pq6KxgQk", "gemini-2.5-flash")
	want := []llm.Chunk{
		ch(llm.Chunk{Role: llm.RoleAssistant, Content: "I'll look up"}),
		ch(llm.Chunk{Content: " the weather in Paris."}),
		ch(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_0", Name: "get_weather",
			Arguments: `{"location":"Paris","unit":"celsius"}`}}, FinishReason: llm.FinishToolCalls, Usage: usage(61, 24)}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestClient_SafetyBlockedPrompt(t *testing.T) {
	t.Run("complete", func(t *testing.T) {
		c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{
  "promptFeedback": {
    "blockReason": "PROHIBITED_CONTENT"
  },
  "usageMetadata": {
    "promptTokenCount": 12,
    "totalTokenCount": 12
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "kPZdaMLrN9W7_uMP0cSZ6Qk"
}
`)
		})
		_, err := c.Complete(context.Background(), testReq)
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Type != "safety" || pe.Code != "PROHIBITED_CONTENT" || pe.Status != 200 || pe.Phase != llm.PhaseResponse {
			t.Fatalf("err = %#v, want a safety ProviderError", err)
		}
	})
	t.Run("stream", func(t *testing.T) {
		c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			streamEvents(w, wiretest.Fixture(t, "prompt_blocked.sse"), -1)
		})
		st, err := c.Stream(context.Background(), testReq)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		got, err := wiretest.Drain(t, st)
		if len(got) != 0 {
			t.Errorf("chunks before the block: %+v", got)
		}
		if pe := wiretest.WantStreamError(t, err, dialect); pe.Type != "safety" {
			t.Errorf("Type = %q", pe.Type)
		}
	})
}

func TestClient_StreamCutBeforeFinishIsTruncated(t *testing.T) {
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, wiretest.Fixture(t, "text_then_call.sse"), 2)
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

func TestClient_StreamCleanEndBeforeFinishIsTruncated(t *testing.T) {
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, wiretest.Fixture(t, "cut_before_finish.sse"), -1)
	})
	st, err := c.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := wiretest.Drain(t, st); !errors.Is(err, llm.ErrStreamTruncated) {
		t.Fatalf("end = %v, want ErrStreamTruncated", err)
	}
}

func TestClient_StreamErrorChunkMidway(t *testing.T) {
	for _, file := range []string{"error_midstream.sse", "bare_error_midstream.sse"} {
		t.Run(file, func(t *testing.T) {
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) { streamEvents(w, wiretest.Fixture(t, file), -1) })
			st, err := c.Stream(context.Background(), testReq)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, err := wiretest.Drain(t, st)
			if len(got) == 0 {
				t.Error("no chunk before the error")
			}
			if pe := wiretest.WantStreamError(t, err, dialect); pe.Type != "UNAVAILABLE" {
				t.Errorf("Type = %q", pe.Type)
			}
		})
	}
}

// TestClient_KeyNeverInURLOrErrors: the key goes in a header only, and an
// error that echoes it (a body, a message, a URL) has it removed.
func TestClient_KeyNeverInURLOrErrors(t *testing.T) {
	echo := `{"error":{"code":400,"message":"API key not valid: ` + testKey + `","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.RequestURI, testKey) {
			t.Errorf("key in the URL %q", r.RequestURI)
		}
		if r.Header.Get("X-Goog-Api-Key") != testKey {
			t.Errorf("x-goog-api-key = %q", r.Header.Get("X-Goog-Api-Key"))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(400)
		io.WriteString(w, echo)
	})
	for name, call := range map[string]func() error{
		"complete": func() error { _, err := c.Complete(context.Background(), testReq); return err },
		"stream":   func() error { _, err := c.Stream(context.Background(), testReq); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Code != "API_KEY_INVALID" || pe.Status != 400 {
				t.Fatalf("err = %v, want the 400", err)
			}
			if strings.Contains(err.Error(), testKey) || bytes.Contains(pe.Body, []byte(testKey)) || strings.Contains(pe.Message, testKey) {
				t.Errorf("key leaked: %v / %s", err, pe.Body)
			}
		})
	}

	// A transport error names the URL: it never holds the key.
	dead := &Client{BaseURL: "http://127.0.0.1:1/v1beta", APIKey: testKey}
	_, err := dead.Complete(context.Background(), testReq)
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("transport error %v", err)
	}

	// A stream error frame that echoes the key.
	c2 := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, []byte("data: "+echo+"\r\n\r\n"), -1)
	})
	st, err := c2.Stream(context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := wiretest.Drain(t, st); err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("stream error %v", err)
	} else if pe := wiretest.WantStreamError(t, err, dialect); bytes.Contains(pe.Body, []byte(testKey)) {
		t.Errorf("key in the frame's body %s", pe.Body)
	}
}

func TestClient_ShortKeysAreNotRedacted(t *testing.T) {
	if err := exchange.Redact(errors.New("the key k is fine"), "k"); err.Error() != "the key k is fine" {
		t.Errorf("redact = %v", err)
	}
}

func TestClient_NoKeyHeaderWithoutKey(t *testing.T) {
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if v, ok := r.Header["X-Goog-Api-Key"]; ok {
			t.Errorf("x-goog-api-key sent: %q", v)
		}
		writeJSON(w, 200, textAnswer)
	})
	c.APIKey = ""
	if _, err := c.Complete(context.Background(), testReq); err != nil {
		t.Fatal(err)
	}
}

func TestClient_ErrorStatusIsProviderError(t *testing.T) {
	// Sample gemini-404-model-not-found (maruel/genai recording).
	body := "{\n  \"error\": {\n    \"code\": 404,\n    \"message\": \"models/gemini-exp-1206 is not found for API version v1beta, or is not supported for generateContent. Call ModelService.ListModels to see the list of available models and their supported methods.\",\n    \"status\": \"NOT_FOUND\"\n  }\n}\n"
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusNotFound, body) })
	var pe *llm.ProviderError
	_, err := c.Complete(context.Background(), testReq)
	if !errors.As(err, &pe) || pe.Status != 404 || pe.Type != "NOT_FOUND" || string(pe.Body) != body ||
		pe.Header.Get("Server") == "" || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %#v", err)
	}
}

// hangingServer answers after `before` is written (nil: no answer at all)
// and then hangs until the client goes away or the test ends.
func hangingServer(t *testing.T, before func(w http.ResponseWriter)) *Client {
	t.Helper()
	h, release := wiretest.Hanging(before)
	c := newServer(t, h)
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
	c := hangingServer(t, func(w http.ResponseWriter) { streamEvents(w, wiretest.Fixture(t, "text_then_call.sse"), 1) })
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
	c := hangingServer(t, func(w http.ResponseWriter) { streamEvents(w, wiretest.Fixture(t, "text_then_call.sse"), 1) })
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
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestClient_NeverFollowsRedirects(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	c := &Client{BaseURL: srv.URL, APIKey: testKey} // the package default client
	_, err := c.Complete(context.Background(), testReq)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != http.StatusTemporaryRedirect {
		t.Fatalf("err = %v, want the 307 as a ProviderError", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
