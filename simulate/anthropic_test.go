package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// anthropicToolRequest is the recorded square_root request of
// maruel/genai's anthropic GenSync/GenStream-Tools-SquareRoot-1.yaml.
const anthropicToolRequest = `{"model":"claude-haiku-4-5","max_tokens":64000,"messages":[{"role":"user","content":[{"type":"text","text":"Use the square_root tool to calculate the square root of 132413 and reply with only the result. Do not give an explanation."}]}],%s"thinking":{"type":"disabled"},"tool_choice":{"type":"any"},"tools":[{"description":"Calculates and return the square root of a number","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"number":{"type":"number"}},"additionalProperties":false,"type":"object","required":["number"]},"name":"square_root"}]}`

var anthropicVersion = []string{"anthropic-version", "2023-06-01"}

func anthropicRig(t *testing.T, way string, p Provider) *rig {
	t.Helper()
	p.Dialect = DialectAnthropic
	if p.Name == "" {
		p.Name = "claude"
	}
	return newRig(t, way, p)
}

// postMessages posts body to the claude provider's /v1/messages.
func (r *rig) postMessages(t *testing.T, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return r.mustDo(t, http.MethodPost, r.srv.BaseURL("claude")+"/v1/messages", body, header...)
}

func TestAnthropic_GoldenBytes(t *testing.T) {
	cases := []struct{ name, body, golden string }{
		{"text", messagesBody("claude-haiku-4-5", false), "anthropic_text.json"},
		{"text stream", messagesBody("claude-haiku-4-5", true), "anthropic_text_stream.sse"},
		{"tool", strings.Replace(anthropicToolRequest, "%s", "", 1), "anthropic_tool.json"},
		{"tool stream", strings.Replace(anthropicToolRequest, "%s", `"stream":true,`, 1), "anthropic_tool_stream.sse"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := anthropicRig(t, way, Provider{})
				resp, body := r.postMessages(t, c.body, anthropicVersion...)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				wantType := "application/json"
				if strings.HasSuffix(c.golden, ".sse") {
					wantType = "text/event-stream; charset=utf-8"
				}
				if got := resp.Header.Get("Content-Type"); got != wantType {
					t.Errorf("Content-Type %q, want %q", got, wantType)
				}
				if !strings.HasPrefix(resp.Header.Get("Request-Id"), "req_011C") {
					t.Errorf("request-id %q", resp.Header.Get("Request-Id"))
				}
				golden(t, c.golden, body)
			})
		}
	})
}

