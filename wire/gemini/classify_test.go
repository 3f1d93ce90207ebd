package gemini_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/gemini"
)

// now is the clock of these tests: 2025-08-21 05:40:59 in Los Angeles
// (PDT), so the next daily reset is 2025-08-22 00:00 PDT.
var (
	now        = time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)
	dailyReset = time.Date(2025, 8, 22, 7, 0, 0, 0, time.UTC)
)

// classifyCase is one Gemini answer and what classify must read in it
// once this package has turned it into an error.
type classifyCase struct {
	name   string
	status int
	body   string
	stream bool // body is a :streamGenerateContent?alt=sse body on a 200

	kind       classify.Kind
	code       string        // Failure.Code; "" skips the check
	retryAfter time.Duration // checked always
	until      time.Time     // zero: now+retryAfter when retryAfter > 0, else zero
}

// failure is the error a Client returns for c.
func (c classifyCase) failure(t *testing.T) error {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	if c.stream {
		h.Set("Content-Type", "text/event-stream")
	}
	resp := &http.Response{StatusCode: c.status, Header: h, Body: io.NopCloser(strings.NewReader(c.body))}
	if !c.stream {
		r, err := gemini.DecodeResponse(resp)
		if err == nil {
			t.Fatalf("DecodeResponse = %+v, want an error", r)
		}
		return err
	}
	st, err := gemini.DecodeStream(resp)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		if _, err := st.Next(); err != nil {
			if err == io.EOF {
				t.Fatal("stream ended cleanly, want an error")
			}
			return err
		}
	}
}

func runClassify(t *testing.T, tests []classifyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.failure(t)
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Dialect != "gemini" {
				t.Fatalf("err = %v, want a gemini *llm.ProviderError", err)
			}
			f := classify.Classify(err, now)
			if f.Kind != tt.kind {
				t.Errorf("Kind = %s, want %s (reason %q)", f.Kind, tt.kind, f.Reason)
			}
			if tt.code != "" && f.Code != tt.code {
				t.Errorf("Code = %q, want %q", f.Code, tt.code)
			}
			if f.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", f.RetryAfter, tt.retryAfter)
			}
			until := tt.until
			if until.IsZero() && tt.retryAfter > 0 {
				until = now.Add(tt.retryAfter)
			}
			if !f.Until.Equal(until) {
				t.Errorf("Until = %v, want %v", f.Until, until)
			}
			if f.Reason == "" || len([]rune(f.Reason)) > classify.MaxReason {
				t.Errorf("Reason = %q", f.Reason)
			}
		})
	}
}

func TestClassify_Transient(t *testing.T) {
	runClassify(t, []classifyCase{
		{
			// Per-minute quota with RetryInfo: quotaId and retryDelay "37s" from
			// RooCodeInc/Roo-Code#3883 (PROVIDERS.md Gemini); the rest of the
			// layout RECONSTRUCTED after sample gemini-429-limit-zero.
			name: "429PerMinuteRetryInfo", status: 429,
			body: `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
          {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            "quotaDimensions": {
              "location": "global",
              "model": "gemini-2.0-flash"
            },
            "quotaValue": "15"
          }
        ]
      },
      {
        "@type": "type.googleapis.com/google.rpc.Help",
        "links": [
          {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"
          }
        ]
      },
      {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "37s"
      }
    ]
  }
}
`,
			kind: classify.Transient, code: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", retryAfter: 37 * time.Second,
		},
		{
			// Sample gemini-429-no-details (googleapis/python-genai#1427): nothing says per day.
			name: "429NoDetails", status: 429,
			body: "{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\",\n    \"status\": \"RESOURCE_EXHAUSTED\",\n    \"details\": [\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.Help\",\n        \"links\": [\n          {\n            \"description\": \"Learn more about Gemini API quotas\",\n            \"url\": \"https://ai.google.dev/gemini-api/docs/rate-limits\"\n          }\n        ]\n      }\n    ]\n  }\n}\n",
			kind: classify.Transient, code: "RESOURCE_EXHAUSTED",
		},
		{
			// Sample gemini-503-model-overloaded (google-gemini/gemini-cli#7392).
			name: "503Overloaded", status: 503,
			body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			kind: classify.Transient, code: "UNAVAILABLE",
		},
		{
			// Message from PROVIDERS.md Gemini (500 INTERNAL); envelope RECONSTRUCTED.
			name: "500Internal", status: 500,
			body: `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`,
			kind: classify.Transient, code: "INTERNAL",
		},
		{
			// The same 503 as a chunk of a 200 stream (fixture error_midstream.sse).
			name: "StreamErrorChunk", status: 200, stream: true, body: readFixture(t, "error_midstream.sse"),
			kind: classify.Transient, code: "UNAVAILABLE",
		},
	})
}

