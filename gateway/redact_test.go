package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// echoKey is the upstream key of the redaction tests. It has none of the
// prefixes the key-shape patterns know (sk-, AIza, ...), so only the key
// matcher can hide it, and its + and / give the escaped forms something to
// escape.
const echoKey = "Zq8RvT3m+Kx7LpW2/nYc5HbJ4dFg6SeU"

// keyForm is the key as an upstream may echo it.
type keyForm struct{ name, text string }

// keyForms returns key transformed the ways issue 10 lists: case, cut,
// JSON-escaped, URL-encoded, and base64 of the Authorization header.
func keyForms(key string) []keyForm {
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	every := func(format string) string {
		var b strings.Builder
		for i := 0; i < len(key); i++ {
			fmt.Fprintf(&b, format, key[i])
		}
		return b.String()
	}
	return []keyForm{
		{"exact", key},
		{"upper", strings.ToUpper(key)},
		{"lower", strings.ToLower(key)},
		{"cut end", key[:len(key)-2]},
		{"cut start", key[2:]},
		{`json \/`, strings.ReplaceAll(key, "/", `\/`)},
		{`json \u00XX`, every(`\u%04x`)},
		{"url query", url.QueryEscape(key)},
		{"url every byte upper hex", every("%%%02X")},
		{"url every byte lower hex", every("%%%02x")},
		{"base64 Bearer", b64(base64.StdEncoding, "Bearer "+key)},
		{"base64url Bearer unpadded", b64(base64.RawURLEncoding, "Bearer "+key)},
		{"base64 key unpadded", b64(base64.RawStdEncoding, key)},
		{"base64url key", b64(base64.URLEncoding, key)},
		{"base64 Basic user:key", b64(base64.StdEncoding, "user:"+key)},
		{"base64url Basic user:key unpadded", b64(base64.RawURLEncoding, "user:"+key)},
	}
}

// The upstream scenarios, one provider (and so one account) each, so that
// one's park does not skip another's.
var echoScenarios = []string{"auth", "bad", "quota", "cut", "early"}

// echoReply is one scripted upstream answer.
type echoReply struct {
	status int
	header map[string]string
	sse    bool
	body   string
}

