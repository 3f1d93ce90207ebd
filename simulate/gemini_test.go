package simulate

import (
	"bytes"
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

// geminiToolRequest is the recorded square_root request of maruel/genai's
// gemini GenSync-Tools-SquareRoot-1.yaml.
const geminiToolRequest = `{"contents":[{"role":"user","parts":[{"text":"Use the square_root tool to calculate the square root of 132413 and reply with only the result. Do not give an explanation."}]}],"tools":[{"functionDeclarations":[{"name":"square_root","description":"Calculates and return the square root of a number","parameters":{"properties":{"number":{"type":"NUMBER"}},"required":["number"],"type":"OBJECT"},"response":{"properties":{"response":{"type":"STRING"}},"required":["response"],"type":"OBJECT"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"generationConfig":{"responseModalities":["TEXT"],"thinkingConfig":{"includeThoughts":false,"thinkingBudget":0}}}`

func geminiRig(t *testing.T, way string, p Provider) *rig {
	t.Helper()
	p.Dialect = DialectGemini
	if p.Name == "" {
		p.Name = "gem"
	}
	return newRig(t, way, p)
}

// generate posts body to the gem provider's model (stream: streamGenerateContent?alt=sse).
func (r *rig) generate(t *testing.T, model string, stream bool, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return r.mustDo(t, http.MethodPost, r.srv.BaseURL("gem")+geminiPath(model, stream), body, header...)
}

// geminiStatus is a google.rpc.Status as the tests read it.
type geminiStatus struct {
	Error struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Status  string            `json:"status"`
		Details []json.RawMessage `json:"details"`
	} `json:"error"`
}

// detail returns the detail of type typ ("QuotaFailure", "RetryInfo" ...) as JSON, or "".
func (s geminiStatus) detail(typ string) string {
	for _, d := range s.Error.Details {
		var t struct {
			Type string `json:"@type"`
		}
		json.Unmarshal(d, &t)
		if t.Type == "type.googleapis.com/google.rpc."+typ {
			var b bytes.Buffer
			json.Compact(&b, d)
			return b.String()
		}
	}
	return ""
}

func TestGemini_GoldenBytes(t *testing.T) {
	cases := []struct {
		name, body, golden string
		stream             bool
	}{
		{"text", generateBody(), "gemini_text.json", false},
		{"text stream", generateBody(), "gemini_text_stream.sse", true},
		{"tool", geminiToolRequest, "gemini_tool.json", false},
		{"tool stream", geminiToolRequest, "gemini_tool_stream.sse", true},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := geminiRig(t, way, Provider{})
				resp, body := r.generate(t, "gemini-2.5-flash", c.stream, c.body)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				want := map[bool]string{false: "application/json; charset=UTF-8", true: "text/event-stream"}[c.stream]
				if got := resp.Header.Get("Content-Type"); got != want {
					t.Errorf("Content-Type %q, want %q", got, want)
				}
				golden(t, c.golden, body)
			})
		}
	})
}

// geminiChunk is the part of a GenerateContentResponse the tests read.
type geminiChunk struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
			Role string `json:"role"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		Index         *int   `json:"index"`
		SafetyRatings []struct {
			Category string `json:"category"`
			Blocked  bool   `json:"blocked"`
		} `json:"safetyRatings"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string          `json:"modelVersion"`
	ResponseID   string          `json:"responseId"`
	Error        json.RawMessage `json:"error"`
}

