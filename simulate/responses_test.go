package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/responses"
)

// responsesToolRequest is the recorded Responses request of
// maruel/genai gpt-5-mini/GenSync-Tools-SquareRoot-1.yaml (stream: %s).
const responsesToolRequest = `{"model":"gpt-5-mini","background":false,"parallel_tool_calls":true,"reasoning":{"summary":"auto"},"service_tier":"flex","store":false,"tool_choice":"required","tools":[{"type":"function","name":"square_root","description":"Calculates and return the square root of a number","parameters":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"number":{"type":"number"}},"additionalProperties":false,"type":"object","required":["number"]}}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Use the square_root tool to calculate the square root of 132413 and reply with only the result. Do not give an explanation."}]}],"stream":%s}`

func responsesRig(t *testing.T, way string, p Provider) *rig {
	t.Helper()
	p.Dialect = DialectResponses
	if p.Name == "" {
		p.Name = "rs"
	}
	return newRig(t, way, p)
}

// The answers have the recorded shapes: a response object with the
// message and usage, the event stream with every event named and numbered
// from 0, a function call for a request with tools; the wire/responses
// decoder reads each as the answer it is.
func TestResponses_AnswersInTheRecordedShapes(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := responsesRig(t, way, Provider{Name: "rs", Key: "sk-rs"})
		resp, body := r.mustAsk(t, "rs", "gpt-5-mini", false, "Authorization", "Bearer sk-rs")
		var obj struct {
			ID, Object, Status, Model string
			Output                    []struct {
				Type, Role string
				Content    []struct{ Type, Text string }
			}
			Usage struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal(body, &obj); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(obj.ID, "resp_") ||
			obj.Object != "response" || obj.Status != "completed" || obj.Model != "gpt-5-mini" || len(obj.Output) != 1 ||
			obj.Output[0].Content[0].Text != "Hello from rs/gpt-5-mini." || obj.Usage.TotalTokens != obj.Usage.InputTokens+obj.Usage.OutputTokens ||
			resp.Header.Get("X-Request-Id") == "" || strings.HasSuffix(string(body), "\n") {
			t.Fatalf("%d %s (%v)", resp.StatusCode, body, err)
		}
		res, err := decodeResponse(DialectResponses, replay(resp.Header, body))
		if err != nil || res.Message.Content != "Hello from rs/gpt-5-mini." || res.FinishReason != llm.FinishStop || res.ProviderRequestID == "" {
			t.Errorf("decoded %+v, %v", res, err)
		}

		resp, body = r.mustAsk(t, "rs", "gpt-5-mini", true, "Authorization", "Bearer sk-rs")
		for i, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
			name, data, ok := strings.Cut(ev, "\ndata: ")
			var e struct {
				Type string `json:"type"`
				Seq  *int   `json:"sequence_number"`
			}
			if !ok || json.Unmarshal([]byte(data), &e) != nil || "event: "+e.Type != name || e.Seq == nil || *e.Seq != i {
				t.Fatalf("event %d %q: want `event: TYPE` and data of that type numbered %d", i, ev, i)
			}
		}
		s := summarize(drain(decodeStream(t, DialectResponses, replay(resp.Header, body))))
		if s.err != nil || s.text != "Hello from rs/gpt-5-mini." || s.finish != llm.FinishStop || s.usage == nil || s.usage.OutputTokens == 0 {
			t.Errorf("stream %+v", s)
		}

		for _, stream := range []string{"false", "true"} {
			resp, body = r.mustDo(t, http.MethodPost, r.srv.BaseURL("rs")+"/responses", fmt.Sprintf(responsesToolRequest, stream), "Authorization", "Bearer sk-rs")
			var a *llm.Response
			var err error
			if stream == "true" {
				a, err = llm.Assemble(decodeStream(t, DialectResponses, replay(resp.Header, body)))
			} else {
				a, err = decodeResponse(DialectResponses, replay(resp.Header, body))
			}
			if err != nil || a.FinishReason != llm.FinishToolCalls || len(a.Message.ToolCalls) != 1 ||
				a.Message.ToolCalls[0].Name != "square_root" || a.Message.ToolCalls[0].Arguments != `{"number":1}` ||
				!strings.HasPrefix(a.Message.ToolCalls[0].ID, "call_") {
				t.Errorf("stream %s: tool answer %+v, %v\n%s", stream, a, err, body)
			}
		}
	})
}

