package gemini

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// textAnswer is a :generateContent answer, verbatim: maruel/genai
// providers/gemini/testdata/TestClient/Scoreboard/gemini-2.5-flash-lite/GenSync-Tools-SquareRoot-2.yaml.
const textAnswer = `{
  "candidates": [
    {
      "content": {
        "parts": [
          {
            "text": "363.89"
          }
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 157,
    "candidatesTokenCount": 6,
    "totalTokenCount": 163,
    "promptTokensDetails": [
      {
        "modality": "TEXT",
        "tokenCount": 157
      }
    ]
  },
  "modelVersion": "gemini-2.5-flash-lite",
  "responseId": "7QaFaPmxAtSL-sAP_oGJsQs"
}
`

// callAnswer is parallel_calls.sse as a :generateContent answer, in
// Gemini's pretty layout, with a thought part and a text part before the
// calls (RECONSTRUCTED).
const callAnswer = `{
  "candidates": [
    {
      "content": {
        "parts": [
          {
            "text": "The user wants a verdict.",
            "thought": true
          },
          {
            "text": "Asking the tool."
          },
          {
            "functionCall": {
              "name": "best_country",
              "args": {
                "country": "Canada"
              }
            },
            "thoughtSignature": "Ci8BDDnWx3Ks3sk6"
          },
          {
            "functionCall": {
              "name": "best_country",
              "args": {
                "country": "USA"
              }
            }
          }
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 115,
    "candidatesTokenCount": 30,
    "totalTokenCount": 180,
    "thoughtsTokenCount": 35
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "pteDaNL2EKyUjMcPo8HzyAo"
}
`

// apiKeyInvalid is a 400 of the streaming endpoint, verbatim: maruel/genai
// providers/gemini/testdata/TestClient/errors/bad_apiKey/GenStream.yaml
// (Content-Type text/event-stream, 581 bytes).
const apiKeyInvalid = `{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {
          "service": "generativelanguage.googleapis.com"
        }
      },
      {
        "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
        "locale": "en-US",
        "message": "API key not valid. Please pass a valid API key."
      }
    ]
  }
}
`

// jsonResponse is a response as Gemini sends a JSON answer.
func jsonResponse(status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}
}

