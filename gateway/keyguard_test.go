package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
)

// The keys of the answer-key tests: a provider key with the OpenAI
// project prefix, and one whose start is the end of it (two keys that
// overlap in a text), both held by the gateway; the admin key.
const (
	guardKeyA = "sk-proj-Qm7xV2pL9sKd4Wz8RnT3bYc6HjF5gAe1XYZ98765"
	guardKeyB = "XYZ98765-Lp3Qr8Ws-overlap-Tb5Nc2"
	adminKey  = "admin-key-for-tests-0123456789abcdef"
)

// guardUpstream answers every chat request, in the dialect its path names
// (OpenAI chat completions, Anthropic Messages, Gemini generateContent),
// with a text in the pieces it is given: one stream event a piece, or the
// text whole in a plain answer.
type guardUpstream struct {
	mu     sync.Mutex
	pieces []string
	// escape writes every printable byte of the texts as \u00XX, as JSON
	// allows (a key then stands in no body as it is).
	escape bool
}

func (u *guardUpstream) set(pieces []string) {
	u.mu.Lock()
	u.pieces = pieces
	u.mu.Unlock()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (u *guardUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	pieces, escape := u.pieces, u.escape
	u.mu.Unlock()
	jsonString := jsonString
	if escape {
		jsonString = func(s string) string {
			var b strings.Builder
			for _, c := range []byte(s) {
				fmt.Fprintf(&b, `\u%04x`, c)
			}
			return `"` + b.String() + `"`
		}
	}
	text := jsonString(strings.Join(pieces, ""))
	stream := strings.Contains(string(body), `"stream":true`) || strings.Contains(r.URL.Path, ":streamGenerateContent")
	var events []string
	switch {
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		writeJSON(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":`+text+`,"usage":{"prompt_tokens":1,"total_tokens":1}}`)
		return
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		if !stream {
			writeJSON(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":`+
				text+`},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":9,"total_tokens":10}}`)
			return
		}
		events = append(events, oaChunk(`{"role":"assistant","content":""}`, "null"))
		for _, p := range pieces {
			events = append(events, oaChunk(`{"content":`+jsonString(p)+`}`, "null"))
		}
		events = append(events, oaChunk(`{}`, `"stop"`), "data: [DONE]")
	case strings.HasSuffix(r.URL.Path, "/messages"):
		if !stream {
			writeJSON(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":`+text+
				`}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":9}}`)
			return
		}
		var deltas []string
		for _, p := range pieces {
			deltas = append(deltas, `{"type":"text_delta","text":`+jsonString(p)+`}`)
		}
		events = anEvents(`{"type":"text","text":""}`, deltas, "end_turn")
	default: // Gemini
		candidate := func(text, finish string) string {
			return `{"candidates":[{"content":{"parts":[{"text":` + text + `}],"role":"model"}` + finish + `,"index":0}],"modelVersion":"m"}`
		}
		if !stream {
			writeJSON(w, candidate(text, `,"finishReason":"STOP"`))
			return
		}
		for i, p := range pieces {
			finish := ""
			if i == len(pieces)-1 {
				finish = `,"finishReason":"STOP"`
			}
			events = append(events, "data: "+candidate(jsonString(p), finish))
		}
	}
	writeEvents(w, events)
}

// oaChunk is an OpenAI stream event of one choice.
func oaChunk(delta, finish string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

// anEvents is an Anthropic stream of one content block: its start, a
// content_block_delta of each of deltas, its stop and the message's end.
func anEvents(block string, deltas []string, stop string) []string {
	events := []string{"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}",
		`event: content_block_start` + "\ndata: " + `{"type":"content_block_start","index":0,"content_block":` + block + `}`}
	for _, d := range deltas {
		events = append(events, "event: content_block_delta\ndata: "+`{"type":"content_block_delta","index":0,"delta":`+d+`}`)
	}
	return append(events, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}",
		"event: message_delta\ndata: "+`{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":9}}`,
		"event: message_stop\ndata: {\"type\":\"message_stop\"}")
}

// writeEvents writes events as a stream, each flushed on its own.
func writeEvents(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		io.WriteString(w, e+"\n\n") //nolint:errcheck // a test upstream
		w.(http.Flusher).Flush()
	}
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body) //nolint:errcheck // a test upstream
}