// TestGemini_StreamFollowsTheWire checks the stream's framing and the
// content of its chunks: one data line per event ended by "\r\n\r\n", no
// [DONE], each chunk a whole GenerateContentResponse with usage, model
// version and one response id, finishReason on the last chunk only.
func TestGemini_StreamFollowsTheWire(t *testing.T) {
	cases := []struct {
		name, body  string
		chunks      int
		text, call  string
		callArgs    string
		promptCount int
	}{
		{"text", generateBody(), 5, "Hello from gem/gemini-2.5-flash.", "", "", 9},
		{"function call arrives whole", geminiToolRequest, 1, "", "square_root", `{"number": 1}`, 0},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := geminiRig(t, way, Provider{})
				_, raw := r.generate(t, "gemini-2.5-flash", true, c.body)
				chunks := geminiChunks(t, raw)
				if len(chunks) != c.chunks {
					t.Fatalf("%d chunks, want %d:\n%s", len(chunks), c.chunks, raw)
				}
				var text strings.Builder
				ids := map[string]bool{}
				lastOut := 0
				for i, data := range chunks {
					var ch geminiChunk
					if err := json.Unmarshal([]byte(data), &ch); err != nil {
						t.Fatalf("chunk %d: %v", i, err)
					}
					if !strings.HasPrefix(data, `{"candidates": [{"content": {"parts": [`) {
						t.Errorf("chunk %d is not in the protobuf printer's layout: %s", i, data)
					}
					if ch.Error != nil || len(ch.Candidates) != 1 || ch.Candidates[0].Content == nil || ch.Candidates[0].Content.Role != "model" || ch.Candidates[0].Index == nil {
						t.Fatalf("chunk %d: %s", i, data)
					}
					u := ch.UsageMetadata
					if u == nil || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount || u.CandidatesTokenCount < lastOut || ch.ModelVersion != "gemini-2.5-flash" {
						t.Errorf("chunk %d usage or model: %s", i, data)
					}
					if c.promptCount != 0 && u != nil && u.PromptTokenCount != c.promptCount {
						t.Errorf("promptTokenCount %d, want %d", u.PromptTokenCount, c.promptCount)
					}
					if u != nil {
						lastOut = u.CandidatesTokenCount
					}
					ids[ch.ResponseID] = true
					last := i == len(chunks)-1
					if fr := ch.Candidates[0].FinishReason; (fr == "STOP") != last || (!last && fr != "") {
						t.Errorf("chunk %d finishReason %q", i, fr)
					}
					for _, p := range ch.Candidates[0].Content.Parts {
						if p.Text != nil {
							text.WriteString(*p.Text)
						}
						if fc := p.FunctionCall; fc != nil && (fc.Name != c.call || string(fc.Args) != c.callArgs) {
							t.Errorf("functionCall %s %s", fc.Name, fc.Args)
						}
					}
				}
				if text.String() != c.text {
					t.Errorf("text %q, want %q", text.String(), c.text)
				}
				if len(ids) != 1 {
					t.Errorf("response ids %v, want one", ids)
				}
			})
		}
	})
}

// TestGemini_MatchRecordedBodies expects the bytes (or, where the sample
// lost Google's whitespace, the JSON) of real Gemini answers.
func TestGemini_MatchRecordedBodies(t *testing.T) {
	samples := loadSamples(t)
	cases := []struct {
		name, sample string
		model        string
		stream       bool
		fault        Fault
		models       []string
		key          string
		header       []string
		sameJSON     bool   // compare decoded JSON: the sample's whitespace was collapsed
		subtree      string // compare only this top-level key's JSON (the sample was cut)
		want         string // when no sample
		status       int
	}{
		{name: "limit zero", sample: "gemini-429-limit-zero", model: "gemini-2.0-flash", fault: Fault{Kind: InsufficientQuota}},
		{name: "model not found", sample: "gemini-404-model-not-found", model: "gemini-exp-1206", models: []string{"gemini-2.5-flash"}},
		{name: "bad model name on the stream endpoint", sample: "gemini-400-bad-model-name", model: "bad model", stream: true},
		{name: "overloaded", sample: "gemini-503-model-overloaded", model: "gemini-2.5-pro", fault: Fault{Kind: Unavailable}, sameJSON: true},
		{name: "safety", sample: "gemini-200-finish-reason-safety", model: "gemini-2.5-flash", fault: Fault{Kind: ContentFilter}, subtree: "candidates"},
		// maruel/genai providers/gemini/testdata/TestClient/errors/bad_apiKey/GenSync.yaml
		{name: "bad key", model: "gemini-2.0-flash-lite", key: "right", header: []string{"x-goog-api-key", "bad apiKey"}, status: 400,
			want: "{\n  \"error\": {\n    \"code\": 400,\n    \"message\": \"API key not valid. Please pass a valid API key.\",\n    \"status\": \"INVALID_ARGUMENT\",\n    \"details\": [\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\",\n        \"reason\": \"API_KEY_INVALID\",\n        \"domain\": \"googleapis.com\",\n        \"metadata\": {\n          \"service\": \"generativelanguage.googleapis.com\"\n        }\n      },\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.LocalizedMessage\",\n        \"locale\": \"en-US\",\n        \"message\": \"API key not valid. Please pass a valid API key.\"\n      }\n    ]\n  }\n}\n"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := geminiRig(t, way, Provider{Models: c.models, Key: c.key, Script: []Fault{c.fault}})
				resp, got := r.generate(t, c.model, c.stream, generateBody(), c.header...)
				status, want, headers := c.status, c.want, map[string]string{}
				if c.sample != "" {
					s, ok := samples[c.sample]
					if !ok {
						t.Fatalf("sample %q not in the corpus", c.sample)
					}
					status, want, headers = s.Status, s.Body, s.Headers
				}
				if resp.StatusCode != status {
					t.Errorf("status %d, want %d", resp.StatusCode, status)
				}
				if ct, ok := headers["content-type"]; ok && resp.Header.Get("Content-Type") != ct {
					t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), ct)
				}
				switch {
				case c.subtree != "":
					var w, g map[string]any
					json.Unmarshal([]byte(want), &w)
					json.Unmarshal(got, &g)
					if diff := cmp.Diff(w[c.subtree], g[c.subtree]); diff != "" {
						t.Errorf("%s (-recorded +simulated):\n%s", c.subtree, diff)
					}
				case c.sameJSON:
					if diff := cmp.Diff(decode(t, []byte(want)), decode(t, got)); diff != "" {
						t.Errorf("JSON (-recorded +simulated):\n%s", diff)
					}
					if !strings.HasPrefix(string(got), "{\n  \"error\": {\n    \"code\": ") {
						t.Errorf("not pretty-printed as Google sends it:\n%s", got)
					}
				default:
					if diff := cmp.Diff(want, string(got)); diff != "" {
						t.Errorf("body (-recorded +simulated):\n%s", diff)
					}
				}
			})
		}
	})
}