// TestAnthropic_StreamFollowsSDKRules checks CLIENTS.md sections 3 and 4:
// every event named after its data's type and ended by a blank line,
// message_start first, message_delta with usage, message_stop last, and
// the deltas reassembling the answer.
func TestAnthropic_StreamFollowsSDKRules(t *testing.T) {
	type delta struct {
		Index int `json:"index"`
		Delta struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage *struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
		ContentBlock struct {
			Type, ID, Name string
		} `json:"content_block"`
	}
	cases := []struct {
		name, body          string
		text, input, reason string
		blockType           string
	}{
		{"text", messagesBody("claude-haiku-4-5", true), "Hello from claude/claude-haiku-4-5.", "", "end_turn", "text"},
		{"tool", strings.Replace(anthropicToolRequest, "%s", `"stream":true,`, 1), "", `{"number":1}`, "tool_use", "tool_use"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := anthropicRig(t, way, Provider{})
				_, raw := r.postMessages(t, c.body, anthropicVersion...)
				events := anthropicEvents(t, raw)
				var names []string
				var text, input strings.Builder
				reason, blockType := "", ""
				for _, ev := range events {
					names = append(names, ev.name)
					var d delta
					if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
						t.Fatal(err)
					}
					switch ev.name {
					case "content_block_start":
						blockType = d.ContentBlock.Type
						if d.ContentBlock.Type == "tool_use" && (!strings.HasPrefix(d.ContentBlock.ID, "toolu_01") || d.ContentBlock.Name != "square_root") {
							t.Errorf("tool_use block %s", ev.data)
						}
					case "content_block_delta":
						text.WriteString(d.Delta.Text)
						input.WriteString(d.Delta.PartialJSON)
					case "message_delta":
						reason = d.Delta.StopReason
						if d.Usage == nil || d.Usage.OutputTokens == 0 || d.Usage.InputTokens == 0 {
							t.Errorf("message_delta without usage: %s", ev.data)
						}
					}
				}
				if names[0] != "message_start" || names[len(names)-1] != "message_stop" || names[len(names)-2] != "message_delta" {
					t.Errorf("event order %v", names)
				}
				if n := strings.Count(strings.Join(names, " "), "ping"); n != 1 {
					t.Errorf("%d pings in %v", n, names)
				}
				got := []string{text.String(), input.String(), reason, blockType}
				if diff := cmp.Diff([]string{c.text, c.input, c.reason, c.blockType}, got); diff != "" {
					t.Errorf("text, partial_json, stop_reason, block type (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestAnthropic_MatchRecordedBodies expects the bytes of real Anthropic
// answers: the samples of the error corpus (request ids and the numbers
// that depend on the request replaced) and recordings of maruel/genai.
func TestAnthropic_MatchRecordedBodies(t *testing.T) {
	samples := loadSamples(t)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name   string
		sample string // or
		status int
		want   string // when no sample
		// fault and provider set-up
		fault  Fault
		models []string
		key    string
		header []string
		body   string
		now    time.Time
		// replace pairs, applied to the recorded body ("$ID" is the request id served)
		replace []string
		headers bool // compare every recorded header
	}{
		{name: "prompt too long", sample: "anthropic-400-prompt-too-long", fault: Fault{Kind: ContextOverflow},
			replace: []string{"req_011CVQe1dLrGNMJyE1ghG1av", "$ID", "208310 tokens", "200015 tokens"}},
		{name: "rate limit with headers", sample: "anthropic-429-with-ratelimit-headers", fault: Fault{Kind: RateLimit, RetryAfter: 20 * time.Second},
			now: at("2025-08-21T12:40:59Z"), replace: []string{"req_x", "$ID"}, headers: true},
		{name: "user spend limit", sample: "anthropic-400-user-spend-limit", fault: Fault{Kind: DailyQuota},
			replace: []string{"req_011CZLrUfBVkVHn5T6EqQaf7", "$ID"}},
		{name: "credit balance", sample: "anthropic-400-credit-balance-too-low", fault: Fault{Kind: NoCredits},
			replace: []string{"req_011CbrFTcXhtiMzr3s6EocF7", "$ID"}},
		// maruel/genai providers/anthropic/testdata/TestClient/errors/bad_apiKey/GenSync.yaml
		{name: "bad key", status: 401, key: "sk-ant-right", header: []string{"x-api-key", "bad apiKey"},
			want: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"$ID"}`},
		// maruel/genai providers/anthropic/testdata/TestClient/errors/bad_model/GenStream.yaml
		{name: "bad model", status: 404, models: []string{"claude-haiku-4-5"}, body: messagesBody("bad model", true),
			want: `{"type":"error","error":{"type":"not_found_error","message":"model: bad model"},"request_id":"$ID"}`},
		// claude-code#5184
		{name: "overloaded", status: 529, fault: Fault{Kind: Unavailable},
			want: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"$ID"}`},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := anthropicRig(t, way, Provider{Models: c.models, Key: c.key, Script: []Fault{c.fault}})
				if !c.now.IsZero() {
					r.clock.Advance(c.now.Sub(r.clock.Now()))
				}
				body := c.body
				if body == "" {
					body = messagesBody("claude-haiku-4-5", false)
				}
				resp, got := r.postMessages(t, body, append(append([]string{}, anthropicVersion...), c.header...)...)
				status, want, wantHeaders := c.status, c.want, map[string]string{}
				if c.sample != "" {
					s, ok := samples[c.sample]
					if !ok {
						t.Fatalf("sample %q not in the corpus", c.sample)
					}
					status, want, wantHeaders = s.Status, s.Body, s.Headers
				}
				id := resp.Header.Get("Request-Id")
				for i := 0; i+1 < len(c.replace); i += 2 {
					want = strings.Replace(want, c.replace[i], c.replace[i+1], 1)
				}
				want = strings.ReplaceAll(want, "$ID", id)
				if resp.StatusCode != status {
					t.Errorf("status %d, want %d", resp.StatusCode, status)
				}
				if diff := cmp.Diff(want, string(got)); diff != "" {
					t.Errorf("body (-recorded +simulated):\n%s", diff)
				}
				if c.headers {
					for k, v := range wantHeaders {
						if k == "request-id" {
							v = id
						}
						if g := resp.Header.Get(k); g != v {
							t.Errorf("header %s = %q, want %q", k, g, v)
						}
					}
				}
			})
		}
	})
}

