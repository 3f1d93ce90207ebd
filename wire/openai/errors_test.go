package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/detourhq/detour/llm"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sampleCase is one line of testdata/errors/sample.jsonl (see its README).
type sampleCase struct {
	ID      string            `json:"id"`
	Status  *int              `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Phase   string            `json:"phase"`
}

// loadSample reads the shared corpus of real provider failures.
func loadSample(tb testing.TB) []sampleCase {
	tb.Helper()
	f, err := os.Open("../../testdata/errors/sample.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []sampleCase
	sc := bufio.NewScanner(f)
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
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestParseError_Envelopes(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   llm.ProviderError // Dialect, Status, Header, Body, Phase are checked apart
	}{
		{
			// maruel/genai openaichat recording (sample openai-chat-401-invalid-api-key).
			name:   "OpenAIEnvelope",
			status: 401,
			body:   "{\n    \"error\": {\n        \"message\": \"Incorrect API key provided: bad apiKey.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": null,\n        \"code\": \"invalid_api_key\"\n    }\n}\n",
			want:   llm.ProviderError{Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided: bad apiKey."},
		},
		{
			// sample openai-chat-400-unsupported-parameter.
			name:   "OpenAIParam",
			status: 400,
			body:   `{"error":{"message":"Unsupported parameter: 'stop' is not supported with this model.","type":"invalid_request_error","param":"stop","code":"unsupported_parameter"}}`,
			want:   llm.ProviderError{Type: "invalid_request_error", Code: "unsupported_parameter", Param: "stop", Message: "Unsupported parameter: 'stop' is not supported with this model."},
		},
		{
			// sample openrouter-401-auth: numeric code.
			name:   "NumericCode",
			status: 401,
			body:   `{"error":{"message":"Missing Authentication header","code":401}}`,
			want:   llm.ProviderError{Code: "401", Message: "Missing Authentication header"},
		},
		{
			// Together recording: code null, type credit_limit (togethercomputer/MoA#27).
			name:   "NullCode",
			status: 429,
			body:   `{"error":{"message":"You have been rate limited.","type":"credit_limit","param":null,"code":null}}`,
			want:   llm.ProviderError{Type: "credit_limit", Message: "You have been rate limited."},
		},
		{
			// sample cerebras-429-tpm: no wrapper.
			name:   "CerebrasTopLevel",
			status: 429,
			body:   `{"message":"Tokens per minute limit exceeded - too many tokens processed.","type":"too_many_tokens_error","param":"quota","code":"token_quota_exceeded"}`,
			want:   llm.ProviderError{Type: "too_many_tokens_error", Code: "token_quota_exceeded", Param: "quota", Message: "Tokens per minute limit exceeded - too many tokens processed."},
		},
		{
			// sample mistral-400-image-input-not-enabled.
			name:   "MistralObjectError",
			status: 400,
			body:   `{"object":"error","message":"Image input is not enabled for this model","type":"invalid_request_invalid_args","param":null,"code":"3051"}`,
			want:   llm.ProviderError{Type: "invalid_request_invalid_args", Code: "3051", Message: "Image input is not enabled for this model"},
		},
		{
			// sample mistral-429-requests-rate-limit.
			name:   "BareMessage",
			status: 429,
			body:   `{"message":"Requests rate limit exceeded"}`,
			want:   llm.ProviderError{Message: "Requests rate limit exceeded"},
		},
		{
			// sample mistral-401-unauthorized (Kong gateway).
			name:   "Detail",
			status: 401,
			body:   `{"detail":"Unauthorized"}`,
			want:   llm.ProviderError{Message: "Unauthorized"},
		},
		{
			// Mistral 422 pydantic body (PROVIDERS.md, Mistral).
			name:   "DetailList",
			status: 422,
			body:   `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}`,
			want:   llm.ProviderError{Message: "body.messages: Field required"},
		},
		{
			// sample xai-400-incorrect-api-key: error is a string.
			name:   "ErrorString",
			status: 400,
			body:   `{"code":"Client specified an invalid argument","error":"Incorrect API key provided: na***ys. You can obtain an API key from https://console.x.ai."}`,
			want:   llm.ProviderError{Code: "Client specified an invalid argument", Message: "Incorrect API key provided: na***ys. You can obtain an API key from https://console.x.ai."},
		},
		{
			// sample anthropic-400-prompt-too-long.
			name:   "AnthropicEnvelope",
			status: 400,
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CVQe1dLrGNMJyE1ghG1av"}`,
			want:   llm.ProviderError{Type: "invalid_request_error", Message: "prompt is too long: 208310 tokens > 200000 maximum"},
		},
		{
			// sample gemini-503-model-overloaded: status text becomes Type.
			name:   "GeminiStatus",
			status: 503,
			body:   `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			want:   llm.ProviderError{Type: "UNAVAILABLE", Code: "503", Message: "The model is overloaded. Please try again later."},
		},
		{
			// Gemini OpenAI-compatible endpoint: an array (dnakov/anon-kode#114).
			name:   "Array",
			status: 429,
			body:   `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`,
			want:   llm.ProviderError{Type: "RESOURCE_EXHAUSTED", Code: "429", Message: "Resource has been exhausted (e.g. check quota)."},
		},
		{
			// sample openrouter-400-provider-returned-error: raw is a JSON string.
			name:   "OpenRouterRawString",
			status: 400,
			body:   `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"code\":400,\"msg\":\"invalid request, invalid parameter\",\"request_id\":\"709df87f\"}","provider_name":"AtlasCloud","is_byok":false}},"user_id":"user_2u8"}`,
			want:   llm.ProviderError{Code: "400", Message: "Provider returned error (AtlasCloud): invalid request, invalid parameter"},
		},
		{
			// OpenRouter 429 with an upstream Anthropic body as a string: the
			// upstream code replaces the outer one, which only repeats the status.
			name:   "OpenRouterRawTakesCode",
			status: 429,
			body:   `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}","provider_name":"OpenAI"}}}`,
			want:   llm.ProviderError{Type: "insufficient_quota", Code: "insufficient_quota", Message: "Provider returned error (OpenAI): You exceeded your current quota"},
		},
		{
			// OpenRouter docs: raw may also be an object, and plain text.
			name:   "OpenRouterRawObjectAndText",
			status: 429,
			body:   `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}},"provider_name":"Anthropic"}}}`,
			want:   llm.ProviderError{Type: "rate_limit_error", Code: "429", Message: "Provider returned error (Anthropic): slow down"},
		},
		{
			// OpenRouter upstream rate limit (PROVIDERS.md, OpenRouter): raw text.
			name:   "OpenRouterRawText",
			status: 429,
			body:   `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"meta-llama/llama-3.3-70b-instruct:free is temporarily rate-limited upstream. Please retry shortly.","provider_name":"Chutes"}}}`,
			want:   llm.ProviderError{Code: "429", Message: "Provider returned error (Chutes): meta-llama/llama-3.3-70b-instruct:free is temporarily rate-limited upstream. Please retry shortly."},
		},
		{
			// sample openrouter-402-insufficient-credits: provider_name null.
			name:   "OpenRouterNoProvider",
			status: 402,
			body:   `{"error":{"message":"This request requires more credits, or fewer max_tokens.","code":402,"metadata":{"provider_name":null}},"user_id":"user_3D0"}`,
			want:   llm.ProviderError{Code: "402", Message: "This request requires more credits, or fewer max_tokens."},
		},
		{
			// gemini-cli#15745: a client wrapper re-wraps the upstream as an escaped string.
			name:   "MessageIsJSON",
			status: 503,
			body:   `{"error":{"message":"{\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}","code":503,"status":"Service Unavailable"}}`,
			want:   llm.ProviderError{Type: "Service Unavailable", Code: "503", Message: "The model is overloaded."},
		},
		{
			// A gateway that wraps the envelope once more.
			name:   "DoubleWrapped",
			status: 500,
			body:   `{"error":{"error":{"message":"upstream failed","type":"server_error"}}}`,
			want:   llm.ProviderError{Type: "server_error", Message: "upstream failed"},
		},
		{
			// DeepSeek sends JSON as application/octet-stream (frostime/sy-f-misc#10).
			name:   "OctetStream",
			status: 402,
			header: header("Content-Type", "application/octet-stream"),
			body:   `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`,
			want:   llm.ProviderError{Type: "unknown_error", Code: "invalid_request_error", Message: "Insufficient Balance"},
		},
		{
			// CloudFront 502 HTML through the Hugging Face router (recording).
			name:   "HTML",
			status: 502,
			header: header("Content-Type", "text/html"),
			body:   "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\">\n<HTML><HEAD><META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=iso-8859-1\">\n<TITLE>ERROR: The request could not be satisfied</TITLE>\n</HEAD><BODY>\n<H1>502 ERROR</H1>\n</BODY></HTML>",
			want:   llm.ProviderError{Message: "ERROR: The request could not be satisfied"},
		},
		{
			name:   "PlainText",
			status: 500,
			body:   "\n  upstream connect error or disconnect/reset before headers. reset reason: overflow  \nsecond line",
			want:   llm.ProviderError{Message: "upstream connect error or disconnect/reset before headers. reset reason: overflow"},
		},
		{
			// Gemini on streamGenerateContent?alt=sse: JSON with text/event-stream.
			name:   "SSEFramed",
			status: 429,
			body:   "data: {\"error\":{\"code\":429,\"message\":\"Quota exceeded\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n\n",
			want:   llm.ProviderError{Type: "RESOURCE_EXHAUSTED", Code: "429", Message: "Quota exceeded"},
		},
		{
			// Bedrock behind a gateway: the class is in a header (amazon-bedrock-client-for-mac#99).
			name:   "AmznErrorType",
			status: 429,
			header: header("X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
			body:   `{"message":"Too many tokens, please wait before trying again."}`,
			want:   llm.ProviderError{Type: "ThrottlingException", Message: "Too many tokens, please wait before trying again."},
		},
		{
			// Hugging Face router: message in a header when the body has none.
			name:   "XErrorMessage",
			status: 402,
			header: header("X-Error-Message", "You have depleted your monthly included credits."),
			body:   ``,
			want:   llm.ProviderError{Message: "You have depleted your monthly included credits."},
		},
		{
			// sample azure-200-finish-reason-content-filter.
			name:   "RefusalContentFilter",
			status: 200,
			body:   `{"id":"chatcmpl-x","object":"chat.completion","choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null}}]}`,
			want:   llm.ProviderError{Code: "content_filter", Message: "the answer was withheld by the provider's content filter"},
		},
		{
			// sample gemini-200-finish-reason-safety.
			name:   "RefusalGeminiSafety",
			status: 200,
			body:   `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_SEXUALLY_EXPLICIT","probability":"HIGH","blocked":true}]}]}`,
			want:   llm.ProviderError{Code: "SAFETY", Type: "finishReason", Message: "the answer was blocked: SAFETY"},
		},
		{
			// Gemini prompt block (go-genai types.go BlockedReason).
			name:   "RefusalGeminiBlockReason",
			status: 200,
			body:   `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`,
			want:   llm.ProviderError{Code: "PROHIBITED_CONTENT", Type: "blockReason", Message: "the prompt was blocked: PROHIBITED_CONTENT"},
		},
		{
			// anthropic-sdk-go message.go: stop_reason refusal.
			name:   "RefusalAnthropic",
			status: 200,
			body:   `{"type":"message","stop_reason":"refusal","content":[]}`,
			want:   llm.ProviderError{Code: "refusal", Message: "the model refused to answer"},
		},
		{
			name:   "Empty",
			status: 503,
			body:   "",
			want:   llm.ProviderError{},
		},
		{
			name:   "Garbage",
			status: 500,
			body:   "{\"error\": {\"message\": ",
			want:   llm.ProviderError{Message: "{\"error\": {\"message\":"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseError(tt.status, tt.header, []byte(tt.body))
			if got.Dialect != "openai" || got.Status != tt.status || got.Phase != llm.PhaseResponse {
				t.Errorf("Dialect, Status, Phase = %q, %d, %q", got.Dialect, got.Status, got.Phase)
			}
			if string(got.Body) != tt.body {
				t.Errorf("Body = %q, want the body", got.Body)
			}
			want := tt.want
			want.Dialect, want.Status, want.Phase, want.Header, want.Body = got.Dialect, got.Status, got.Phase, got.Header, got.Body
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("ParseError mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseError_KeepsHeaderAndCutsBody(t *testing.T) {
	h := header("Retry-After", "20")
	big := bytes.Repeat([]byte("x"), 100<<10)
	got := ParseError(503, h, big)
	if got.Header.Get("Retry-After") != "20" {
		t.Errorf("Header not kept: %v", got.Header)
	}
	if len(got.Body) != 64<<10 {
		t.Errorf("len(Body) = %d, want 64 KiB", len(got.Body))
	}
	if n := utf8.RuneCountInString(got.Message); n > 300 {
		t.Errorf("Message has %d runes, want at most 300", n)
	}
	big[0] = 'y'
	if got.Body[0] != 'x' {
		t.Error("Body aliases the caller's buffer")
	}
}

func TestParseStreamError(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		ok     bool
		want   llm.ProviderError
		status int
	}{
		{
			// sample openai-responses-stream-error-event.
			name: "ResponsesErrorEvent",
			data: `{"type":"error","code":"server_error","message":"An error occurred while processing your request.","param":null,"sequence_number":7}`,
			ok:   true,
			want: llm.ProviderError{Code: "server_error", Message: "An error occurred while processing your request."},
		},
		{
			// sashabaranov/go-openai#396: an error chunk on a 200 chat stream.
			name: "ChatChunkError",
			data: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			ok:   true,
			want: llm.ProviderError{Type: "server_error", Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			// OpenRouter mid-stream error (recording): choices [] plus error.
			name: "OpenRouterChunk",
			data: `{"id":"gen-1","object":"chat.completion.chunk","choices":[],"error":{"code":502,"message":"Provider returned error","metadata":{"error_type":"provider_unavailable"}}}`,
			ok:   true,
			want: llm.ProviderError{Code: "502", Type: "provider_unavailable", Message: "Provider returned error"},
		},
		{
			// anthropic-sdk-go ssestream fixtures: event: error data.
			name: "AnthropicOverloaded",
			data: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			ok:   true,
			want: llm.ProviderError{Type: "overloaded_error", Message: "Overloaded"},
		},
		{
			// openai-go responses: response.failed carries response.error.
			name: "ResponseFailed",
			data: `{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached"}}}`,
			ok:   true,
			want: llm.ProviderError{Code: "rate_limit_exceeded", Message: "Rate limit reached"},
		},
		{
			name: "ErrorString",
			data: `{"error":"model overloaded"}`,
			ok:   true,
			want: llm.ProviderError{Message: "model overloaded"},
		},
		{name: "ErrorNull", data: `{"id":"x","choices":[{"delta":{"content":"hi"}}],"error":null}`},
		{name: "ErrorEmptyObject", data: `{"error":{}}`},
		{name: "ErrorFalse", data: `{"error":false}`},
		{name: "Chunk", data: `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`},
		{name: "Done", data: `[DONE]`},
		{name: "Empty", data: ``},
		{name: "NotJSON", data: `{oops`},
		{name: "OtherResponsesEvent", data: `{"type":"response.output_text.delta","delta":"hi"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseStreamError([]byte(tt.data))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				if got != nil {
					t.Errorf("got %+v with ok false", got)
				}
				return
			}
			want := tt.want
			want.Dialect, want.Status, want.Phase, want.Body = "openai", 200, llm.PhaseStream, []byte(tt.data)
			if diff := cmp.Diff(&want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseStreamError mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseError_Sample reads every body of the shared corpus: the fields
// that classify needs come out of each envelope.
func TestParseError_Sample(t *testing.T) {
	for _, c := range loadSample(t) {
		if c.Status == nil || c.Phase != "response" {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.Headers {
				h.Set(k, v)
			}
			e := ParseError(*c.Status, h, []byte(c.Body))
			if e.Message == "" && e.Code == "" && e.Type == "" {
				t.Errorf("nothing read from %q", c.Body)
			}
			if strings.ContainsAny(e.Code+e.Type, "\n") {
				t.Errorf("Code/Type with a newline: %q %q", e.Code, e.Type)
			}
		})
	}
}

func FuzzParseError(f *testing.F) {
	for _, c := range loadSample(f) {
		status := 200
		if c.Status != nil {
			status = *c.Status
		}
		f.Add(status, c.Headers["retry-after"], []byte(c.Body))
	}
	f.Add(400, "", []byte(`[[[[{"error":{"metadata":{"raw":"[{\"error\":\"x\"}]"}}}]]]]`))
	f.Add(200, "", []byte(`{"error":{"message":"{\"error\":{\"message\":\"{}\"}}"}}`))
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		e := ParseError(status, h, body)
		if e == nil || e.Dialect != "openai" || e.Status != status || e.Phase != llm.PhaseResponse {
			t.Fatalf("bad result %+v", e)
		}
		if len(e.Body) > 64<<10 {
			t.Fatalf("Body of %d bytes", len(e.Body))
		}
		_ = e.Error()
		if se, ok := ParseStreamError(body); ok && (se.Status != 200 || se.Phase != llm.PhaseStream) {
			t.Fatalf("bad stream error %+v", se)
		}
	})
}
