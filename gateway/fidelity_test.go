package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/ledger"
)

// The fidelity corpus: real request and response bodies of both surfaces,
// from the official SDKs' test fixtures and the API docs
// (testdata/fidelity/SOURCES.md says where each came from).
const corpus = "../testdata/fidelity"

// recorder is an upstream of both dialects that keeps every request it
// gets and answers with the body the test gives it.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	header []http.Header
	// answer is the body and content type of the next answers.
	answer      []byte
	contentType string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.header = append(r.header, req.Header.Clone())
	answer, ct := r.answer, r.contentType
	r.mu.Unlock()
	w.Header().Set("Content-Type", ct)
	w.Write(answer) //nolint:errcheck // a test upstream
}

// last returns the last request body the upstream got.
func (r *recorder) last(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Fatal("the upstream got no request")
	}
	return r.bodies[len(r.bodies)-1]
}

func (r *recorder) lastHeader() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header[len(r.header)-1]
}

func (r *recorder) answerWith(body []byte, contentType string) {
	r.mu.Lock()
	r.answer, r.contentType = body, contentType
	r.mu.Unlock()
}

// fidelityGateway is a gateway in front of a recorder (corpusGateway).
func fidelityGateway(t *testing.T) (*recorder, *httptest.Server, *ledger.Memory) {
	t.Helper()
	rec := &recorder{}
	ts, book := corpusGateway(t, rec)
	return rec, ts, book
}

// corpusGateway is a gateway, no client key, in front of upstream as "up"
// (OpenAI dialect, /up/v1), "upa" (Anthropic, /upa) and "gem" (Gemini,
// /gem/v1beta).
func corpusGateway(t *testing.T, upstream http.Handler) (*httptest.Server, *ledger.Memory) {
	t.Helper()
	return yamlGateway(t, upstream, `providers:
  up:  {dialect: openai, base_url: %[1]s/up/v1, key_env: UP_KEY}
  upa: {dialect: anthropic, base_url: %[1]s/upa, key_env: UP_KEY}
  gem: {dialect: gemini, base_url: %[1]s/gem/v1beta, key_env: UP_KEY}
  rs:  {dialect: openai-responses, base_url: %[1]s/rs/v1, key_env: UP_KEY}
`)
}

// yamlGateway serves the config yaml, a format whose %[1]s is the URL of
// upstream (served by httptest), with a ledger in memory; UP_KEY holds
// upstreamKey and APP_KEY clientKey.
func yamlGateway(t *testing.T, upstream http.Handler, yaml string) (*httptest.Server, *ledger.Memory) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(yaml, up.URL)))
	if err != nil {
		t.Fatal(err)
	}
	book := &ledger.Memory{}
	env := map[string]string{"UP_KEY": upstreamKey, "APP_KEY": clientKey}
	gw, err := gateway.New(gateway.Config{File: cfg, Ledger: book, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)
	return ts, book
}