// TestAnthropic_ErrorsEachKind checks the status, headers and
// discriminating fields of every error kind in Anthropic's envelope.
func TestAnthropic_ErrorsEachKind(t *testing.T) {
	absent := "<absent>"
	cases := []struct {
		name    string
		fault   Fault
		body    string
		status  int
		typ     string
		headers map[string]string
		msg     string // exact message, when set
		has     string
		details string // the error's details, as JSON
	}{
		{name: "rate limit with hint", fault: Fault{Kind: RateLimit, RetryAfter: 1500 * time.Millisecond}, status: 429, typ: "rate_limit_error",
			headers: map[string]string{"Retry-After": "2", "Anthropic-Ratelimit-Input-Tokens-Remaining": "0",
				"Anthropic-Ratelimit-Input-Tokens-Reset": "2026-03-01T12:00:02Z", "Anthropic-Ratelimit-Requests-Reset": "2026-03-01T12:00:00Z", "X-Should-Retry": "true"},
			has: "80,000 input tokens per minute"},
		{name: "rate limit without hint", fault: Fault{Kind: RateLimit}, status: 429, typ: "rate_limit_error",
			headers: map[string]string{"Retry-After": absent, "Anthropic-Ratelimit-Tokens-Reset": absent}},
		{name: "daily quota is the spend-limit wall", fault: Fault{Kind: DailyQuota}, status: 400, typ: "invalid_request_error",
			headers: map[string]string{"Retry-After": absent, "X-Should-Retry": "false"},
			msg:     "You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."},
		{name: "daily quota names its reset", fault: Fault{Kind: DailyQuota, RetryAfter: 10*time.Hour + 30*time.Second}, status: 400, typ: "invalid_request_error",
			msg: "You have reached your specified API usage limits. You will regain access on 2026-03-01 at 22:01 UTC."},
		{name: "insufficient quota is the tier spend cap", fault: Fault{Kind: InsufficientQuota}, status: 429, typ: "rate_limit_error",
			headers: map[string]string{"Retry-After": absent}, has: "You will regain access on 2026-04-01 at 00:00 UTC.",
			details: `{"error_code":"enforced_spend_limit_reached"}`},
		{name: "no credits", fault: Fault{Kind: NoCredits}, status: 400, typ: "invalid_request_error", has: "Your credit balance is too low"},
		{name: "unavailable is 529", fault: Fault{Kind: Unavailable}, status: 529, typ: "overloaded_error", msg: "Overloaded"},
		{name: "server error", fault: Fault{Kind: ServerError}, status: 500, typ: "api_error", msg: "Internal server error"},
		{name: "stream error on a plain request", fault: Fault{Kind: StreamError}, status: 500, typ: "api_error"},
		{name: "bad request", fault: Fault{Kind: BadRequest, Param: "logprobs"}, status: 400, typ: "invalid_request_error",
			msg: "logprobs: Extra inputs are not permitted", headers: map[string]string{"X-Should-Retry": "false"}},
		{name: "context overflow", fault: Fault{Kind: ContextOverflow}, status: 400, typ: "invalid_request_error",
			msg: "prompt is too long: 200015 tokens > 200000 maximum"},
		{name: "model not found", fault: Fault{Kind: ModelNotFound}, status: 404, typ: "not_found_error", msg: "model: claude-haiku-4-5"},
		{name: "override", fault: Fault{Kind: Unavailable, Status: 503, Header: http.Header{"Retry-After": {"3"}}}, status: 503, typ: "overloaded_error",
			headers: map[string]string{"Retry-After": "3"}},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := anthropicRig(t, way, Provider{Script: []Fault{c.fault}})
				resp, got := r.postMessages(t, messagesBody("claude-haiku-4-5", false), anthropicVersion...)
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
				var e struct {
					Type  string `json:"type"`
					Error struct {
						Type    string          `json:"type"`
						Message string          `json:"message"`
						Details json.RawMessage `json:"details"`
					} `json:"error"`
					RequestID string `json:"request_id"`
				}
				if err := json.Unmarshal(got, &e); err != nil {
					t.Fatalf("body %s: %v", got, err)
				}
				if e.Type != "error" || e.Error.Type != c.typ || e.RequestID == "" || e.RequestID != resp.Header.Get("Request-Id") {
					t.Errorf("envelope %s, want error type %s and the request-id header %q", got, c.typ, resp.Header.Get("Request-Id"))
				}
				if c.msg != "" && e.Error.Message != c.msg {
					t.Errorf("message %q, want %q", e.Error.Message, c.msg)
				}
				if !strings.Contains(e.Error.Message, c.has) {
					t.Errorf("message %q lacks %q", e.Error.Message, c.has)
				}
				if string(e.Error.Details) != c.details {
					t.Errorf("details %s, want %s", e.Error.Details, c.details)
				}
				if resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
				}
			})
		}
	})
}