// TestGemini_ErrorsEachKind checks the status, google.rpc status and
// details of every error kind in Gemini's native envelope.
func TestGemini_ErrorsEachKind(t *testing.T) {
	cases := []struct {
		name     string
		fault    Fault
		stream   bool
		status   int
		grpc     string
		msg      string // exact, when set
		has      string
		quota    string // the quotaId of the QuotaFailure detail
		retry    string // the RetryInfo detail's retryDelay, "" for none
		ctype    string
		noDetail bool
	}{
		{name: "rate limit is per minute", fault: Fault{Kind: RateLimit, RetryAfter: 37 * time.Second}, status: 429, grpc: "RESOURCE_EXHAUSTED",
			has: "You exceeded your current quota", quota: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", retry: "37s"},
		{name: "rate limit without hint", fault: Fault{Kind: RateLimit}, status: 429, grpc: "RESOURCE_EXHAUSTED",
			quota: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
		{name: "daily quota is per day with a short RetryInfo", fault: Fault{Kind: DailyQuota}, status: 429, grpc: "RESOURCE_EXHAUSTED",
			quota: "GenerateRequestsPerDayPerProjectPerModel-FreeTier", retry: "47s"},
		{name: "daily quota RetryInfo truncates", fault: Fault{Kind: DailyQuota, RetryAfter: 5900 * time.Millisecond}, status: 429, grpc: "RESOURCE_EXHAUSTED",
			quota: "GenerateRequestsPerDayPerProjectPerModel-FreeTier", retry: "5s"},
		{name: "insufficient quota is limit 0", fault: Fault{Kind: InsufficientQuota, RetryAfter: 3 * time.Second}, status: 429, grpc: "RESOURCE_EXHAUSTED",
			has: "limit: 0, model: gemini-2.5-flash\nPlease retry in 3s.", quota: "GenerateRequestsPerDayPerProjectPerModel-FreeTier", retry: "3s"},
		{name: "no credits is Gemini's prepay 402", fault: Fault{Kind: NoCredits}, status: 402, grpc: "RESOURCE_EXHAUSTED",
			msg: "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.", noDetail: true},
		{name: "unavailable", fault: Fault{Kind: Unavailable}, status: 503, grpc: "UNAVAILABLE", msg: "The model is overloaded. Please try again later.", noDetail: true},
		{name: "server error", fault: Fault{Kind: ServerError}, status: 500, grpc: "INTERNAL", has: "An internal error has occurred.", noDetail: true},
		{name: "stream error on a plain request", fault: Fault{Kind: StreamError}, status: 500, grpc: "INTERNAL"},
		{name: "bad request", fault: Fault{Kind: BadRequest, Param: "logprobs"}, status: 400, grpc: "INVALID_ARGUMENT",
			msg: `Invalid JSON payload received. Unknown name "logprobs": Cannot find field.`},
		{name: "context overflow", fault: Fault{Kind: ContextOverflow}, status: 400, grpc: "INVALID_ARGUMENT",
			msg: "The input token count (1048585) exceeds the maximum number of tokens allowed (1048576).", noDetail: true},
		{name: "model not found", fault: Fault{Kind: ModelNotFound}, status: 404, grpc: "NOT_FOUND", has: "models/gemini-2.5-flash is not found for API version v1beta"},
		{name: "errors on the stream endpoint are JSON labelled text/event-stream", fault: Fault{Kind: Unavailable}, stream: true,
			status: 503, grpc: "UNAVAILABLE", ctype: "text/event-stream"},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := geminiRig(t, way, Provider{Script: []Fault{c.fault}})
				resp, got := r.generate(t, "gemini-2.5-flash", c.stream, generateBody())
				var s geminiStatus
				if err := json.Unmarshal(got, &s); err != nil {
					t.Fatalf("body %s: %v", got, err)
				}
				if resp.StatusCode != c.status || s.Error.Code != c.status || s.Error.Status != c.grpc {
					t.Errorf("status %d, body code %d %s; want %d %s", resp.StatusCode, s.Error.Code, s.Error.Status, c.status, c.grpc)
				}
				ctype := c.ctype
				if ctype == "" {
					ctype = "application/json; charset=UTF-8"
				}
				if g := resp.Header.Get("Content-Type"); g != ctype {
					t.Errorf("Content-Type %q, want %q", g, ctype)
				}
				if c.msg != "" && s.Error.Message != c.msg {
					t.Errorf("message %q, want %q", s.Error.Message, c.msg)
				}
				if !strings.Contains(s.Error.Message, c.has) {
					t.Errorf("message %q lacks %q", s.Error.Message, c.has)
				}
				if c.quota != "" && !strings.Contains(s.detail("QuotaFailure"), `"quotaId":"`+c.quota+`"`) {
					t.Errorf("QuotaFailure %s lacks %s", s.detail("QuotaFailure"), c.quota)
				}
				if ri := s.detail("RetryInfo"); (c.retry == "") != (ri == "") || (c.retry != "" && ri != `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"`+c.retry+`"}`) {
					t.Errorf("RetryInfo %q, want delay %q", ri, c.retry)
				}
				if c.noDetail && len(s.Error.Details) != 0 {
					t.Errorf("details %s", got)
				}
				if _, ok := resp.Header["Retry-After"]; ok {
					t.Error("Gemini sends no Retry-After header")
				}
			})
		}
	})
}

