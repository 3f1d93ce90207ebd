package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/detourhq/detour/ledger"
)

// dialectUpstream answers each dialect's path with a minimal valid answer,
// streamed when asked, and keeps the last request body.
type dialectUpstream struct {
	mu   sync.Mutex
	last []byte
}

func (u *dialectUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.last = b
	u.mu.Unlock()
	_ = json.Unmarshal(b, &body)
	stream, _ := body["stream"].(bool)
	switch {
	case strings.HasPrefix(r.URL.Path, "/gem/"):
		gem := `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2},"modelVersion":"g"}`
		if strings.Contains(r.URL.Path, "streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", gem)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(gem)) //nolint:errcheck // a test upstream
	case strings.HasPrefix(r.URL.Path, "/upa/"):
		writeAnswer(w, surfaces[1], stream)
	case strings.HasPrefix(r.URL.Path, "/rs/"):
		writeAnswer(w, responsesSurface, stream)
	default:
		writeAnswer(w, surfaces[0], stream)
	}
}

// responsesSurface holds a minimal Responses API answer, whole and
// streamed (the shapes of wire/responses/testdata, trimmed).
var responsesSurface = surface{name: "responses",
	answer: []byte(`{"id":"resp_1","object":"response","status":"completed","model":"m","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`),
	stream: []byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"ok\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"m\",\"output\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1,\"total_tokens\":2}}}\n\n")}

func writeAnswer(w http.ResponseWriter, sf surface, stream bool) {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(sf.stream) //nolint:errcheck // a test upstream
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(sf.answer) //nolint:errcheck // a test upstream
}

// beyondCanonical is the test's own reading of what a request carries
// beyond the fields every dialect translates: top-level fields other than
// those, and message parts, blocks and tool types other than text, tool
// calls and function tools. It is written apart from the gateway's
// reading, on decoded JSON, so that the two check each other.
func beyondCanonical(surfaceName string, req map[string]any) []string {
	covered := map[string][]string{
		"openai": {"model", "models", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
			"temperature", "top_p", "stop", "stream", "stream_options", "n", "response_format"},
		"anthropic": {"model", "messages", "system", "max_tokens", "temperature", "top_p", "stop_sequences",
			"stream", "tools", "tool_choice"},
	}[surfaceName]
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for k, v := range req {
		if v != nil && !slices.Contains(covered, k) {
			add(k)
		}
	}
	if n, ok := req["n"].(float64); ok && n != 1 {
		add("n")
	}
	if req["response_format"] != nil {
		add("response_format")
	}
	var blocks func(parts []any)
	blocks = func(parts []any) {
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			switch t, _ := pm["type"].(string); t {
			case "text", "input_text", "refusal", "tool_use", "tool_result", "":
			default:
				add(t)
			}
			if pm["cache_control"] != nil {
				add("cache_control")
			}
			if inner, ok := pm["content"].([]any); ok {
				blocks(inner) // a tool result's blocks
			}
		}
	}
	if tc, _ := req["tool_choice"].(map[string]any); tc["disable_parallel_tool_use"] == true {
		add("disable_parallel_tool_use")
	}
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		parts, _ := mm["content"].([]any)
		blocks(parts)
		if mm["role"] == "function" {
			add("function")
		}
		for k, v := range mm {
			switch k {
			case "role", "content", "name", "tool_calls", "tool_call_id":
			default:
				if v != nil {
					add(k)
				}
			}
		}
	}
	tools, _ := req["tools"].([]any)
	for _, tl := range tools {
		tm, _ := tl.(map[string]any)
		if f, _ := tm["function"].(map[string]any); f != nil && f["strict"] == true {
			add("strict")
		}
		if typ, _ := tm["type"].(string); typ != "" && typ != "custom" && typ != "function" {
			add(typ)
		}
	}
	return out
}