// guardGateway is a gateway holding guardKeyA (openai provider oa),
// guardKeyB (anthropic provider an), a Gemini provider's key, a client
// key and the admin key, in front of up: routes oa, an and gm, one target
// each. keys, when set, replaces some (OA_KEY, AN_KEY, GM_KEY, ...).
func guardGateway(t *testing.T, up http.Handler, keys map[string]string) *httptest.Server {
	t.Helper()
	ups := httptest.NewServer(up)
	t.Cleanup(ups.Close)
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(`providers:
  oa: {dialect: openai, base_url: %[1]s/oa/v1, key_env: OA_KEY}
  an: {dialect: anthropic, base_url: %[1]s/an, key_env: AN_KEY}
  gm: {dialect: gemini, base_url: %[1]s/gm/v1beta, key_env: GM_KEY}
routes:
  oa: {chain: [oa/m], budget: {max_attempts: 1}}
  an: {chain: [an/m], budget: {max_attempts: 1}}
  gm: {chain: [gm/m], budget: {max_attempts: 1}}
gateway:
  admin_key_env: ADMIN_KEY
  keys:
    app: {key_env: APP_KEY}
`, ups.URL)))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OA_KEY": guardKeyA, "AN_KEY": guardKeyB, "GM_KEY": "AIzaSyD-" + strings.Repeat("k9", 16),
		"APP_KEY": clientKey, "ADMIN_KEY": adminKey}
	for k, v := range keys {
		env[k] = v
	}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)
	return ts
}

// chatSurfaces are the four chat chatSurfaces a client asks on.
var chatSurfaces = []string{"openai", "responses", "anthropic", "gemini"}

// askSurface asks route on surface, streamed or not, and returns the
// answer's whole body.
func askSurface(t *testing.T, base, surface, route string, stream bool) string {
	t.Helper()
	var path, body string
	switch surface {
	case "openai":
		path, body = "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, route, stream)
	case "responses":
		path, body = "/v1/responses", fmt.Sprintf(`{"model":%q,"stream":%v,"input":"hi"}`, route, stream)
	case "anthropic":
		path, body = "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, route, stream)
	default:
		path, body = "/v1beta/models/"+route+":generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
		if stream {
			path = "/v1beta/models/" + route + ":streamGenerateContent?alt=sse"
		}
	}
	status, b := postKeyed(t, base+path, body)
	if status != 200 {
		t.Fatalf("%s %s: %d\n%s", surface, path, status, b)
	}
	return b
}

// postKeyed posts body to url with the client key, and returns the
// answer's status and whole body.
func postKeyed(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v\n%s", err, b)
	}
	return resp.StatusCode, string(b)
}

// answerText reads the text of an answer of surface as its client would:
// the content deltas of a stream joined, or the plain answer's text. Each
// event's data must be JSON.
func answerText(t *testing.T, surface, body string, stream bool) string {
	t.Helper()
	if !stream {
		return textOf(t, surface, decodeJSON(t, body), false)
	}
	var text strings.Builder
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		text.WriteString(textOf(t, surface, decodeJSON(t, data), true))
	}
	return text.String()
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

// textOf returns the text of one event (stream) or of a whole answer.
func textOf(t *testing.T, surface string, v map[string]any, stream bool) string {
	t.Helper()
	get := func(v any, path ...any) any {
		for _, p := range path {
			switch p := p.(type) {
			case string:
				m, _ := v.(map[string]any)
				v = m[p]
			case int:
				a, _ := v.([]any)
				if p >= len(a) {
					return nil
				}
				v = a[p]
			}
		}
		return v
	}
	str := func(v any) string { s, _ := v.(string); return s }
	parts := func(v any, field string) string {
		var b strings.Builder
		a, _ := v.([]any)
		for _, p := range a {
			b.WriteString(str(get(p, field)))
		}
		return b.String()
	}
	switch {
	case surface == "openai" && stream:
		return str(get(v, "choices", 0, "delta", "content"))
	case surface == "openai":
		return str(get(v, "choices", 0, "message", "content"))
	case surface == "responses" && stream:
		if v["type"] == "response.output_text.delta" {
			return str(v["delta"])
		}
		return ""
	case surface == "responses":
		return parts(get(v, "output", 0, "content"), "text")
	case surface == "anthropic" && stream:
		if v["type"] == "content_block_delta" {
			return str(get(v, "delta", "text"))
		}
		return ""
	case surface == "anthropic":
		return parts(v["content"], "text")
	}
	return parts(get(v, "candidates", 0, "content", "parts"), "text")
}

// guardCase is a text an upstream answers in pieces, and the text its
// client must get.
type guardCase struct {
	name   string
	pieces []string
	want   string
}

