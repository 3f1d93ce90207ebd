package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// rsFixture is a gateway in front of fake providers "oa" (OpenAI dialect;
// "oar" is the same one declared to reason) and "an" (Anthropic dialect),
// with the routes the test gives, and a record of every upstream request
// body.
type rsFixture struct {
	ts     *httptest.Server
	sim    *sim.Server
	ledger *ledger.Memory
	mu     sync.Mutex
	bodies []string // the upstream request bodies, in order
}

// newRsFixture starts the providers and the gateway; routes is YAML
// indented two spaces, under routes:.
func newRsFixture(t *testing.T, routes string, oa, an sim.Provider) *rsFixture {
	t.Helper()
	oa.Name, an.Name, an.Dialect = "oa", "an", sim.DialectAnthropic
	srv, err := sim.NewServer(oa, an)
	if err != nil {
		t.Fatal(err)
	}
	f := &rsFixture{ledger: &ledger.Memory{}, sim: srv}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { up.Close(); srv.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  oa: {base_url: `+up.URL+`/oa/v1, key_env: OA_KEY}
  an: {dialect: anthropic, base_url: `+up.URL+`/an, key_env: AN_KEY}
  oar: {base_url: `+up.URL+`/oa/v1, key_env: OA_KEY, offers: [reasoning, tools]}
routes:
`+routes))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OA_KEY": upstreamKey + "o", "AN_KEY": upstreamKey + "a"}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }, Ledger: f.ledger})
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(gw)
	t.Cleanup(f.ts.Close)
	return f
}

// client returns an official OpenAI client for the gateway, without
// retries of its own.
func (f *rsFixture) client() *openai.Client {
	c := openai.NewClient(option.WithBaseURL(f.ts.URL+"/v1"), option.WithAPIKey("any"), option.WithMaxRetries(0))
	return &c
}

// last returns the last upstream request body.
func (f *rsFixture) last(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("no upstream request")
	}
	return f.bodies[len(f.bodies)-1]
}

// sends returns how many requests reached the providers.
func (f *rsFixture) sends() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// echo answers with the system prompt and the prompt it got.
func echo(q sim.Question) sim.Reply {
	return sim.Reply{Text: "sys=" + q.System + " prompt=" + q.Prompt}
}

const rsRoutes = `  gpt: {chain: [oa/m], budget: {base_backoff: 1ms, max_backoff: 2ms}}
  claude: {chain: [an/claude-x], budget: {base_backoff: 1ms, max_backoff: 2ms}}
`

// rsWeatherTool is a function tool whose schema requires a city.
func rsWeatherTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}, false)
}

// The SDK's Responses.New gets a completed response object from either
// upstream dialect: instructions as the system prompt, the model that
// answered, the usage, and the x-detour-* headers.
func TestSDKResponses_TextFromEitherDialect(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{Answer: echo}, sim.Provider{Answer: echo})
	for _, tc := range []struct{ route, model, provider string }{{"gpt", "m", "oa"}, {"claude", "claude-x", "an"}} {
		t.Run(tc.route, func(t *testing.T) {
			var hr *http.Response
			resp, err := f.client().Responses.New(ctx(t), responses.ResponseNewParams{
				Model:        tc.route,
				Instructions: openai.String("be brief"),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hi there")},
				Store:        openai.Bool(false),
			}, option.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := resp.OutputText(), "sys=be brief prompt=hi there"; got != want {
				t.Errorf("OutputText = %q, want %q", got, want)
			}
			if !strings.HasPrefix(resp.ID, "resp_") || resp.Object != "response" || resp.Status != responses.ResponseStatusCompleted ||
				resp.CreatedAt == 0 || resp.Model != tc.model || resp.Instructions.OfString != "be brief" {
				t.Errorf("response %s", resp.RawJSON())
			}
			u := resp.Usage
			if u.InputTokens == 0 || u.OutputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens ||
				!u.JSON.InputTokensDetails.Valid() || !u.JSON.OutputTokensDetails.Valid() {
				t.Errorf("usage %s", u.RawJSON())
			}
			if len(resp.Output) != 1 || resp.Output[0].Type != "message" || resp.Output[0].Status != "completed" {
				t.Errorf("output %s", resp.RawJSON())
			}
			h := hr.Header
			if h.Get("X-Detour-Route") != tc.route || h.Get("X-Detour-Provider") != tc.provider ||
				h.Get("X-Detour-Model") != tc.model || h.Get("X-Detour-Attempts") != "1" || h.Get("X-Detour-Degraded") != "false" {
				t.Errorf("headers %v", h)
			}
		})
	}
}

// A function call round trip: the model's call comes back as a
// function_call item; the next request sends it with its
// function_call_output, and the upstream gets the assistant's tool call
// and the tool's result in its own dialect.
func TestSDKResponses_FunctionCallRoundTrip(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{Answer: echo}, sim.Provider{Answer: echo})
	// The Anthropic upstream's last user turn holds the tool result alone:
	// no prompt text.
	for _, tc := range []struct{ route, call, result, answer string }{
		{"gpt", `"tool_calls":[{"id":"CALL"`, `"role":"tool","content":"18C and sunny","tool_call_id":"CALL"`, "sys= prompt=Weather in Paris?"},
		{"claude", `"type":"tool_use","id":"CALL"`, `"type":"tool_result","tool_use_id":"CALL","content":"18C and sunny"`, "sys= prompt="},
	} {
		t.Run(tc.route, func(t *testing.T) {
			c := f.client()
			user := responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)
			resp, err := c.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: tc.route, Tools: []responses.ToolUnionParam{rsWeatherTool()},
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" {
				t.Fatalf("output %s", resp.RawJSON())
			}
			call := resp.Output[0].AsFunctionCall()
			var args struct{ City *string }
			if call.Name != "get_weather" || call.CallID == "" || json.Unmarshal([]byte(call.Arguments), &args) != nil || args.City == nil {
				t.Fatalf("function call %s", resp.Output[0].RawJSON())
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput("18C and sunny")
			out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			resp, err = c.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: tc.route,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user,
					responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name), out}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.OutputText(); got != tc.answer {
				t.Errorf("OutputText = %q", got)
			}
			sent := f.last(t)
			for _, want := range []string{strings.ReplaceAll(tc.call, "CALL", call.CallID), strings.ReplaceAll(tc.result, "CALL", call.CallID)} {
				if !strings.Contains(sent, want) {
					t.Errorf("upstream got %s\nwant it to hold %s", sent, want)
				}
			}
		})
	}
}

// forecast is the structured answer of TestSDKResponses_StructuredOutput.
type forecast struct {
	City  *string  `json:"city"`
	TempC *float64 `json:"temp_c"`
}

// text.format json_schema reaches an OpenAI upstream as response_format,
// and an Anthropic fallback (after a wall on the first target) as a
// forced tool: either way the answer's text parses into the schema.
func TestSDKResponses_StructuredOutput(t *testing.T) {
	schema := map[string]any{"type": "object", "required": []string{"city", "temp_c"}, "additionalProperties": false,
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "number"}}}
	params := responses.ResponseNewParams{
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris as JSON")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "forecast", Schema: schema, Strict: openai.Bool(true)}}},
	}
	json := func(sim.Question) sim.Reply { return sim.Reply{Text: `{"city":"Paris","temp_c":18}`} }
	t.Run("openai", func(t *testing.T) {
		f := newRsFixture(t, rsRoutes, sim.Provider{Answer: json}, sim.Provider{})
		p := params
		p.Model = "gpt"
		resp, err := f.client().Responses.New(ctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		var got forecast
		if err := jsonUnmarshal(resp.OutputText(), &got); err != nil || got.City == nil || *got.City != "Paris" {
			t.Errorf("answer %q: %v", resp.OutputText(), err)
		}
		if sent := f.last(t); !strings.Contains(sent, `"response_format":{"json_schema":{"name":"forecast","schema":{`) ||
			!strings.Contains(sent, `"strict":true`) {
			t.Errorf("upstream got %s", sent)
		}
	})
	t.Run("anthropic fallback", func(t *testing.T) {
		f := newRsFixture(t, `  mixed: {chain: [oa/m, an/claude-x], budget: {base_backoff: 1ms, max_backoff: 2ms}}
`, sim.Provider{Script: []sim.Fault{{Kind: sim.NoCredits}}}, sim.Provider{})
		p := params
		p.Model = "mixed"
		var hr *http.Response
		resp, err := f.client().Responses.New(ctx(t), p, option.WithResponseInto(&hr))
		if err != nil {
			t.Fatal(err)
		}
		var got forecast
		if err := jsonUnmarshal(resp.OutputText(), &got); err != nil || got.City == nil || got.TempC == nil {
			t.Errorf("answer %q: %v", resp.OutputText(), err)
		}
		if resp.Model != "claude-x" || hr.Header.Get("X-Detour-Provider") != "an" || hr.Header.Get("X-Detour-Attempts") != "2" {
			t.Errorf("model %q, headers %v", resp.Model, hr.Header)
		}
		if sent := f.last(t); !strings.Contains(sent, `"tool_choice":{"type":"tool"`) {
			t.Errorf("the Anthropic upstream got no forced tool: %s", sent)
		}
	})
}

// jsonUnmarshal decodes s into v, refusing unknown fields.
func jsonUnmarshal(s string, v any) error {
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// previous_response_id is a 400 the SDK reports as *openai.Error, sent
// once, with nothing sent upstream.
func TestSDKResponses_PreviousResponseIDIsRefused(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{}, sim.Provider{})
	c := openai.NewClient(option.WithBaseURL(f.ts.URL+"/v1"), option.WithAPIKey("any")) // the SDK's own retries on
	_, err := c.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: "gpt", PreviousResponseID: openai.String("resp_123"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and then?")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "previous_response_id" ||
		!strings.Contains(oe.Message, "detour keeps no responses or conversations") {
		t.Fatalf("err = %v", err)
	}
	if f.sends() != 0 || len(f.ledger.Records()) != 0 {
		t.Errorf("%d upstream sends, %d ledger records: want none", f.sends(), len(f.ledger.Records()))
	}
}

// A built-in tool no target can run is a 400 naming it, before any send.
func TestSDKResponses_BuiltInToolIsRefused(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{}, sim.Provider{})
	_, err := f.client().Responses.New(ctx(t), responses.ResponseNewParams{
		Model: "gpt", Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("news?")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != "unsupported_request" || !strings.Contains(oe.Message, "web_search tool") {
		t.Fatalf("err = %v", err)
	}
	if f.sends() != 0 {
		t.Errorf("%d upstream sends: want none", f.sends())
	}
}

// What no target carries but may go without (store: true, metadata,
// user) is dropped and said: degraded, named in x-detour-dropped; the
// response says store false, as nothing is kept.
func TestSDKResponses_StoreAndMetadataDroppedAndSaid(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{}, sim.Provider{})
	var hr *http.Response
	resp, err := f.client().Responses.New(ctx(t), responses.ResponseNewParams{
		Model: "gpt", Store: openai.Bool(true), Metadata: map[string]string{"job": "42"}, User: openai.String("u1"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get("X-Detour-Degraded") != "true" || hr.Header.Get("X-Detour-Dropped") != "store, metadata, user" {
		t.Errorf("headers %v", hr.Header)
	}
	if resp.Metadata["job"] != "42" || !strings.Contains(resp.RawJSON(), `"store":false`) {
		t.Errorf("response %s", resp.RawJSON())
	}
}

// An answer cut at max_output_tokens is status incomplete with reason
// max_output_tokens.
func TestSDKResponses_LengthIsIncomplete(t *testing.T) {
	cut := func(sim.Question) sim.Reply { return sim.Reply{Text: "Once upon a", Truncated: true} }
	f := newRsFixture(t, rsRoutes, sim.Provider{Answer: cut}, sim.Provider{})
	params := responses.ResponseNewParams{Model: "gpt", MaxOutputTokens: openai.Int(3),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a story")}}
	resp, err := f.client().Responses.New(ctx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != responses.ResponseStatusIncomplete || resp.IncompleteDetails.Reason != "max_output_tokens" ||
		resp.MaxOutputTokens != 3 || resp.OutputText() != "Once upon a" {
		t.Errorf("response %s", resp.RawJSON())
	}
	if !strings.Contains(f.last(t), `"max_tokens":3`) && !strings.Contains(f.last(t), `"max_completion_tokens":3`) {
		t.Errorf("upstream got %s", f.last(t))
	}
	s := f.client().Responses.NewStreaming(ctx(t), params)
	var last responses.ResponseStreamEventUnion
	for s.Next() {
		last = s.Current()
	}
	if s.Err() != nil || last.Type != "response.incomplete" || last.Response.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("stream ended with %v, %s", s.Err(), last.RawJSON())
	}
}

// reasoning.effort reaches a target declared to reason as
// reasoning_effort; a target not declared to is skipped for it, so the
// request fails closed with a 400 naming it, before any send.
func TestSDKResponses_ReasoningEffort(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{}, sim.Provider{})
	params := responses.ResponseNewParams{Model: "oar/m", Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("think")}}
	if _, err := f.client().Responses.New(ctx(t), params); err != nil {
		t.Fatal(err)
	}
	if sent := f.last(t); !strings.Contains(sent, `"reasoning_effort":"low"`) {
		t.Errorf("upstream got %s", sent)
	}
	params.Model = "gpt"
	_, err := f.client().Responses.New(ctx(t), params)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != "unsupported_request" || !strings.Contains(oe.Message, "reasoning_effort") {
		t.Fatalf("err = %v", err)
	}
	if f.sends() != 1 {
		t.Errorf("%d upstream sends, want 1", f.sends())
	}
}