func TestGemini_StreamFaults(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := geminiRig(t, way, Provider{Script: []Fault{
			{Kind: StreamError, Chunks: 2},
			{Kind: ContentFilter}, {Kind: ContentFilter},
			{Kind: StreamCut, Chunks: 3},
		}})
		// StreamError: two chunks, then a google.rpc.Status chunk, and nothing more.
		_, raw := r.generate(t, "gemini-2.5-flash", true, generateBody())
		chunks := geminiChunks(t, raw)
		if len(chunks) != 3 || chunks[2] != `{"error": {"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}}` {
			t.Fatalf("chunks:\n%s", strings.Join(chunks, "\n"))
		}
		for _, c := range chunks[:2] {
			if strings.Contains(c, `"finishReason"`) || strings.Contains(c, `"error"`) {
				t.Errorf("chunk before the error: %s", c)
			}
		}

		// ContentFilter: a 200 whose candidate stops with SAFETY, without content.
		for _, stream := range []bool{false, true} {
			resp, body := r.generate(t, "gemini-2.5-flash", stream, generateBody())
			data := string(body)
			if stream {
				cs := geminiChunks(t, body)
				if len(cs) != 1 {
					t.Fatalf("safety stream: %q", body)
				}
				data = cs[0]
			}
			var ch geminiChunk
			if err := json.Unmarshal([]byte(data), &ch); err != nil || resp.StatusCode != 200 || len(ch.Candidates) != 1 {
				t.Fatalf("safety: %d %s", resp.StatusCode, body)
			}
			c := ch.Candidates[0]
			if c.FinishReason != "SAFETY" || c.Content != nil || len(c.SafetyRatings) != 4 || !c.SafetyRatings[3].Blocked {
				t.Errorf("safety candidate: %s", data)
			}
		}

		// StreamCut: three chunks, then a broken body.
		resp, err := r.ask(t, context.Background(), "gem", "gemini-2.5-flash", true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("read error %v, want a broken stream", err)
		}
		if n := strings.Count(string(b), "\r\n\r\n"); n != 3 || strings.Contains(string(b), "finishReason") {
			t.Errorf("%d chunks before the cut:\n%s", n, b)
		}
	})
}