// guardCases: a key whole in one event, cut in two at every position, in
// three, at the stream's end, repeated, two keys that overlap, the
// gateway's own keys.
func guardCases() []guardCase {
	cases := []guardCase{
		{"whole in one event", []string{"Your key is ", guardKeyA + ".", " Bye."}, "Your key is [redacted]. Bye."},
		{"in three", []string{"key: sk-proj-Q", "m7xV2pL9sKd4Wz8RnT3", "bYc6HjF5gAe1XYZ98765 end"}, "key: [redacted] end"},
		{"in three, 5 bytes out first", []string{"key: sk-pr", "oj-Qm7xV2pL9sKd4Wz8RnT3", "bYc6HjF5gAe1XYZ98765 end"}, "key: sk-pr[redacted] end"},
		{"a byte an event", append(strings.Split(guardKeyA, ""), " end"), guardKeyA[:7] + "[redacted] end"},
		{"at the stream's end", []string{"key: ", guardKeyA[:30], guardKeyA[30:]}, "key: [redacted]"},
		{"a start of it ends the stream", []string{"key: ", guardKeyA[:30]}, "key: " + guardKeyA[:30]},
		{"repeated", []string{guardKeyA + " and ", guardKeyA[:20], guardKeyA[20:] + guardKeyA}, "[redacted] and [redacted]"},
		{"two keys overlapping", []string{"x " + guardKeyA[:40], guardKeyA[40:] + guardKeyB[8:20], guardKeyB[20:] + " y"}, "x [redacted] y"},
		{"the gateway's own keys", []string{"client ", clientKey[:12], clientKey[12:] + " admin " + adminKey}, "client [redacted] admin [redacted]"},
	}
	text := "key: " + guardKeyA + " end"
	for cut := 1; cut < len(text); cut++ {
		leak := ""
		if j := cut - len("key: "); j > 0 && j < 8 {
			leak = guardKeyA[:j] // fewer than 8 bytes of it go out before the rest is seen
		}
		cases = append(cases, guardCase{fmt.Sprintf("in two at %d", cut), []string{text[:cut], text[cut:]}, "key: " + leak + "[redacted] end"})
	}
	return cases
}

// The answer keys issue (30, item 6): an upstream that echoes a key detour
// holds in a 200 answer. On each of the four chat chatSurfaces, in front of
// an upstream of each dialect (the client's own: passed through raw; the
// others: translated), streamed and plain, no key reaches the client in
// any case, the text around it arrives as it was, every event stays JSON,
// and of a key cut between events at most 7 bytes go out before the mark.
func TestKeyGuard_KeyInAnAnswerNeverReachesTheClient(t *testing.T) {
	up := &guardUpstream{}
	ts := guardGateway(t, up, nil)
	for _, surface := range chatSurfaces {
		for _, route := range []string{"oa", "an", "gm"} {
			t.Run(surface+"/"+route, func(t *testing.T) {
				for _, tc := range guardCases() {
					up.set(tc.pieces)
					for _, stream := range []bool{true, false} {
						if !stream && strings.HasPrefix(tc.name, "in two at ") && tc.name != "in two at 10" {
							continue // a plain answer is one piece: one cut tells it all
						}
						want := tc.want
						if !stream {
							want = strings.NewReplacer(guardKeyA[:7]+"[redacted]", "[redacted]", "sk-pr[redacted]", "[redacted]").Replace(want)
							if tc.name == "a start of it ends the stream" {
								want = "key: " + guardKeyA[:30]
							}
						}
						body := askSurface(t, ts.URL, surface, route, stream)
						for _, k := range []string{guardKeyA, guardKeyB, clientKey, adminKey} {
							if strings.Contains(body, k) {
								t.Fatalf("%s (stream %v): the key %q reached the client:\n%s", tc.name, stream, k, body)
							}
						}
						if got := answerText(t, surface, body, stream); got != want {
							t.Errorf("%s (stream %v): the client read %q, want %q\n%s", tc.name, stream, got, want, body)
						}
					}
				}
			})
		}
	}
}

