package simulate

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sample is one line of the project's corpus of real provider failures.
type sample struct {
	ID      string            `json:"id"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func loadSamples(t *testing.T) map[string]sample {
	t.Helper()
	f, err := os.Open("../testdata/errors/sample.jsonl")
	if err != nil {
		t.Skipf("no error corpus: %v", err)
	}
	defer f.Close()
	out := map[string]sample{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("sample.jsonl: %v", err)
		}
		out[s.ID] = s
	}
	return out
}

// TestErrors_MatchRecordedBodies sends requests that a real provider answered
// with a recorded body, and expects the same status, the same bytes and the
// recorded headers that matter.
func TestErrors_MatchRecordedBodies(t *testing.T) {
	samples := loadSamples(t)
	cases := []struct {
		sample   string
		provider Provider
		body     string
		header   []string
		// userID is the OpenRouter user id of the recording, which the
		// simulator replaces with its own.
		userID string
	}{
		{sample: "openai-chat-400-unsupported-parameter",
			provider: Provider{Name: "p", Script: []Fault{{Kind: BadRequest}}}},
		{sample: "openai-chat-401-invalid-api-key",
			provider: Provider{Name: "p", Key: "sk-right"}, header: []string{"Authorization", "Bearer bad apiKey"}},
		{sample: "openai-429-insufficient-quota",
			provider: Provider{Name: "p", Script: Faults(InsufficientQuota)}},
		{sample: "openrouter-402-insufficient-credits",
			provider: Provider{Name: "p", Style: StyleOpenRouter, Script: []Fault{{Kind: NoCredits, Afford: 27342}}},
			userID:   "user_3D0IVsejFIV6kOYwkxFE9nKiq0g"},
		{sample: "openrouter-401-auth",
			provider: Provider{Name: "p", Style: StyleOpenRouter, Key: "sk-or-right"}},
		{sample: "groq-401-invalid-api-key",
			provider: Provider{Name: "p", Style: StyleGroq, Key: "gsk_right"}, header: []string{"Authorization", "Bearer gsk_wrong"}},
		{sample: "mistral-401-unauthorized",
			provider: Provider{Name: "p", Style: StyleMistral, Key: "right"}, header: []string{"Authorization", "Bearer wrong"}},
		{sample: "mistral-500-service-unavailable",
			provider: Provider{Name: "p", Style: StyleMistral, Script: Faults(ServerError)}},
		{sample: "mistral-400-image-input-not-enabled",
			provider: Provider{Name: "p", Style: StyleMistral, Script: Faults(BadRequest)}},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.sample, func(t *testing.T) {
				s, ok := samples[c.sample]
				if !ok {
					t.Fatalf("sample %q not in the corpus", c.sample)
				}
				r := newRig(t, way, c.provider)
				body := c.body
				if body == "" {
					body = chatBody("gpt-4.1-nano", false)
				}
				resp, got := r.mustPost(t, "p", body, c.header...)
				if resp.StatusCode != s.Status {
					t.Errorf("status %d, want %d", resp.StatusCode, s.Status)
				}
				want := s.Body
				if c.userID != "" {
					want = strings.Replace(want, c.userID, openrouterUser, 1)
				}
				if diff := cmp.Diff(want, string(got)); diff != "" {
					t.Errorf("body (-recorded +simulated):\n%s", diff)
				}
				for k, v := range s.Headers {
					switch k {
					case "content-type", "x-groq-region":
					default:
						if !strings.HasPrefix(k, "x-ratelimit-") {
							continue // server, content-length, correlation ids: not modelled
						}
					}
					if got := resp.Header.Get(k); got != v {
						t.Errorf("header %s = %q, want %q", k, got, v)
					}
				}
			})
		}
	})
}

// TestErrors_EachKind checks the status, the hint headers and the
// discriminating fields of every error kind in the styles that matter.
func TestErrors_EachKind(t *testing.T) {
	absent := "<absent>"
	cases := []struct {
		name    string
		style   Style
		fault   Fault
		body    string
		status  int
		headers map[string]string
		want    string // exact body, when set
		has     []string
	}{
		{name: "rate limit with hint", fault: Fault{Kind: RateLimit, RetryAfter: 1500 * time.Millisecond}, status: 429,
			headers: map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500", "X-Ratelimit-Reset-Requests": "1.5s", "X-Ratelimit-Remaining-Requests": "0", "Content-Type": "application/json"},
			has:     []string{`"code": "rate_limit_exceeded"`, `"type": "requests"`, "on requests per min (RPM)", "Please try again in 1.5s."}},
		{name: "rate limit without hint", fault: Fault{Kind: RateLimit}, status: 429,
			headers: map[string]string{"Retry-After": absent, "Retry-After-Ms": absent, "X-Ratelimit-Reset-Requests": absent},
			has:     []string{`"code": "rate_limit_exceeded"`}},
		{name: "groq rate limit", style: StyleGroq, fault: Fault{Kind: RateLimit, RetryAfter: 2 * time.Second}, status: 429,
			headers: map[string]string{"Retry-After": "2"},
			has:     []string{"on tokens per minute (TPM)", "Please try again in 2s.", `"type":"tokens","code":"rate_limit_exceeded"`}},
		{name: "gemini rate limit", style: StyleGemini, fault: Fault{Kind: RateLimit}, status: 429,
			want: "[{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Resource has been exhausted (e.g. check quota).\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n]"},
		{name: "mistral rate limit", style: StyleMistral, fault: Fault{Kind: RateLimit, RetryAfter: time.Second}, status: 429,
			headers: map[string]string{"Retry-After": "1"},
			want:    `{"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}`},
		{name: "openrouter rate limit", style: StyleOpenRouter, fault: Fault{Kind: RateLimit}, status: 429,
			has: []string{`"message":"Provider returned error","code":429`, `gpt-4.1-nano is temporarily rate-limited upstream`}},
		{name: "daily quota is Groq's TPD wall", fault: Fault{Kind: DailyQuota}, status: 429,
			headers: map[string]string{"Retry-After": "433", "X-Ratelimit-Remaining-Tokens": "12000"},
			want:    "{\"error\":{\"message\":\"Rate limit reached for model `gpt-4.1-nano` in organization `" + groqOrg + "` service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 99812, Requested 1038. Please try again in 7m12.3s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}\n"},
		{name: "no credits names max_tokens", style: StyleGroq, fault: Fault{Kind: NoCredits},
			body:   `{"model":"gpt-4.1-nano","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`,
			status: 402, has: []string{"You requested up to 1000 tokens, but can only afford 850.", `"code":402`}},
		{name: "openai unavailable", fault: Fault{Kind: Unavailable}, status: 503,
			has: []string{"That model is currently overloaded", `"type": "server_error"`, `"code": null`}},
		{name: "gemini unavailable", style: StyleGemini, fault: Fault{Kind: Unavailable}, status: 503,
			want: "[{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}\n]"},
		{name: "mistral unavailable has a misleading type", style: StyleMistral, fault: Fault{Kind: Unavailable}, status: 503,
			want: `{"object":"error","message":"Service tier capacity exceeded for this model.","type":"invalid_request_error","param":null,"code":null}`},
		{name: "openai server error", fault: Fault{Kind: ServerError}, status: 500,
			want: "{\n  \"error\": {\n    \"message\": \"The server had an error while processing your request. Sorry about that!\",\n    \"type\": \"server_error\",\n    \"param\": null,\n    \"code\": null\n  }\n}"},
		{name: "gemini bad key is a 400", style: StyleGemini, fault: Fault{Kind: Unauthorized}, status: 400,
			has: []string{`"status": "INVALID_ARGUMENT"`, `"reason": "API_KEY_INVALID"`}},
		{name: "bad request names its param", fault: Fault{Kind: BadRequest, Param: "logprobs"}, status: 400,
			has: []string{`"param": "logprobs"`, `"code": "unsupported_parameter"`}},
		{name: "context overflow", fault: Fault{Kind: ContextOverflow}, status: 400,
			has: []string{`"code": "context_length_exceeded"`, `"param": "messages"`, "maximum context length is 131072 tokens"}},
		{name: "groq context overflow", style: StyleGroq, fault: Fault{Kind: ContextOverflow}, status: 400,
			want: `{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}` + "\n"},
		{name: "model not found", fault: Fault{Kind: ModelNotFound}, status: 404,
			has: []string{"The model `gpt-4.1-nano` does not exist or you do not have access to it.", `"code": "model_not_found"`}},
		{name: "openrouter model not found is a 400", style: StyleOpenRouter, fault: Fault{Kind: ModelNotFound}, status: 400,
			want: `{"error":{"message":"gpt-4.1-nano is not a valid model ID","code":400},"user_id":"` + openrouterUser + `"}`},
		{name: "stream error on a plain request is a 500", fault: Fault{Kind: StreamError}, status: 500,
			has: []string{`"type": "server_error"`}},
		{name: "overrides", fault: Fault{Kind: ServerError, Status: 502, Body: "<html>bad gateway</html>",
			Header: map[string][]string{"Content-Type": {"text/html"}, "X-Request-Id": nil, "x-should-retry": {"false"}}},
			status: 502, headers: map[string]string{"Content-Type": "text/html", "X-Request-Id": absent, "X-Should-Retry": "false"},
			want: "<html>bad gateway</html>"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := newRig(t, way, Provider{Name: "p", Style: c.style, Script: []Fault{c.fault}})
				body := c.body
				if body == "" {
					body = chatBody("gpt-4.1-nano", false)
				}
				resp, got := r.mustPost(t, "p", body)
				if resp.StatusCode != c.status {
					t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, got)
				}
				for k, v := range c.headers {
					if v == absent {
						if _, ok := resp.Header[k]; ok {
							t.Errorf("header %s present: %q", k, resp.Header.Get(k))
						}
					} else if g := resp.Header.Get(k); g != v {
						t.Errorf("header %s = %q, want %q", k, g, v)
					}
				}
				if c.want != "" {
					if diff := cmp.Diff(c.want, string(got)); diff != "" {
						t.Errorf("body (-want +got):\n%s", diff)
					}
				}
				for _, h := range c.has {
					if !strings.Contains(string(got), h) {
						t.Errorf("body lacks %q:\n%s", h, got)
					}
				}
				if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
					decode(t, got) // every error body is valid JSON
				}
			})
		}
	})
}