// Each fault takes the Responses API's shape, and the wire/responses
// decoder and classify give it the kind detour must assign.
func TestResponses_FaultsReadAsTheirKinds(t *testing.T) {
	now := time.Now()
	bio := `{"type":"response.failed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"failed","model":"m","output":[],"error":{"code":"bio_policy","message":"blocked"}}}`
	rate := `{"type":"response.failed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"failed","model":"m","output":[],"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for m on tokens per min (TPM). Please try again in 2s."}}}`
	errEvent := `{"type":"error","sequence_number":9,"code":"server_error","message":"An error occurred while processing your request.","param":null}`
	for _, tc := range []struct {
		f      Fault
		stream bool
		kind   classify.Kind
		status int // of the HTTP answer
	}{
		{f: Fault{Kind: RateLimit, RetryAfter: 2 * time.Second}, kind: classify.Transient, status: 429},
		{f: Fault{Kind: DailyQuota}, kind: classify.Wall, status: 429},
		{f: Fault{Kind: InsufficientQuota}, kind: classify.Wall, status: 429},
		{f: Fault{Kind: NoCredits}, kind: classify.Wall, status: 402},
		{f: Fault{Kind: Unavailable}, kind: classify.Transient, status: 503},
		{f: Fault{Kind: ServerError}, kind: classify.Transient, status: 500},
		{f: Fault{Kind: Unauthorized}, kind: classify.Wall, status: 401},
		{f: Fault{Kind: BadRequest}, kind: classify.Invalid, status: 400},
		{f: Fault{Kind: ContextOverflow}, kind: classify.ContextOverflow, status: 400},
		{f: Fault{Kind: ModelNotFound}, kind: classify.Wall, status: 400},
		{f: Fault{Kind: ContentFilter}, kind: classify.Policy, status: 200},
		{f: Fault{Kind: ContentFilter}, stream: true, kind: classify.Policy, status: 200},
		{f: Fault{Kind: StreamError, Chunks: 5}, stream: true, kind: classify.Transient, status: 200},
		{f: Fault{Kind: StreamError, Chunks: 5, Body: bio}, stream: true, kind: classify.Policy, status: 200},
		{f: Fault{Kind: StreamError, Chunks: 2, Body: rate}, stream: true, kind: classify.Transient, status: 200},
		{f: Fault{Kind: StreamError, Chunks: 5, Body: errEvent}, stream: true, kind: classify.Transient, status: 200},
		{f: Fault{Kind: NoDone}, stream: true, kind: classify.Transient, status: 200},
		{f: Fault{Kind: StreamCut, Chunks: 5}, stream: true, kind: classify.Transient, status: 200},
	} {
		t.Run(fmt.Sprintf("%s/stream=%t/%.20s", tc.f.Kind, tc.stream, tc.f.Body), func(t *testing.T) {
			r := responsesRig(t, "memory", Provider{Script: []Fault{tc.f}})
			resp, err := r.ask(t, t.Context(), "rs", "m", tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.f.Kind == ContentFilter && tc.stream {
				// A refusal ends the stream with the content_filter
				// finish (the router's refusal); read whole, a policy error.
				s := summarize(drain(decodeStream(t, DialectResponses, resp)))
				if s.err != nil || s.finish != llm.FinishContentFilter || s.text != "" {
					t.Errorf("stream %+v, want a content_filter finish and no text", s)
				}
				resp, _ = r.ask(t, t.Context(), "rs", "m", true)
			}
			var derr error
			if tc.stream {
				_, derr = drain(decodeStream(t, DialectResponses, resp))
				if tc.f.Kind == ContentFilter {
					_, derr = decodeResponse(DialectResponses, resp)
				}
			} else {
				_, derr = decodeResponse(DialectResponses, resp)
			}
			if derr == nil {
				t.Fatal("no error")
			}
			if tc.f.Kind == ContentFilter && tc.stream {
				return // the second ask was scripted OK: its error is the first's only in the non-streamed read
			}
			if f := classify.Classify(derr, now); f.Kind != tc.kind {
				t.Errorf("classify = %s (%v), want %s", f.Kind, derr, tc.kind)
			}
			var pe *llm.ProviderError
			if errors.As(derr, &pe) && pe.Dialect != responses.Dialect {
				t.Errorf("ProviderError of dialect %q", pe.Dialect)
			}
		})
	}
}

// GET /v1/models lists the models; other paths are 404s in OpenAI's
// envelope; the key is checked as OpenAI does.
func TestResponses_Routes(t *testing.T) {
	r := responsesRig(t, "memory", Provider{Models: []string{"gpt-5-pro"}, Key: "k"})
	resp, body := r.mustDo(t, http.MethodGet, r.srv.BaseURL("rs")+"/models", "", "Authorization", "Bearer k")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"gpt-5-pro"`) {
		t.Errorf("models: %d %s", resp.StatusCode, body)
	}
	resp, body = r.mustDo(t, http.MethodPost, r.srv.BaseURL("rs")+"/chat/completions", chatBody("gpt-5-pro", false), "Authorization", "Bearer k")
	if resp.StatusCode != 404 || !strings.Contains(string(body), "Invalid URL") {
		t.Errorf("chat completions on a Responses provider: %d %s", resp.StatusCode, body)
	}
	resp, body = r.mustDo(t, http.MethodPost, r.srv.BaseURL("rs")+"/responses", responsesBody("nope", false), "Authorization", "Bearer k")
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"model_not_found"`) {
		t.Errorf("an unknown model: %d %s", resp.StatusCode, body)
	}
	resp, body = r.mustDo(t, http.MethodPost, r.srv.BaseURL("rs")+"/responses", `{"model":"gpt-5-pro"}`, "Authorization", "Bearer k")
	if resp.StatusCode != 400 || !strings.Contains(string(body), `'input'`) {
		t.Errorf("no input: %d %s", resp.StatusCode, body)
	}
	resp, _ = r.mustDo(t, http.MethodPost, r.srv.BaseURL("rs")+"/responses", responsesBody("gpt-5-pro", false))
	if resp.StatusCode != 401 {
		t.Errorf("no key: %d", resp.StatusCode)
	}
	io.Discard.Write(nil)
}