// A key the upstream wrote JSON-escaped (every byte \u00XX: the same JSON
// value) is found too: in a plain answer passed through raw, and in the
// text of a stream's events, whole or cut.
func TestKeyGuard_KeyEscapedByTheUpstream(t *testing.T) {
	up := &guardUpstream{escape: true}
	ts := guardGateway(t, up, nil)
	for _, tc := range guardCases()[:3] {
		up.set(tc.pieces)
		for _, sr := range [][2]string{{"openai", "oa"}, {"anthropic", "an"}, {"gemini", "gm"}, {"responses", "oa"}} {
			for _, stream := range []bool{true, false} {
				body := askSurface(t, ts.URL, sr[0], sr[1], stream)
				want := strings.Replace(tc.want, "sk-pr[redacted]", "[redacted]", 1)
				if stream {
					want = tc.want
				}
				if got := answerText(t, sr[0], body, stream); got != want || strings.Contains(got, guardKeyA) {
					t.Errorf("%s on %s (stream %v): the client read %q, want %q\n%s", tc.name, sr[0], stream, got, want, body)
				}
			}
		}
	}
}

// An embeddings answer carries no text but its model's name: an upstream
// that names its key there gets it redacted.
func TestKeyGuard_EmbeddingsModelName(t *testing.T) {
	up := &guardUpstream{}
	up.set([]string{"model " + guardKeyA})
	ts := guardGateway(t, up, nil)
	status, b := postKeyed(t, ts.URL+"/v1/embeddings", `{"model":"oa","input":"hi"}`)
	if status != 200 || strings.Contains(b, guardKeyA) || decodeJSON(t, b)["model"] != "model [redacted]" {
		t.Errorf("%d %s", status, b)
	}
}

// toolUpstream streams one tool call whose arguments hold guardKeyA, cut
// in three events: OpenAI's function.arguments or Anthropic's
// partial_json, by the path asked.
func toolUpstream(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) //nolint:errcheck // a test upstream
	pieces := []string{`{"token":"` + guardKeyA[:12], guardKeyA[12:30], guardKeyA[30:] + `"}`}
	if strings.HasSuffix(r.URL.Path, "/messages") {
		var deltas []string
		for _, p := range pieces {
			deltas = append(deltas, `{"type":"input_json_delta","partial_json":`+jsonString(p)+`}`)
		}
		writeEvents(w, anEvents(`{"type":"tool_use","id":"toolu_1","name":"login","input":{}}`, deltas, "tool_use"))
		return
	}
	events := []string{oaChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"login","arguments":""}}]}`, "null")}
	for _, p := range pieces {
		events = append(events, oaChunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(p)+`}}]}`, "null"))
	}
	writeEvents(w, append(events, oaChunk(`{}`, `"tool_calls"`), "data: [DONE]"))
}

// A key cut across the events of a tool call's arguments is redacted
// too, passed through raw (OpenAI to OpenAI, Anthropic to Anthropic) and
// translated (each to the other), and the arguments stay JSON.
func TestKeyGuard_KeyInStreamedToolArguments(t *testing.T) {
	ts := guardGateway(t, http.HandlerFunc(toolUpstream), nil)
	tools := `"tools":[{"type":"function","function":{"name":"login","parameters":{"type":"object"}}}]`
	anTools := `"tools":[{"name":"login","input_schema":{"type":"object"}}]`
	for _, tc := range []struct{ surface, route, path, body string }{
		{"openai", "oa", "/v1/chat/completions", `{"model":"oa","stream":true,` + tools + `,"messages":[{"role":"user","content":"hi"}]}`},
		{"openai", "an", "/v1/chat/completions", `{"model":"an","stream":true,` + tools + `,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic", "an", "/v1/messages", `{"model":"an","max_tokens":64,"stream":true,` + anTools + `,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic", "oa", "/v1/messages", `{"model":"oa","max_tokens":64,"stream":true,` + anTools + `,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.surface+"/"+tc.route, func(t *testing.T) {
			status, b := postKeyed(t, ts.URL+tc.path, tc.body)
			var args strings.Builder
			for _, line := range strings.Split(b, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				v := decodeJSON(t, data)
				if tc.surface == "anthropic" {
					if d, _ := v["delta"].(map[string]any); d != nil {
						s, _ := d["partial_json"].(string)
						args.WriteString(s)
					}
					continue
				}
				if cs, _ := v["choices"].([]any); len(cs) > 0 {
					d, _ := cs[0].(map[string]any)["delta"].(map[string]any)
					tcs, _ := d["tool_calls"].([]any)
					for _, c := range tcs {
						f, _ := c.(map[string]any)["function"].(map[string]any)
						s, _ := f["arguments"].(string)
						args.WriteString(s)
					}
				}
			}
			if status != 200 || strings.Contains(b, guardKeyA) || args.String() != `{"token":"[redacted]"}` {
				t.Errorf("%d: the client read the arguments %q\n%s", status, args.String(), b)
			}
		})
	}
}