func TestErrors_ContentFilterIsA200(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(ContentFilter, ContentFilter)})
		resp, got := r.mustPost(t, "p", chatBody("m", false))
		var c struct {
			Choices []struct {
				Message struct {
					Content *string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(got, &c); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || len(c.Choices) != 1 || c.Choices[0].FinishReason != "content_filter" || c.Choices[0].Message.Content != nil {
			t.Errorf("status %d body %s", resp.StatusCode, got)
		}
		_, raw := r.mustPost(t, "p", chatBody("m", true))
		events := sseEvents(t, raw)
		if len(events) != 4 || !strings.Contains(events[1], `"finish_reason":"content_filter"`) || events[3] != "[DONE]" {
			t.Errorf("stream events:\n%s", strings.Join(events, "\n"))
		}
	})
}

func TestErrors_RequestValidation(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		kind       Kind
		has        string
	}{
		{"bad JSON", `{"model":`, 400, BadRequest, "We could not parse the JSON body of your request."},
		{"wrong type", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"hi"}]}`, 400, BadRequest, `Invalid type for 'stream': expected a boolean, but got a string instead.`},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, BadRequest, "you must provide a model parameter"},
		{"no messages", `{"model":"known"}`, 400, BadRequest, `"code": "missing_required_parameter"`},
		{"empty messages", `{"model":"known","messages":[]}`, 400, BadRequest, `"code": "empty_array"`},
		{"unknown model", chatBody("other", false), 404, ModelNotFound, "The model `other` does not exist"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := newRig(t, way, Provider{Name: "p", Models: []string{"known"}})
				resp, got := r.mustPost(t, "p", c.body)
				if resp.StatusCode != c.status || !strings.Contains(string(got), c.has) {
					t.Errorf("status %d body %s; want %d with %q", resp.StatusCode, got, c.status, c.has)
				}
				if n := r.srv.Stats().Served("p", "", c.kind); n != 1 {
					t.Errorf("served %s %d times, want 1", c.kind, n)
				}
			})
		}
	})
}

func TestErrors_AuthAndRouting(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Key: "sk-test-0123456789abcd"})
		resp, got := r.mustPost(t, "p", chatBody("m", false))
		if resp.StatusCode != 401 || !strings.Contains(string(got), "You didn't provide an API key.") {
			t.Errorf("missing key: %d %s", resp.StatusCode, got)
		}
		resp, got = r.mustPost(t, "p", chatBody("m", false), "Authorization", "Bearer sk-test-0123456789abce")
		if resp.StatusCode != 401 || !strings.Contains(string(got), "Incorrect API key provided: sk-***************abce.") {
			t.Errorf("wrong key: %d %s", resp.StatusCode, got)
		}
		resp, _ = r.mustPost(t, "p", chatBody("m", false), "Authorization", "Bearer sk-test-0123456789abcd")
		if resp.StatusCode != 200 {
			t.Errorf("right key: %d", resp.StatusCode)
		}
		resp, got = r.mustPost(t, "nobody", chatBody("m", false))
		if resp.StatusCode != 404 || !strings.Contains(string(got), "Invalid URL (POST /nobody/v1/chat/completions)") {
			t.Errorf("unknown provider: %d %s", resp.StatusCode, got)
		}
		st := r.srv.Stats()
		if got, want := []int{st.Served("p", "", Unauthorized), st.Served("p", "m", OK), st.Total()}, []int{2, 1, 3}; !cmp.Equal(got, want) {
			t.Errorf("stats unauthorized, ok, total = %v, want %v", got, want)
		}
	})
}