func TestAnthropic_StreamFaults(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := anthropicRig(t, way, Provider{Script: []Fault{
			{Kind: StreamError, Chunks: 4},
			{Kind: StreamError, Body: `{"type":"error","error":{"type":"api_error","message":"boom"}}`},
			{Kind: ContentFilter}, {Kind: ContentFilter},
		}})
		stream := messagesBody("claude-haiku-4-5", true)

		// StreamError: the first 4 events, then event: error, and no message_stop.
		_, raw := r.postMessages(t, stream, anthropicVersion...)
		events := anthropicEvents(t, raw)
		var names []string
		for _, ev := range events {
			names = append(names, ev.name)
		}
		want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "error"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if last := events[len(events)-1].data; last != `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}` {
			t.Errorf("error event %s", last)
		}
		_, raw = r.postMessages(t, stream, anthropicVersion...)
		if events := anthropicEvents(t, raw); len(events) != 1 || events[0].data != `{"type":"error","error":{"type":"api_error","message":"boom"}}` {
			t.Errorf("custom error event: %v", events)
		}

		// ContentFilter: a 200 that stops with "refusal", without content.
		resp, body := r.postMessages(t, messagesBody("claude-haiku-4-5", false), anthropicVersion...)
		var m struct {
			Content    []json.RawMessage `json:"content"`
			StopReason string            `json:"stop_reason"`
		}
		if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != 200 || m.StopReason != "refusal" || m.Content == nil || len(m.Content) != 0 {
			t.Errorf("refusal: %d %s", resp.StatusCode, body)
		}
		_, raw = r.postMessages(t, stream, anthropicVersion...)
		names = nil
		for _, ev := range anthropicEvents(t, raw) {
			names = append(names, ev.name)
		}
		if diff := cmp.Diff([]string{"message_start", "ping", "message_delta", "message_stop"}, names); diff != "" || !strings.Contains(string(raw), `"stop_reason":"refusal"`) {
			t.Errorf("refusal stream (-want +got):\n%s\n%s", diff, raw)
		}
	})
}

func TestAnthropic_StreamCutFailsTheBodyRead(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := anthropicRig(t, way, Provider{Script: []Fault{{Kind: StreamCut, Chunks: 3}, {Kind: Reset}}})
		resp, err := r.ask(t, context.Background(), "claude", "m", true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("read error %v, want a broken stream", err)
		}
		if n := strings.Count(string(b), "\n\n"); n != 3 || strings.Contains(string(b), "message_stop") {
			t.Errorf("%d events before the cut:\n%s", n, b)
		}
		if _, err := r.ask(t, context.Background(), "claude", "m", false); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("reset: %v", err)
		}
	})
}