func TestClassify_Wall(t *testing.T) {
	runClassify(t, []classifyCase{
		{
			// Per-day quota with a short RetryInfo: quotaId and retryDelay "47s"
			// from googleapis/python-genai#2044 (PROVIDERS.md Gemini), layout
			// RECONSTRUCTED as above; a wall until midnight Pacific.
			name: "429PerDay", status: 429,
			body: `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
          {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            "quotaDimensions": {
              "location": "global",
              "model": "gemini-2.5-pro"
            },
            "quotaValue": "100"
          }
        ]
      },
      {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "47s"
      }
    ]
  }
}
`,
			kind: classify.Wall, code: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
			retryAfter: 47 * time.Second, until: dailyReset,
		},
		{
			// Sample gemini-429-limit-zero (continuedev/continue#10066): no quota
			// at all for the model; "Please retry in 7.967587226s." is no help.
			name: "429LimitZero", status: 429, body: sampleBody(t, "gemini-429-limit-zero"),
			kind: classify.Wall, code: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
			retryAfter: 7967587226 * time.Nanosecond, until: dailyReset,
		},
		{
			// Recorded: maruel/genai .../errors/bad_apiKey/GenStream.yaml.
			name: "400APIKeyInvalid", status: 400,
			body: "{\n  \"error\": {\n    \"code\": 400,\n    \"message\": \"API key not valid. Please pass a valid API key.\",\n    \"status\": \"INVALID_ARGUMENT\",\n    \"details\": [\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\",\n        \"reason\": \"API_KEY_INVALID\",\n        \"domain\": \"googleapis.com\",\n        \"metadata\": {\n          \"service\": \"generativelanguage.googleapis.com\"\n        }\n      },\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.LocalizedMessage\",\n        \"locale\": \"en-US\",\n        \"message\": \"API key not valid. Please pass a valid API key.\"\n      }\n    ]\n  }\n}\n",
			kind: classify.Wall, code: "API_KEY_INVALID",
		},
		{
			// poenl/gemini-api#4: the free tier is not offered where the request
			// leaves from.
			name: "400FailedPreconditionLocation", status: 400,
			body: `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`,
			kind: classify.Wall, code: "FAILED_PRECONDITION",
		},
		{
			// Verbatim from EvanZhouDev/gemini-ai#16 (EU, no billing account).
			name: "400FailedPreconditionBilling", status: 400,
			body: "{\n  \"error\": {\n    \"code\": 400,\n    \"message\": \"User location is not supported for the API use without a billing account linked.\",\n    \"status\": \"FAILED_PRECONDITION\"\n  }\n}\n",
			kind: classify.Wall, code: "FAILED_PRECONDITION",
		},
		{
			// The message of u14app/neo-chat#45 ("[400 ] Gemini API free tier is
			// not available in your country..."); the envelope and its status
			// are RECONSTRUCTED.
			name: "400FreeTierNotInCountry", status: 400,
			body: `{"error":{"code":400,"message":"Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.","status":"FAILED_PRECONDITION"}}`,
			kind: classify.Wall, code: "FAILED_PRECONDITION",
		},
		{
			// Message from PROVIDERS.md Gemini (403 for another project's
			// resource); envelope RECONSTRUCTED.
			name: "403PermissionDenied", status: 403,
			body: `{"error":{"code":403,"message":"CachedContent not found (or permission denied)","status":"PERMISSION_DENIED"}}`,
			kind: classify.Wall, code: "PERMISSION_DENIED",
		},
		{
			// Sample gemini-404-model-not-found (maruel/genai recording).
			name: "404ModelNotFound", status: 404, body: sampleBody(t, "gemini-404-model-not-found"),
			kind: classify.Wall, code: "NOT_FOUND",
		},
	})
}

