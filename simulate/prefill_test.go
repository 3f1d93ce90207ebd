package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

// askWith sends body to provider p's chat route for model m in p's dialect.
func (r *rig) askWith(t *testing.T, p, m string, stream bool, body string) (*http.Response, error) {
	t.Helper()
	base := r.srv.BaseURL(p)
	switch r.srv.Dialect(p) {
	case DialectAnthropic:
		return r.do(t, context.Background(), http.MethodPost, base+"/v1/messages", body, anthropicVersion...)
	case DialectGemini:
		return r.do(t, context.Background(), http.MethodPost, base+geminiPath(m, stream), body)
	case DialectResponses:
		return r.do(t, context.Background(), http.MethodPost, base+"/responses", body)
	}
	return r.do(t, context.Background(), http.MethodPost, base+"/chat/completions", body)
}

// prefillBodies are requests for model m whose last turn is a partial
// assistant answer (a prefill), in each dialect.
var prefillBodies = map[Dialect]string{
	DialectOpenAI:    `{"model":"m","stream":true,"messages":[{"role":"user","content":"Say hello."},{"role":"assistant","content":"Hello fr"}]}`,
	DialectAnthropic: `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Say hello."},{"role":"assistant","content":"Hello fr"}]}`,
	DialectGemini:    `{"contents":[{"role":"user","parts":[{"text":"Say hello."}]},{"role":"model","parts":[{"text":"Hello fr"}]}]}`,
	DialectResponses: `{"model":"m","stream":true,"input":[{"role":"user","content":"Say hello."},{"role":"assistant","content":"Hello fr"}]}`,
}

func TestNoPrefill_TheRefusalInEachDialect(t *testing.T) {
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: d, NoPrefill: true, Script: Faults(RateLimit)},
					Provider{Name: "q", Dialect: d})
				resp, body := r.mustDoWith(t, "p", prefillBodies[d])
				if resp.StatusCode != 400 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				var got struct {
					Type  string `json:"type"`
					Error struct {
						Type    string  `json:"type"`
						Message string  `json:"message"`
						Param   *string `json:"param"`
						Code    any     `json:"code"`
						Status  string  `json:"status"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &got); err != nil || got.Error.Message != prefillMessage {
					t.Fatalf("body %s: %v", body, err)
				}
				switch d {
				case DialectAnthropic:
					if got.Type != "error" || got.Error.Type != "invalid_request_error" {
						t.Errorf("anthropic body %s", body)
					}
				case DialectGemini:
					if got.Error.Code != float64(400) || got.Error.Status != "INVALID_ARGUMENT" {
						t.Errorf("gemini body %s", body)
					}
				default:
					if got.Error.Type != "invalid_request_error" || got.Error.Param == nil || *got.Error.Param != "messages" {
						t.Errorf("openai body %s", body)
					}
				}
				// Through the decoder: a 400 ProviderError carrying the message.
				resp, err := r.askWith(t, "p", "m", true, prefillBodies[d])
				if err != nil {
					t.Fatal(err)
				}
				var pe *llm.ProviderError
				if _, err := decodeResponse(d, resp); !errors.As(err, &pe) || pe.Status != 400 || pe.Message != prefillMessage {
					t.Errorf("decoded: %v", err)
				}
				// The script was not used up; a provider without NoPrefill answers.
				if resp, _ := r.mustAsk(t, "p", "m", false); resp.StatusCode != 429 {
					t.Errorf("after the refusals: status %d, want the scripted 429", resp.StatusCode)
				}
				if resp, body := r.mustDoWith(t, "q", prefillBodies[d]); resp.StatusCode != 200 {
					t.Errorf("without NoPrefill: %d %s", resp.StatusCode, body)
				}
				var kinds []Kind
				var roles []string
				for _, rec := range r.srv.Stats().Records {
					kinds, roles = append(kinds, rec.Kind), append(roles, rec.LastRole)
				}
				if diff := cmp.Diff([]Kind{BadRequest, BadRequest, RateLimit, OK}, kinds); diff != "" {
					t.Errorf("kinds (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"assistant", "assistant", "user", "assistant"}, roles); diff != "" {
					t.Errorf("last roles (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// mustDoWith is askWith for a streamed request to model m, returning the whole body.
func (r *rig) mustDoWith(t *testing.T, p, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := r.askWith(t, p, "m", true, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestRecord_LastRole(t *testing.T) {
	cases := []struct {
		d    Dialect
		body string
		want string
	}{
		{DialectOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"}]}`, "tool"},
		{DialectOpenAI, `{"model":"m","messages":[{"role":"system","content":"be brief"}]}`, "system"},
		{DialectAnthropic, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "user"},
		{DialectGemini, `{"contents":[{"parts":[{"text":"hi"}]}]}`, "user"},
		{DialectGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"He"}]}]}`, "assistant"},
		{DialectResponses, `{"model":"m","input":"hi"}`, "user"},
		{DialectResponses, `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"}]}`, "tool"},
		{DialectResponses, `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":"He"}]}`, "assistant"},
	}
	for _, c := range cases {
		r := newRig(t, "memory", Provider{Name: "p", Dialect: c.d, Key: "k"})
		header := map[Dialect][]string{DialectOpenAI: {"Authorization", "Bearer k"},
			DialectAnthropic: {"anthropic-version", "2023-06-01", "x-api-key", "k"}, DialectGemini: {"x-goog-api-key", "k"},
			DialectResponses: {"Authorization", "Bearer k"}}[c.d]
		url := map[Dialect]string{DialectOpenAI: "/chat/completions", DialectAnthropic: "/v1/messages", DialectGemini: geminiPath("m", false),
			DialectResponses: "/responses"}[c.d]
		if resp, body := r.mustDo(t, http.MethodPost, r.srv.BaseURL("p")+url, c.body, header...); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.d, resp.StatusCode, body)
		}
		r.mustDo(t, http.MethodPost, r.srv.BaseURL("p")+url, c.body) // no key: rejected before the body is read
		recs := r.srv.Stats().Records
		if len(recs) != 2 || recs[0].LastRole != c.want || recs[1].Kind != Unauthorized || recs[1].LastRole != "" {
			t.Errorf("%s %s: records %+v, want last role %q then an Unauthorized without one", c.d, c.body, recs, c.want)
		}
	}
}