func TestDecodeResponse_Answers(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *llm.Response
	}{
		{
			name: "text",
			body: textAnswer,
			want: &llm.Response{ID: "7QaFaPmxAtSL-sAP_oGJsQs", Model: "gemini-2.5-flash-lite",
				Message:      llm.Message{Role: llm.RoleAssistant, Content: "363.89"},
				FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 157, OutputTokens: 6},
				ProviderRequestID: "7QaFaPmxAtSL-sAP_oGJsQs"},
		},
		{
			name: "function calls without ids, thoughts left out",
			body: callAnswer,
			want: &llm.Response{ID: "pteDaNL2EKyUjMcPo8HzyAo", Model: "gemini-2.5-flash",
				Message: llm.Message{Role: llm.RoleAssistant, Content: "Asking the tool.", ToolCalls: []llm.ToolCall{
					{ID: "call_0", Name: "best_country", Arguments: `{"country":"Canada"}`},
					{ID: "call_1", Name: "best_country", Arguments: `{"country":"USA"}`},
				}},
				FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 115, OutputTokens: 65},
				ProviderRequestID: "pteDaNL2EKyUjMcPo8HzyAo"},
		},
		{
			name: "function call with id and no args",
			body: `{"candidates": [{"content": {"parts": [{"functionCall": {"id": "fc_8a1d", "name": "now"}}],"role": "model"},"finishReason": "STOP"}]}`,
			want: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "fc_8a1d", Name: "now", Arguments: "{}"}}}, FinishReason: llm.FinishToolCalls},
		},
		{
			name: "max tokens, candidate index 0 chosen",
			body: `{"candidates": [{"content": {"parts": [{"text": "B"}]},"finishReason": "STOP","index": 1},{"content": {"parts": [{"text": "A"}]},"finishReason": "MAX_TOKENS","index": 0}],"usageMetadata": {"promptTokenCount": 5,"toolUsePromptTokenCount": 2,"candidatesTokenCount": 1}}`,
			want: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "A"}, FinishReason: llm.FinishLength,
				Usage: llm.Usage{InputTokens: 7, OutputTokens: 1}},
		},
		{
			name: "other finish reasons kept in lower case",
			body: `{"candidates": [{"content": {"parts": [{"text": "?"}]},"finishReason": "LANGUAGE","index": 0}]}`,
			want: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "?"}, FinishReason: "language"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeResponse(jsonResponse(200, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeResponse_Failures(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		typ, code  string
		msg        string
		malformed  bool
		wantStatus int
	}{
		{
			// Sample gemini-200-finish-reason-safety (CherryHQ/cherry-studio#664).
			name: "finish reason SAFETY", status: 200,
			body: `{"candidates": [{"finishReason": "SAFETY","safetyRatings": [{"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT","probability": "HIGH","blocked": true}]}],"usageMetadata": {"promptTokenCount": 752,"candidatesTokenCount": 16,"totalTokenCount": 768}}`,
			typ:  "safety", code: "SAFETY", msg: "answer blocked: SAFETY",
		},
		{
			name: "prompt blocked", status: 200,
			body: `{"promptFeedback": {"blockReason": "OTHER"},"usageMetadata": {"promptTokenCount": 12}}`,
			typ:  "safety", code: "OTHER", msg: "prompt blocked: OTHER",
		},
		{
			name: "recitation", status: 200,
			body: `{"candidates": [{"content": {"parts": [{"text": "It was the best"}]},"finishReason": "RECITATION","index": 0}]}`,
			typ:  "safety", code: "RECITATION",
		},
		{
			name: "malformed function call", status: 200,
			body: `{"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL","finishMessage": "Malformed function call: call:x{"}]}`,
			code: "MALFORMED_FUNCTION_CALL", msg: "answer failed: MALFORMED_FUNCTION_CALL: Malformed function call: call:x{",
		},
		{name: "no candidates", status: 200, body: `{"usageMetadata": {"promptTokenCount": 4}}`, msg: "answer has no candidates"},
		{
			name: "error object on a 200", status: 200,
			body: `{"error": {"code": 500,"message": "An internal error has occurred.","status": "INTERNAL"}}`,
			typ:  "INTERNAL", code: "500",
		},
		{
			// anon-kode#114: an array of Status objects.
			name: "error array on a 200", status: 200,
			body: `[{"error": {"code": 503,"message": "The model is overloaded.","status": "UNAVAILABLE"}}]`,
			typ:  "UNAVAILABLE", code: "503",
		},
		{name: "not JSON", status: 200, body: `{"candidates": [`, malformed: true},
		{name: "error status", status: 400, body: apiKeyInvalid, typ: "INVALID_ARGUMENT", code: "API_KEY_INVALID", wantStatus: 400},
		{name: "HTML 502", status: 502, body: "<html><head><title>502 Bad Gateway</title></head></html>", msg: "502 Bad Gateway", wantStatus: 502},
		{name: "empty 503", status: 503, body: "", msg: "service unavailable", wantStatus: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeResponse(jsonResponse(tt.status, tt.body))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *llm.ProviderError", err)
			}
			if got := errors.Is(err, ErrMalformed); got != tt.malformed {
				t.Errorf("errors.Is(ErrMalformed) = %v, want %v", got, tt.malformed)
			}
			want := tt.wantStatus
			if want == 0 {
				want = 200
			}
			if pe.Status != want || pe.Phase != llm.PhaseResponse || pe.Dialect != "gemini" || pe.Header == nil {
				t.Errorf("status %d phase %q dialect %q header %v", pe.Status, pe.Phase, pe.Dialect, pe.Header)
			}
			if pe.Type != tt.typ || pe.Code != tt.code {
				t.Errorf("Type, Code = %q, %q; want %q, %q", pe.Type, pe.Code, tt.typ, tt.code)
			}
			if tt.msg != "" && pe.Message != tt.msg {
				t.Errorf("Message = %q, want %q", pe.Message, tt.msg)
			}
			if tt.body != "" && !bytes.Equal(pe.Body, []byte(tt.body)) {
				t.Errorf("Body = %q", pe.Body)
			}
		})
	}
}

// TestDecodeResponse_CapturedStream: a captured stream reads as the answer
// it carried, and like the same answer sent whole.
func TestDecodeResponse_CapturedStream(t *testing.T) {
	got, err := DecodeResponse(sseResponse(bytes.NewReader(wiretest.Fixture(t, "parallel_calls.sse"))))
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{ID: "pteDaNL2EKyUjMcPo8HzyAo", Model: "gemini-2.5-flash-lite",
		Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "call_0", Name: "best_country", Arguments: `{"country":"Canada"}`},
			{ID: "call_1", Name: "best_country", Arguments: `{"country":"USA"}`},
		}},
		FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 115, OutputTokens: 30}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}

	// No Content-Type: sniffed.
	resp := sseResponse(bytes.NewReader(wiretest.Fixture(t, "thinking_text.sse")))
	resp.Header.Del("Content-Type")
	got, err = DecodeResponse(resp)
	if err != nil || got.Message.Content != "Hello." || got.Usage != (llm.Usage{InputTokens: 9, OutputTokens: 29}) {
		t.Fatalf("DecodeResponse = %+v, %v", got, err)
	}

	_, err = DecodeResponse(sseResponse(bytes.NewReader(wiretest.Fixture(t, "cut_before_finish.sse"))))
	if !errors.Is(err, llm.ErrStreamTruncated) {
		t.Fatalf("cut stream: err = %v, want ErrStreamTruncated", err)
	}
}

func TestDecodeResponse_ClosesBody(t *testing.T) {
	for _, status := range []int{200, 429} {
		body := &closeCounter{Reader: strings.NewReader(textAnswer)}
		resp := jsonResponse(status, "")
		resp.Body = body
		DecodeResponse(resp)
		if body.n != 1 {
			t.Errorf("status %d: body closed %d times, want 1", status, body.n)
		}
	}
}

type closeCounter struct {
	io.Reader
	n int
}

func (c *closeCounter) Close() error { c.n++; return nil }