func TestAnthropic_RequestValidation(t *testing.T) {
	cases := []struct {
		name, body string
		header     []string
		status     int
		kind       Kind
		typ, msg   string
	}{
		{"no version header", messagesBody("known", false), nil, 400, BadRequest, "invalid_request_error", "anthropic-version: header is required"},
		{"bad JSON", `{"model":`, anthropicVersion, 400, BadRequest, "invalid_request_error", "The request body is not valid JSON: unexpected end of data: line 1 column 10 (char 9)"},
		{"bad character", "{\n\"model\": x}", anthropicVersion, 400, BadRequest, "invalid_request_error", "The request body is not valid JSON: unexpected character: line 2 column 10 (char 11)"},
		{"wrong type", `{"model":"known","max_tokens":"many","messages":[{"role":"user","content":"hi"}]}`, anthropicVersion, 400, BadRequest, "invalid_request_error", "max_tokens: Input should be a valid integer"},
		{"no model", `{"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, anthropicVersion, 400, BadRequest, "invalid_request_error", "model: Field required"},
		{"no messages", `{"model":"known","max_tokens":10}`, anthropicVersion, 400, BadRequest, "invalid_request_error", "messages: Field required"},
		{"messages not a list", `{"model":"known","max_tokens":10,"messages":"hi"}`, anthropicVersion, 400, BadRequest, "invalid_request_error", "messages: Input should be a valid list"},
		{"no max_tokens", `{"model":"known","messages":[{"role":"user","content":"hi"}]}`, anthropicVersion, 400, BadRequest, "invalid_request_error", "max_tokens: Field required"},
		{"empty messages", `{"model":"known","max_tokens":10,"messages":[]}`, anthropicVersion, 400, BadRequest, "invalid_request_error", "messages: at least one message is required"},
		{"unknown model", messagesBody("other", false), anthropicVersion, 404, ModelNotFound, "not_found_error", "model: other"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := anthropicRig(t, way, Provider{Models: []string{"known"}})
				resp, got := r.postMessages(t, c.body, c.header...)
				want := `{"type":"error","error":{"type":"` + c.typ + `","message":` + string(mustMarshal(t, c.msg)) + `},"request_id":"` + resp.Header.Get("Request-Id") + `"}`
				if resp.StatusCode != c.status || string(got) != want {
					t.Errorf("got %d %s\nwant %d %s", resp.StatusCode, got, c.status, want)
				}
				if n := r.srv.Stats().Served("claude", "", c.kind); n != 1 {
					t.Errorf("served %s %d times, want 1", c.kind, n)
				}
			})
		}
	})
}

func TestAnthropic_AuthAndRoutes(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := anthropicRig(t, way, Provider{Key: "sk-ant-right"})
		body := messagesBody("m", false)
		cases := []struct {
			name   string
			header []string
			status int
			msg    string
		}{
			{"no key", nil, 401, "x-api-key header is required"},
			{"wrong x-api-key", []string{"x-api-key", "sk-ant-wrong"}, 401, "invalid x-api-key"},
			{"wrong bearer", []string{"Authorization", "Bearer sk-ant-wrong"}, 401, "invalid x-api-key"},
			{"x-api-key", []string{"x-api-key", "sk-ant-right"}, 200, ""},
			{"bearer, as current SDKs send it", []string{"Authorization", "Bearer sk-ant-right"}, 200, ""},
		}
		for _, c := range cases {
			resp, got := r.postMessages(t, body, append(append([]string{}, anthropicVersion...), c.header...)...)
			if resp.StatusCode != c.status || !strings.Contains(string(got), c.msg) {
				t.Errorf("%s: %d %s", c.name, resp.StatusCode, got)
			}
		}
		if n := r.srv.Stats().Served("claude", "", Unauthorized); n != 3 {
			t.Errorf("unauthorized served %d times, want 3", n)
		}
		resp, got := r.mustDo(t, http.MethodPost, r.srv.BaseURL("claude")+"/v1/chat/completions", chatBody("m", false), "x-api-key", "sk-ant-right")
		if resp.StatusCode != 404 || !strings.Contains(string(got), `"type":"not_found_error"`) {
			t.Errorf("OpenAI route on an Anthropic provider: %d %s", resp.StatusCode, got)
		}
		resp, got = r.mustDo(t, http.MethodGet, r.srv.BaseURL("claude")+"/v1/messages", "")
		if resp.StatusCode != 405 || !strings.Contains(string(got), `"type":"error"`) {
			t.Errorf("GET /v1/messages: %d %s", resp.StatusCode, got)
		}
		if n := r.srv.Stats().Total(); n != 5 {
			t.Errorf("requests counted %d, want 5 (wrong routes are not chat requests)", n)
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