// files returns the corpus files of dir, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	out, err := filepath.Glob(filepath.Join(corpus, dir, "*"))
	if err != nil || len(out) == 0 {
		t.Fatalf("no corpus in %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}

func readJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return m
}

// post sends body to the gateway's path and returns the status and body.
func post(t *testing.T, ts *httptest.Server, path string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// surface is one of the gateway's two client surfaces and its provider.
type surface struct {
	name, dir, path, provider string
	// answer is a minimal valid answer in the dialect, streamed and not.
	answer, stream []byte
}

var surfaces = []surface{
	{name: "openai", dir: "openai", path: "/v1/chat/completions", provider: "up",
		answer: []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`),
		stream: []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":null}]}\n\n" +
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n")},
	{name: "anthropic", dir: "anthropic", path: "/v1/messages", provider: "upa",
		answer: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`),
		stream: []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")},
}

// invalidEverywhere are corpus requests the real API refuses too (the
// SDKs' "all params" fixtures send placeholder values): detour answers
// them 400 itself, sparing the send.
var invalidEverywhere = map[string]string{
	"35-sdk-all-params-python.json":        "max_tokens 0",
	"36-sdk-all-params-python-stream.json": "max_tokens 0",
	"37-sdk-all-params-go.json":            "max_tokens 0",
}

// TestFidelity_SameDialectRequestsArriveWhole sends every corpus request
// through the gateway to a provider of its own dialect: the provider gets
// it JSON-equal but for what detour owns (model names the target's; a
// stream asks for usage; a non-streamed call carries no stream fields).
func TestFidelity_SameDialectRequestsArriveWhole(t *testing.T) {
	for _, sf := range surfaces {
		rec, ts, _ := fidelityGateway(t)
		for _, file := range files(t, sf.dir+"/requests") {
			t.Run(sf.name+"/"+filepath.Base(file), func(t *testing.T) {
				raw, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				want := readJSON(t, raw)
				model, _ := want["model"].(string)
				if model == "" {
					model = "m"
				}
				stream, _ := want["stream"].(bool)
				if stream {
					rec.answerWith(sf.stream, "text/event-stream")
				} else {
					rec.answerWith(sf.answer, "application/json")
				}
				sent := readJSON(t, raw)
				sent["model"] = sf.provider + "/" + model
				body, _ := json.Marshal(sent)
				status, out := post(t, ts, sf.path, body, "Anthropic-Beta", "files-api-2025-04-14")
				if why, ok := invalidEverywhere[filepath.Base(file)]; ok && sf.name == "openai" {
					if status != http.StatusBadRequest {
						t.Errorf("a request the API refuses (%s) answered %d: %s", why, status, out)
					}
					return
				}
				if status != http.StatusOK {
					t.Fatalf("gateway answered %d: %s", status, out)
				}
				got := readJSON(t, rec.last(t))
				want["model"] = model
				if stream {
					if sf.name == "openai" {
						opts, _ := want["stream_options"].(map[string]any)
						if opts == nil {
							opts = map[string]any{}
						}
						opts["include_usage"] = true
						want["stream_options"] = opts
					}
				} else {
					delete(want, "stream")
					delete(want, "stream_options")
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("the upstream got\n%s\nwant\n%s", jsonOf(got), jsonOf(want))
				}
				if sf.name == "anthropic" && rec.lastHeader().Get("Anthropic-Beta") != "files-api-2025-04-14" {
					t.Errorf("anthropic-beta did not reach the upstream: %v", rec.lastHeader())
				}
			})
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// TestFidelity_SameDialectAnswersComeBackWhole replays every corpus answer
// from the upstream: the client gets it JSON-equal.
func TestFidelity_SameDialectAnswersComeBackWhole(t *testing.T) {
	for _, sf := range surfaces {
		rec, ts, _ := fidelityGateway(t)
		for _, file := range files(t, sf.dir+"/responses") {
			t.Run(sf.name+"/"+filepath.Base(file), func(t *testing.T) {
				answer, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				rec.answerWith(answer, "application/json")
				status, out := post(t, ts, sf.path, requestFor(sf, false))
				want := readJSON(t, answer)
				if stop, _ := want["stop_reason"].(string); stop == "refusal" {
					// A refusal fails closed: detour never passes it as an answer.
					if status != http.StatusBadRequest {
						t.Fatalf("a refusal answered %d: %s", status, out)
					}
					return
				}
				if choices, _ := want["choices"].([]any); len(choices) > 0 {
					if c, _ := choices[0].(map[string]any); c["finish_reason"] == "content_filter" {
						return
					}
				}
				if status != http.StatusOK {
					t.Fatalf("gateway answered %d: %s", status, out)
				}
				if got := readJSON(t, out); !reflect.DeepEqual(got, want) {
					t.Errorf("the client got\n%s\nwant\n%s", jsonOf(got), jsonOf(want))
				}
			})
		}
	}
}

// requestFor is a small request of surface sf to its provider.
func requestFor(sf surface, stream bool) []byte {
	if sf.name == "anthropic" {
		return []byte(fmt.Sprintf(`{"model":"upa/claude","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
	}
	return []byte(fmt.Sprintf(`{"model":"up/gpt","stream":%v,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, stream))
}

// event is one SSE event: its name and its data, decoded.
type event struct {
	name string
	data any
}

// events reads an SSE body into its events, leaving out comments, pings
// and the end markers ([DONE], message_stop) that a gateway writes itself.
func events(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	var name string
	var data []string
	flush := func() {
		if len(data) == 0 {
			name = ""
			return
		}
		d := strings.Join(data, "\n")
		name2 := name
		name, data = "", nil
		if d == "[DONE]" || name2 == "ping" || name2 == "message_stop" {
			return
		}
		var v any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("event data is not JSON: %q", d)
		}
		out = append(out, event{name2, v})
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return out
}

// TestFidelity_SameDialectStreamsComeBackWhole replays every corpus stream:
// the client gets every event, in order, JSON-equal (pings and the end
// marker aside, which the gateway writes itself).
func TestFidelity_SameDialectStreamsComeBackWhole(t *testing.T) {
	for _, sf := range surfaces {
		rec, ts, _ := fidelityGateway(t)
		for _, file := range files(t, sf.dir+"/streams") {
			t.Run(sf.name+"/"+filepath.Base(file), func(t *testing.T) {
				stream, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				rec.answerWith(stream, "text/event-stream")
				status, out := post(t, ts, sf.path, requestFor(sf, true))
				want := events(t, stream)
				if stop := stopReasonOf(want); stop == "refusal" {
					if status != http.StatusBadRequest && !bytes.Contains(out, []byte("content_filter")) {
						t.Fatalf("a refused stream answered %d: %s", status, out)
					}
					return
				}
				if status != http.StatusOK {
					t.Fatalf("gateway answered %d: %s", status, out)
				}
				got := events(t, out)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("the client got %d events, want %d:\n%s", len(got), len(want), diffEvents(got, want))
				}
			})
		}
	}
}

// stopReasonOf is the stop_reason of an Anthropic stream's message_delta.
func stopReasonOf(evs []event) string {
	for _, e := range evs {
		m, _ := e.data.(map[string]any)
		if d, _ := m["delta"].(map[string]any); d != nil {
			if s, _ := d["stop_reason"].(string); s != "" {
				return s
			}
		}
	}
	return ""
}

func diffEvents(got, want []event) string {
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i].name + " " + jsonOf(got[i].data)
		}
		if i < len(want) {
			w = want[i].name + " " + jsonOf(want[i].data)
		}
		if g != w {
			fmt.Fprintf(&b, "event %d:\n got %s\nwant %s\n", i, g, w)
		}
	}
	return b.String()
}