func TestClassify_InvalidOverflowPolicy(t *testing.T) {
	runClassify(t, []classifyCase{
		{
			// Verbatim from Alishahryar1/free-claude-code#542: an unknown request
			// field, as an array (the OpenAI-compatible endpoint's form).
			name: "400InvalidArgument", status: 400,
			body: "[\n  {\n    \"error\": {\n      \"code\": 400,\n      \"message\": \"Invalid JSON payload received. Unknown name \\\"google\\\": Cannot find field.\",\n      \"status\": \"INVALID_ARGUMENT\",\n      \"details\": [\n        {\n          \"@type\": \"type.googleapis.com/google.rpc.BadRequest\",\n          \"fieldViolations\": [\n            {\n              \"description\": \"Invalid JSON payload received. Unknown name \\\"google\\\": Cannot find field.\"\n            }\n          ]\n        }\n      ]\n    }\n  }\n]\n",
			kind: classify.Invalid, code: "INVALID_ARGUMENT",
		},
		{
			// Message from PROVIDERS.md Gemini, Overflow (gemini-cli#5807);
			// envelope RECONSTRUCTED.
			name: "400InputTokenCount", status: 400,
			body: `{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}`,
			kind: classify.ContextOverflow,
		},
		{
			// Sample gemini-200-finish-reason-safety (CherryHQ/cherry-studio#664).
			name: "200FinishReasonSafety", status: 200, body: sampleBody(t, "gemini-200-finish-reason-safety"),
			kind: classify.Policy, code: "SAFETY",
		},
		{
			// The same block as the last chunk of a stream (fixture safety_midstream.sse).
			name: "StreamFinishReasonSafety", status: 200, stream: true, body: readFixture(t, "safety_midstream.sse"),
			kind: classify.Policy, code: "SAFETY",
		},
		{
			// A blocked prompt (go-genai types.go; vercel/ai#4265); body
			// RECONSTRUCTED.
			name: "200PromptBlocked", status: 200,
			body: `{"promptFeedback": {"blockReason": "OTHER"},"usageMetadata": {"promptTokenCount": 12,"totalTokenCount": 12}}`,
			kind: classify.Policy, code: "OTHER",
		},
		{
			name: "StreamPromptBlocked", status: 200, stream: true, body: readFixture(t, "prompt_blocked.sse"),
			kind: classify.Policy, code: "PROHIBITED_CONTENT",
		},
		{
			// A function call that did not parse (finish reason from go-genai
			// types.go; body RECONSTRUCTED): this attempt's failure, one hop.
			name: "200MalformedFunctionCall", status: 200,
			body: `{"candidates": [{"content": {},"finishReason": "MALFORMED_FUNCTION_CALL","index": 0}]}`,
			kind: classify.Unknown, code: "MALFORMED_FUNCTION_CALL",
		},
	})
}

// TestClassify_Sample reads every Gemini case of the shared corpus through
// this package (DecodeResponse for answers) and checks the kind and the
// wait it names.
func TestClassify_Sample(t *testing.T) {
	n := 0
	for _, c := range loadSample(t) {
		if c.Provider != "gemini" {
			continue
		}
		n++
		t.Run(c.ID, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.Headers {
				h.Set(k, v)
			}
			resp := &http.Response{StatusCode: *c.Status, Header: h, Body: io.NopCloser(strings.NewReader(c.Body))}
			_, err := gemini.DecodeResponse(resp)
			f := classify.Classify(err, now)
			if want := strings.ToLower(c.Expect); string(f.Kind) != want {
				t.Errorf("Kind = %s, want %s (reason %q; source %s)", f.Kind, want, f.Reason, c.Source)
			}
			if c.RetryAfterS != nil {
				want := time.Duration(math.Round(*c.RetryAfterS * 1e9))
				if d := f.RetryAfter - want; d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("RetryAfter = %v, want %v", f.RetryAfter, want)
				}
			}
		})
	}
	if n < 6 {
		t.Errorf("%d gemini cases in the sample, want at least 6", n)
	}
}

// sampleCase is one line of testdata/errors/sample.jsonl.
type sampleCase struct {
	ID          string            `json:"id"`
	Provider    string            `json:"provider"`
	Status      *int              `json:"status"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	Expect      string            `json:"expect"`
	RetryAfterS *float64          `json:"retry_after_s"`
	Source      string            `json:"source"`
}

func loadSample(tb testing.TB) []sampleCase {
	tb.Helper()
	b, err := os.ReadFile("../../testdata/errors/sample.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	var out []sampleCase
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c sampleCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatalf("sample line: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// sampleBody returns the body of one sample case.
func sampleBody(tb testing.TB, id string) string {
	tb.Helper()
	for _, c := range loadSample(tb) {
		if c.ID == id {
			return c.Body
		}
	}
	tb.Fatalf("no sample case %q", id)
	return ""
}

// readFixture reads testdata/streams/name.
func readFixture(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile("testdata/streams/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