// quoteJSON returns s as a JSON string, quotes included: the form reaches
// the provider's message as it is (escapes included, not decoded).
func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// echoReplies returns what an upstream of dialect answers in each
// scenario, echoing form in the message (JSON-quoted, so that the parsed
// message holds the form itself), raw in a field of its own (the body then
// holds the form, the parsed value its decoding), and in a header.
//
//	auth   a rejected key (a wall that parks the account)
//	bad    an invalid request (fail closed: the message reaches the client)
//	quota  a quota or far rate limit (parks the target or the account)
//	cut    a stream whose error event comes after the first output
//	early  a stream whose error event comes first
func echoReplies(dialect, form string) map[string]echoReply {
	switch dialect {
	case "anthropic":
		e := func(typ, msg string) string {
			return `{"type":"error","error":{"type":"` + typ + `","message":` + quoteJSON(msg) + `},"echo":"` + form + `"}`
		}
		started := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"
		return map[string]echoReply{
			"auth":  {status: 401, body: e("authentication_error", "invalid x-api-key "+form)},
			"bad":   {status: 400, body: e("invalid_request_error", "messages.0: the key "+form+" may not be sent here")},
			"quota": {status: 429, header: map[string]string{"Retry-After": "3600"}, body: e("rate_limit_error", "rate limit of key "+form+" reached")},
			"cut":   {status: 200, sse: true, body: started + "event: error\ndata: " + e("api_error", "internal error with key "+form) + "\n\n"},
			"early": {status: 200, sse: true, body: "event: error\ndata: " + e("api_error", "internal error with key "+form) + "\n\n"},
		}
	case "gemini":
		e := func(code int, status, msg, details string) string {
			return `{"error":{"code":` + strconv.Itoa(code) + `,"message":` + quoteJSON(msg) + `,"status":"` + status +
				`","details":[` + details + `]},"echo":"` + form + `"}`
		}
		keyInfo := `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com","key":"` + form + `"}}`
		retry := `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3600s"}`
		chunk := `data: {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"index":0}],"modelVersion":"m"}` + "\n\n"
		return map[string]echoReply{
			"auth":  {status: 400, body: e(400, "INVALID_ARGUMENT", "API key not valid: "+form+". Please pass a valid API key.", keyInfo)},
			"bad":   {status: 400, body: e(400, "INVALID_ARGUMENT", `Invalid JSON payload received. Unknown name "`+form+`": Cannot find field.`, "")},
			"quota": {status: 429, body: e(429, "RESOURCE_EXHAUSTED", "Quota exceeded for key "+form+".", retry)},
			"cut":   {status: 200, sse: true, body: chunk + "data: " + e(500, "INTERNAL", "Internal error with key "+form, "") + "\n\n"},
			"early": {status: 200, sse: true, body: "data: " + e(500, "INTERNAL", "Internal error with key "+form, "") + "\n\n"},
		}
	}
	e := func(typ, code, msg string) string {
		return `{"error":{"message":` + quoteJSON(msg) + `,"type":"` + typ + `","param":null,"code":"` + code + `"},"echo":"` + form + `"}`
	}
	chunk := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}` + "\n\n"
	return map[string]echoReply{
		"auth": {status: 401, body: e("invalid_request_error", "invalid_api_key", "Incorrect API key provided: "+form+". Find your key in your account.")},
		"bad": {status: 400, body: `{"error":{"message":` + quoteJSON("Unrecognized request argument supplied: "+form) +
			`,"type":"invalid_request_error","param":` + quoteJSON(form) + `,"code":null}}`},
		"quota": {status: 429, body: e("insufficient_quota", "insufficient_quota", "You exceeded your current quota with the key "+form+".")},
		"cut":   {status: 200, sse: true, body: chunk + "data: " + e("server_error", "server_error", "The server had an error with key "+form) + "\n\n"},
		"early": {status: 200, sse: true, body: "event: error\ndata: " + e("server_error", "server_error", "The server had an error with key "+form) + "\n\n"},
	}
}

// echoUpstream answers every request as echoReplies says for the
// scenario its path starts with.
func echoUpstream(dialect, form string) http.Handler {
	replies := echoReplies(dialect, form)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the request does not matter
		scenario, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		rep, ok := replies[scenario]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("X-Echo", form)
		for k, v := range rep.header {
			h.Set(k, v)
		}
		h.Set("Content-Type", "application/json")
		if rep.sse {
			h.Set("Content-Type", "text/event-stream")
		}
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body) //nolint:errcheck // a test upstream
	})
}

// echoConfig is a config with one provider of dialect per scenario, all
// with the key of ECHO_KEY, each the one target of a route of its name.
func echoConfig(t *testing.T, dialect, upstream string) *config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("providers:\n")
	for _, sc := range echoScenarios {
		fmt.Fprintf(&b, "  %s: {dialect: %s, base_url: %s/%s, key_env: ECHO_KEY, pool: payg}\n", sc, dialect, upstream, sc)
	}
	b.WriteString("routes:\n")
	for _, sc := range echoScenarios {
		fmt.Fprintf(&b, "  %s: {chain: [%s/m], budget: {base_backoff: 1ms, max_backoff: 2ms}}\n", sc, sc)
	}
	cfg, err := config.Parse("detour.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func echoGetenv(k string) string { return map[string]string{"ECHO_KEY": echoKey}[k] }

// sinks gathers the text of every place an upstream's words can reach.
type sinks map[string][]string

func (s sinks) add(sink, text string) { s[sink] = append(s[sink], text) }

// postEcho sends body to path of the gateway and returns the response: its
// status line, headers and body as one text.
func postEcho(t *testing.T, base, path, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n", resp.Status)
	resp.Header.Write(&out)  //nolint:errcheck // a strings.Builder
	resp.Trailer.Write(&out) //nolint:errcheck // a strings.Builder
	out.WriteString("\n" + string(b))
	return out.String()
}

// chatRequest is a request of surface ("openai" or "anthropic") for route.
func chatRequest(surface, route string, stream bool) (path, body string) {
	if surface == "anthropic" {
		return "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":16,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, route, stream)
	}
	return "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, route, stream)
}

// TestRedact_KeyEchoedTransformedReachesNoSink is issue 10's redaction
// test: for each dialect the wire packages speak and each way an upstream
// may echo the key (upper, lower, cut, JSON-escaped, URL-encoded, base64 of
// the Authorization header), a real gateway in front of an upstream that
// echoes it in error bodies, error headers and stream error events lets
// it reach none of: the client's response bodies and headers (plain
// errors, fail-closed messages, stream error events), the ledger, the
// logs, the park reason a later request is shown, the health state and
// /metrics. The echoes must also have reached the sinks, redacted: the
// test fails if an upstream message stopped short of them.
func TestRedact_KeyEchoedTransformedReachesNoSink(t *testing.T) {
	for _, dialect := range []string{"openai", "anthropic", "gemini"} {
		for _, form := range keyForms(echoKey) {
			t.Run(dialect+"/"+form.name, func(t *testing.T) {
				t.Parallel()
				got := gatewaySinks(t, dialect, form.text)
				checkNoLeak(t, got)
				if !strings.Contains(strings.Join(got["client"], "\n"), "[redacted]") {
					t.Errorf("no client body holds [redacted]: did the echo reach them?\n%s", strings.Join(got["client"], "\n---\n"))
				}
			})
		}
	}
}

// gatewaySinks runs every scenario through a gateway in front of an
// upstream of dialect echoing form, and returns what each sink got.
func gatewaySinks(t *testing.T, dialect, form string) sinks {
	t.Helper()
	up := httptest.NewServer(echoUpstream(dialect, form))
	t.Cleanup(up.Close)
	logs := &syncBuffer{}
	book := &ledger.Memory{}
	hb := health.New(health.Settings{})
	gw, err := gateway.New(gateway.Config{File: echoConfig(t, dialect, up.URL), Getenv: echoGetenv, Ledger: book,
		Health: hb, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)

	got := sinks{}
	ask := func(surface, route string, stream bool) {
		path, body := chatRequest(surface, route, stream)
		got.add("client", postEcho(t, ts.URL, path, body))
	}
	for _, sc := range []string{"auth", "bad", "quota"} {
		ask("openai", sc, false)
	}
	for _, surface := range []string{"openai", "anthropic"} {
		for _, sc := range []string{"cut", "early"} {
			ask(surface, sc, true)
		}
	}
	// Later requests meet the parks the first ones caused, with their
	// reasons.
	ask("anthropic", "auth", false)
	ask("openai", "quota", true)
	parked, echoed := 0, 0
	for _, r := range book.Records() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got.add("ledger", string(b))
		if r.Status == ledger.StatusSkippedParked {
			parked++
			if strings.Contains(r.Reason, "[redacted]") {
				echoed++
			}
		}
	}
	if parked < 2 || echoed == 0 {
		t.Errorf("%d skipped_parked records, %d with the echo redacted in their park reason; want the later auth "+
			"and quota requests skipped by their parks, whose reasons hold the echo", parked, echoed)
	}
	for _, e := range hb.Snapshot(time.Now()) {
		b, _ := json.Marshal(e)
		got.add("health", string(b))
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got.add("metrics", string(m))
	got.add("logs", logs.String())
	return got
}

// TestRedact_KeyEchoedTransformedReachesNoAskOutput runs the path of
// `detour ask` (config.Lookup, router.Complete, every attempt printed, the
// final error printed or encoded as JSON) against the same echoing
// upstreams: no attempt's reason, no candidate and no error text holds the
// key in any form.
func TestRedact_KeyEchoedTransformedReachesNoAskOutput(t *testing.T) {
	for _, dialect := range []string{"openai", "anthropic", "gemini"} {
		for _, form := range keyForms(echoKey) {
			t.Run(dialect+"/"+form.name, func(t *testing.T) {
				t.Parallel()
				up := httptest.NewServer(echoUpstream(dialect, form.text))
				t.Cleanup(up.Close)
				cfg := echoConfig(t, dialect, up.URL)
				book := &ledger.Memory{}
				got := sinks{}
				r := &router.Router{Ledger: book, Health: health.New(cfg.Health.Settings),
					OnAttempt: func(a router.Attempt) { got.add("attempts", a.Status+" "+a.Reason) }}
				for _, sc := range []string{"auth", "bad", "quota", "auth", "quota"} {
					route, err := cfg.Lookup(sc, config.BuildOptions{Getenv: echoGetenv})
					if err != nil {
						t.Fatal(err)
					}
					req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
					_, err = r.Complete(context.Background(), route, req, router.Options{})
					if err == nil {
						t.Fatalf("%s: no error", sc)
					}
					got.add("error", err.Error())
					var re *router.Error
					if errors.As(err, &re) {
						b, _ := json.Marshal(re.Candidates)
						got.add("candidates", string(b))
					}
				}
				for _, rec := range book.Records() {
					b, _ := json.Marshal(rec)
					got.add("ledger", string(b))
				}
				checkNoLeak(t, got)
				if !strings.Contains(strings.Join(got["error"], "\n"), "[redacted]") {
					t.Errorf("no error text holds [redacted]: did the echo reach it?\n%s", strings.Join(got["error"], "\n---\n"))
				}
			})
		}
	}
}

// checkNoLeak fails t for each sink text that holds echoKey in a form
// leakedForms finds.
func checkNoLeak(t *testing.T, got sinks) {
	t.Helper()
	for sink, texts := range got {
		for _, text := range texts {
			if found := leakedForms(text, echoKey); len(found) > 0 {
				t.Errorf("%s leaks the key (%s):\n%s", sink, strings.Join(found, "; "), text)
			}
		}
	}
}

// leakRun is the shortest run of the key the leak check looks for: the
// shortest the redaction must hide for any key (runs of 8 characters).
// It is stricter than the redaction's own rule for a key this long.
const leakRun = 8

// escapes matches the escapes the leak check decodes: percent-encoding,
// JSON's \uXXXX and \/, and a doubled backslash.
var escapes = regexp.MustCompile(`%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\[/\\"]`)

// unescape decodes one level of escapes in s, leniently, independently
// of the code under test.
func unescape(s string) string {
	return escapes.ReplaceAllStringFunc(s, func(e string) string {
		switch {
		case e[0] == '%':
			n, _ := strconv.ParseUint(e[1:], 16, 8)
			return string([]byte{byte(n)})
		case e[1] == 'u':
			n, _ := strconv.ParseUint(e[2:], 16, 32)
			return string(rune(n))
		}
		return e[1:]
	})
}

// leakedForms says which forms of key s holds: a run of leakRun of its
// characters in any case, in s or in s with one or two levels of escapes
// decoded, or a base64 run standing for as many of its bytes, at any
// alignment, in either alphabet. It is a slow, independent oracle.
func leakedForms(s, key string) []string {
	views := []string{s}
	for i := 0; i < 2; i++ {
		if u := unescape(views[len(views)-1]); u != views[len(views)-1] {
			views = append(views, u)
		}
	}
	var found []string
	lowKey := strings.ToLower(key)
	for _, v := range views {
		low := strings.ToLower(v)
		for i := 0; i+leakRun <= len(lowKey); i++ {
			if strings.Contains(low, lowKey[i:i+leakRun]) {
				found = append(found, fmt.Sprintf("run %q", key[i:i+leakRun]))
				break
			}
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for skip := 0; skip < 3; skip++ {
				k := key[skip:]
				core := enc.EncodeToString([]byte(k[:len(k)/3*3]))
				n := leakRun / 3 * 4 // whole groups of at least leakRun/3*3 bytes
				for i := 0; i+n <= len(core); i++ {
					if strings.Contains(v, core[i:i+n]) {
						found = append(found, fmt.Sprintf("base64 run %q", core[i:i+n]))
						break
					}
				}
			}
		}
	}
	return found
}

// TestRedact_LeakOracleSeesEveryForm proves the leak check can fail: it
// finds each form of the key, and none in text without it.
func TestRedact_LeakOracleSeesEveryForm(t *testing.T) {
	for _, f := range keyForms(echoKey) {
		if leakedForms("msg: "+f.text+" end", echoKey) == nil {
			t.Errorf("%s: the leak check misses %q", f.name, f.text)
		}
		if leakedForms(quoteJSON("msg: "+f.text), echoKey) == nil {
			t.Errorf("%s: the leak check misses %q JSON-quoted", f.name, f.text)
		}
	}
	if found := leakedForms("HTTP 401 invalid_api_key: Incorrect API key provided: [redacted].", echoKey); found != nil {
		t.Errorf("the leak check finds %v in text without the key", found)
	}
}
