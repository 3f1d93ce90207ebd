package gemini

import (
	"net/http"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// perDay429 is a 429 whose QuotaFailure names a per-minute and a per-day
// quota (layout of googleapis/python-genai#2044 as PROVIDERS.md quotes
// it).
const perDay429 = `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
          {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
          },
          {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
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
`

// rateLimitErrorInfo is an older 429 with ErrorInfo RATE_LIMIT_EXCEEDED
// and quota metadata (google/generative-ai-docs#236, RECONSTRUCTED from the
// metadata that issue prints).
const rateLimitErrorInfo = `{"error": {"code": 429,"message": "Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute for a region' of service 'generativelanguage.googleapis.com' for consumer 'project_number:1'.","status": "RESOURCE_EXHAUSTED","details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo","reason": "RATE_LIMIT_EXCEEDED","domain": "googleapis.com","metadata": {"service": "generativelanguage.googleapis.com","quota_limit": "GenerateContentRequestsPerMinutePerProjectPerRegion","quota_limit_value": "0"}}]}}`

func TestParseError(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		typ, code string
		msg       string
	}{
		{name: "API_KEY_INVALID", status: 400, body: apiKeyInvalid, typ: "INVALID_ARGUMENT", code: "API_KEY_INVALID",
			msg: "API key not valid. Please pass a valid API key."},
		{name: "per-day quota first", status: 429, body: perDay429, typ: "RESOURCE_EXHAUSTED",
			code: "GenerateRequestsPerDayPerProjectPerModel-FreeTier"},
		{name: "ErrorInfo quota_limit", status: 429, body: rateLimitErrorInfo, typ: "RESOURCE_EXHAUSTED",
			code: "GenerateContentRequestsPerMinutePerProjectPerRegion"},
		{name: "no details", status: 503, body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			typ: "UNAVAILABLE", code: "503", msg: "The model is overloaded. Please try again later."},
		{name: "array form", status: 429, body: `[{"error": {"code": 429,"message": "Resource has been exhausted (e.g. check quota).","status": "RESOURCE_EXHAUSTED"}}]`,
			typ: "RESOURCE_EXHAUSTED", code: "429"},
		{name: "SSE framed", status: 500, body: "data: {\"error\": {\"code\": 500,\"message\": \"An internal error has occurred.\",\"status\": \"INTERNAL\"}}\r\n\r\n",
			typ: "INTERNAL", code: "500"},
		{name: "string code", status: 400, body: `{"error":{"code":"400","message":"bad","status":"INVALID_ARGUMENT"}}`, typ: "INVALID_ARGUMENT", code: "400"},
		{name: "wrong-typed details", status: 400, body: `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT","details":{"x":1}}}`,
			typ: "INVALID_ARGUMENT", code: "400", msg: "bad"},
		{name: "HTML", status: 502, body: "<!DOCTYPE html>\n<html><head><title>Error 502 (Server Error)!!1</title></head><body>...</body></html>",
			msg: "Error 502 (Server Error)!!1"},
		{name: "HTML without title", status: 502, body: "<html><body>\n<h1>Bad Gateway</h1><p>upstream</p></body></html>", msg: "Bad Gateway"},
		{name: "plain text", status: 500, body: "\n  upstream connect error\nreset reason: overflow\n", msg: "upstream connect error"},
		{name: "empty", status: 502},
		{name: "JSON without error", status: 404, body: `{"candidates": []}`},
		{name: "safety refusal on a 200", status: 200,
			body: `{"candidates": [{"finishReason": "PROHIBITED_CONTENT","index": 0}]}`, typ: "safety", code: "PROHIBITED_CONTENT"},
		{name: "plain answer on a 200", status: 200, body: textAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Content-Type": {"text/event-stream"}}
			e := ParseError(tt.status, h, []byte(tt.body))
			if e.Dialect != "gemini" || e.Status != tt.status || e.Phase != llm.PhaseResponse || e.Header.Get("Content-Type") == "" {
				t.Errorf("ProviderError = %+v", e)
			}
			if e.Type != tt.typ || e.Code != tt.code {
				t.Errorf("Type, Code = %q, %q; want %q, %q", e.Type, e.Code, tt.typ, tt.code)
			}
			if tt.msg != "" && e.Message != tt.msg {
				t.Errorf("Message = %q, want %q", e.Message, tt.msg)
			}
			if string(e.Body) != tt.body {
				t.Errorf("Body = %q, want the body", e.Body)
			}
		})
	}
}

func TestParseError_KeepsAtMost64KiB(t *testing.T) {
	body := `{"error":{"code":500,"message":"` + strings.Repeat("x", 100<<10) + `","status":"INTERNAL"}}`
	e := ParseError(500, nil, []byte(body))
	if len(e.Body) != MaxErrorBody || e.Type != "INTERNAL" {
		t.Errorf("Body %d bytes, Type %q", len(e.Body), e.Type)
	}
	if e := ParseError(500, nil, []byte(strings.Repeat("é", 400))); len([]rune(e.Message)) != exchange.MaxErrorText {
		t.Errorf("Message of %d runes, want %d", len([]rune(e.Message)), exchange.MaxErrorText)
	}
}

func TestParseStreamError(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		ok        bool
		typ, code string
	}{
		{name: "status", data: `{"error": {"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}}`,
			ok: true, typ: "UNAVAILABLE", code: "503"},
		{name: "array", data: ` [{"error": {"code": 429,"status": "RESOURCE_EXHAUSTED"}}] `, ok: true, typ: "RESOURCE_EXHAUSTED", code: "429"},
		{name: "quota", data: perDay429, ok: true, typ: "RESOURCE_EXHAUSTED", code: "GenerateRequestsPerDayPerProjectPerModel-FreeTier"},
		{name: "chunk", data: `{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}`},
		{name: "null error", data: `{"error": null}`},
		{name: "empty error", data: `{"error": {}}`},
		{name: "string error", data: `{"error": "boom"}`},
		{name: "not JSON", data: `data: x`},
		{name: "empty", data: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := ParseStreamError([]byte(tt.data))
			if ok != tt.ok || (e != nil) != ok {
				t.Fatalf("ParseStreamError = %v, %v; want ok %v", e, ok, tt.ok)
			}
			if !ok {
				return
			}
			if e.Status != 200 || e.Phase != llm.PhaseStream || e.Dialect != "gemini" || len(e.Body) == 0 {
				t.Errorf("ProviderError = %+v", e)
			}
			if e.Type != tt.typ || e.Code != tt.code {
				t.Errorf("Type, Code = %q, %q; want %q, %q", e.Type, e.Code, tt.typ, tt.code)
			}
		})
	}
}