// TestFidelity_CrossDialectNothingLostQuietly sends every corpus request
// to a target of each other dialect. Each is either translated (each
// message's text and each tool's name reach the upstream, each image and
// document in the target dialect's form: checkMedia), with what the
// target went without named in x-detour-dropped and the answer degraded;
// or refused before any send with 400 unsupported_request, the ledger
// saying skipped_contract and naming what it could not carry. Nothing
// beyond the canonical fields reaches a target of another dialect
// unnamed.
func TestFidelity_CrossDialectNothingLostQuietly(t *testing.T) {
	up := &dialectUpstream{}
	ts, book := corpusGateway(t, up)
	tally := map[string]int{}
	for _, sf := range surfaces {
		for _, target := range []string{"up", "upa", "gem", "rs"} {
			if target == sf.provider {
				continue
			}
			for _, file := range files(t, sf.dir+"/requests") {
				name := filepath.Base(file)
				if _, bad := invalidEverywhere[name]; bad && sf.name == "openai" {
					continue
				}
				row := sf.name + "-to-" + target + "/" + name
				t.Run(row, func(t *testing.T) {
					raw, err := os.ReadFile(file)
					if err != nil {
						t.Fatal(err)
					}
					req := readJSON(t, raw)
					want := beyondCanonical(sf.name, req)
					if target == "rs" && (req["stop"] != nil || req["stop_sequences"] != nil) {
						want = append(want, "stop") // the Responses API takes no stop sequences
					}
					req["model"] = target + "/m"
					body, _ := json.Marshal(req)
					before := len(book.Records())
					up.mu.Lock()
					up.last = nil
					up.mu.Unlock()
					resp, out := postResp(t, ts, sf.path, body)
					recs := book.Records()[before:]
					if want, ok := mediaRows[row]; ok && (want == "translated") != (resp.StatusCode == http.StatusOK) {
						t.Errorf("%s: want it %s, got %d: %s", row, want, resp.StatusCode, out)
					}
					switch resp.StatusCode {
					case http.StatusOK:
						tally["translated"]++
						dropped := splitList(resp.Header.Get("X-Detour-Dropped"))
						if len(dropped) > 0 {
							tally["with drops"]++
							if resp.Header.Get("X-Detour-Degraded") != "true" {
								t.Errorf("dropped %v but not degraded", dropped)
							}
						}
						for _, need := range want {
							if need == "response_format" || isMediaNeed(need) {
								continue // every dialect carries it (Anthropic as a forced tool); checkMedia checks media
							}
							if !coveredBy(need, dropped) {
								t.Errorf("%q reached a %s target, not carried and not named in x-detour-dropped %v", need, target, dropped)
							}
						}
						up.mu.Lock()
						sent := string(up.last)
						up.mu.Unlock()
						for _, text := range texts(req, target == "gem") {
							if !strings.Contains(sent, jsonText(text)) {
								t.Errorf("the text %q did not reach the upstream:\n%s", text, sent)
							}
						}
						if media := mediaOf(sf.name, req); len(media) > 0 {
							tally["with media"]++
							checkMedia(t, target, readJSON(t, []byte(sent)), media, dropped)
						}
					case http.StatusBadRequest:
						if len(recs) == 0 || recs[0].Status != ledger.StatusSkippedContract {
							// Invalid everywhere (the parser refused it): fine,
							// but say so in the tally.
							tally["invalid"]++
							t.Logf("400: %s", out)
							return
						}
						tally["refused"]++
						if len(recs) != 1 || recs[0].Status != ledger.StatusSkippedContract {
							t.Fatalf("a refusal without one skipped_contract record: %+v", recs)
						}
						if len(want) == 0 {
							t.Errorf("refused with nothing beyond the canonical fields: %s", recs[0].Reason)
						}
					default:
						t.Fatalf("answered %d: %s", resp.StatusCode, out)
					}
				})
			}
		}
	}
	t.Logf("cross-dialect outcomes: %v", tally)
	if tally["translated"] == 0 || tally["refused"] == 0 || tally["with media"] == 0 {
		t.Errorf("the matrix never translated or never refused: %v", tally)
	}
}

// coveredBy reports whether need is named in dropped, whatever words the
// gateway used for it ("image_url" part vs "image input").
func coveredBy(need string, dropped []string) bool {
	for _, d := range dropped {
		if d == need || strings.Contains(d, need) || strings.Contains(need, strings.Fields(d)[0]) {
			return true
		}
	}
	return false
}

func splitList(h string) []string {
	var out []string
	for _, s := range strings.Split(h, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// texts returns the text of every message of req: a string content, or
// the text of its text parts and blocks.
// A tool result's text is left out when toolsStructured: Gemini carries it
// parsed, as a functionResponse object.
func texts(req map[string]any, toolsStructured bool) []string {
	var out []string
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if toolsStructured && mm["role"] == "tool" {
			continue
		}
		switch c := mm["content"].(type) {
		case string:
			if c != "" {
				out = append(out, c)
			}
		case []any:
			for _, p := range c {
				pm, _ := p.(map[string]any)
				if s, _ := pm["text"].(string); s != "" && (pm["type"] == "text" || pm["type"] == "input_text") {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// jsonText is s as it stands inside a JSON string (escaped, unquoted): the
// form an upstream body holds it in.
func jsonText(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) //nolint:errcheck // a string always encodes
	out := strings.TrimSpace(b.String())
	return out[1 : len(out)-1]
}

func postResp(t *testing.T, ts *httptest.Server, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}