func TestGemini_RequestValidation(t *testing.T) {
	cases := []struct {
		name, model, body string
		stream            bool
		status            int
		kind              Kind
		grpc, msg         string
		ctype             string
	}{
		{"bad JSON", "known", `{"contents":`, false, 400, BadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. Unexpected token.", ""},
		{"wrong type", "known", `{"contents":[{"parts":[{"text":1}]}]}`, false, 400, BadRequest, "INVALID_ARGUMENT", "Invalid value at 'contents' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)", ""},
		{"no contents", "known", `{}`, false, 400, BadRequest, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified\n", ""},
		{"empty contents", "known", `{"contents":[]}`, true, 400, BadRequest, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified\n", "text/event-stream"},
		{"malformed model name", "bad model", generateBody(), false, 400, ModelNotFound, "INVALID_ARGUMENT", "* GenerateContentRequest.model: unexpected model name format\n", ""},
		{"unknown model", "other", generateBody(), false, 404, ModelNotFound, "NOT_FOUND", "models/other is not found for API version v1beta, or is not supported for generateContent. Call ModelService.ListModels to see the list of available models and their supported methods.", ""},
	}
	forEachWay(t, func(t *testing.T, way string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := geminiRig(t, way, Provider{Models: []string{"known"}})
				resp, got := r.generate(t, c.model, c.stream, c.body)
				var s geminiStatus
				if err := json.Unmarshal(got, &s); err != nil {
					t.Fatalf("body %s: %v", got, err)
				}
				if resp.StatusCode != c.status || s.Error.Status != c.grpc || s.Error.Message != c.msg {
					t.Errorf("got %d %s %q, want %d %s %q", resp.StatusCode, s.Error.Status, s.Error.Message, c.status, c.grpc, c.msg)
				}
				ctype := c.ctype
				if ctype == "" {
					ctype = "application/json; charset=UTF-8"
				}
				if g := resp.Header.Get("Content-Type"); g != ctype {
					t.Errorf("Content-Type %q, want %q", g, ctype)
				}
				if st := r.srv.Stats(); st.Served("gem", "", c.kind) != 1 || st.Records[0].Stream != c.stream {
					t.Errorf("records %+v, want one %s", st.Records, c.kind)
				}
			})
		}
	})
}

func TestGemini_AuthAndRoutes(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := geminiRig(t, way, Provider{Key: "AIza-right"})
		base := r.srv.BaseURL("gem")
		cases := []struct {
			name, url string
			header    []string
			status    int
			has       string
		}{
			{"no key", base + geminiPath("m", false), nil, 403, `"status": "PERMISSION_DENIED"`},
			{"wrong key", base + geminiPath("m", false), []string{"x-goog-api-key", "AIza-wrong"}, 400, `"reason": "API_KEY_INVALID"`},
			{"header key", base + geminiPath("m", false), []string{"x-goog-api-key", "AIza-right"}, 200, `"finishReason": "STOP"`},
			{"query key", base + geminiPath("m", false) + "?key=AIza-right", nil, 200, `"finishReason": "STOP"`},
			{"v1, as @google/genai 3.x posts", strings.Replace(base, "/v1beta", "/v1", 1) + geminiPath("m", true), []string{"x-goog-api-key", "AIza-right"}, 200, `"finishReason": "STOP"`},
			{"stream without alt=sse", base + "/models/m:streamGenerateContent", []string{"x-goog-api-key", "AIza-right"}, 400, "alt=sse only"},
		}
		for _, c := range cases {
			resp, got := r.mustDo(t, http.MethodPost, c.url, generateBody(), c.header...)
			if resp.StatusCode != c.status || !strings.Contains(string(got), c.has) {
				t.Errorf("%s: %d %s", c.name, resp.StatusCode, got)
			}
		}
		if n := r.srv.Stats().Served("gem", "", Unauthorized); n != 2 {
			t.Errorf("unauthorized served %d times, want 2", n)
		}
		for _, u := range []string{base + "/chat/completions", base + "/models/m:countTokens", base + "/models/m"} {
			resp, got := r.mustDo(t, http.MethodPost, u, generateBody(), "x-goog-api-key", "AIza-right")
			if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "text/html; charset=UTF-8" || !strings.Contains(string(got), "<title>Error 404 (Not Found)!!1</title>") {
				t.Errorf("POST %s: %d %s", u, resp.StatusCode, got)
			}
		}
		resp, _ := r.mustDo(t, http.MethodGet, base+geminiPath("m", false), "")
		if resp.StatusCode != 404 {
			t.Errorf("GET generateContent: %d", resp.StatusCode)
		}
		if n := r.srv.Stats().Total(); n != 6 {
			t.Errorf("requests counted %d, want 6 (wrong routes are not chat requests)", n)
		}
	})
}

func TestSpaceColons(t *testing.T) {
	in := `{"a":"x:y","b\":c":[1,{"d":null}],"e":"\\"}`
	want := `{"a": "x:y","b\":c": [1,{"d": null}],"e": "\\"}`
	if got := string(spaceColons([]byte(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
