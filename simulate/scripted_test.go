package simulate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/detourhq/detour/llm"
	"github.com/google/go-cmp/cmp"
)

// scriptedPath returns the URL and headers of a chat request to provider p
// of dialect d for model m, in its streaming form when stream is set.
func scriptedPath(r *rig, d Dialect, p, m string, stream bool) (string, []string) {
	base := r.srv.BaseURL(p)
	switch d {
	case DialectAnthropic:
		return base + "/v1/messages", anthropicVersion
	case DialectGemini:
		return base + geminiPath(m, stream), nil
	case DialectResponses:
		return base + "/responses", nil
	}
	return base + "/chat/completions", nil
}

// questionBody is a chat request of dialect d for model m with two system
// texts, an earlier turn and a last user message of two text parts around
// an image, and an output limit of 77: the Question of scriptedQuestion.
func questionBody(d Dialect, m string, stream bool) string {
	switch d {
	case DialectAnthropic:
		return fmt.Sprintf(`{"model":%q,"max_tokens":77,"stream":%t,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Answer in Japanese."}],`+
			`"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},`+
			`{"role":"user","content":[{"type":"text","text":"What is 2+2?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"Reply with a digit."}]}]}`, m, stream)
	case DialectGemini:
		return `{"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Answer in Japanese."}]},"generationConfig":{"maxOutputTokens":77},` +
			`"contents":[{"role":"user","parts":[{"text":"first"}]},{"role":"model","parts":[{"text":"ok"}]},` +
			`{"parts":[{"text":"What is 2+2?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},{"text":"Reply with a digit."}]}]}`
	case DialectResponses:
		return fmt.Sprintf(`{"model":%q,"max_output_tokens":77,"stream":%t,"instructions":"Be brief.",`+
			`"input":[{"role":"developer","content":[{"type":"input_text","text":"Answer in Japanese."}]},`+
			`{"role":"user","content":"first"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},`+
			`{"role":"user","content":[{"type":"input_text","text":"What is 2+2?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"},{"type":"input_text","text":"Reply with a digit."}]}]}`, m, stream)
	}
	return fmt.Sprintf(`{"model":%q,"max_completion_tokens":77,"stream":%t,"stream_options":{"include_usage":true},`+
		`"messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":[{"type":"text","text":"Answer in Japanese."}]},`+
		`{"role":"user","content":"first"},{"role":"assistant","content":"ok"},`+
		`{"role":"user","content":[{"type":"text","text":"What is 2+2?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"text","text":"Reply with a digit."}]}]}`, m, stream)
}

// scriptedQuestion is what Answer sees of questionBody (Seq aside).
func scriptedQuestion(provider, model string) Question {
	return Question{Provider: provider, Model: model, System: "Be brief.\nAnswer in Japanese.",
		Prompt: "What is 2+2?\nReply with a digit.", MaxTokens: 77}
}

// finishFields collects the string values of key anywhere in the JSON v.
func finishFields(v any, key string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == key {
				out = append(out, s)
			}
			out = append(out, finishFields(e, key)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, finishFields(e, key)...)
		}
	}
	return out
}

// wireFinish returns the finish reasons dialect d's body (or stream) says,
// read from the raw JSON: finish_reason, stop_reason or finishReason.
func wireFinish(t *testing.T, d Dialect, body []byte, stream bool) []string {
	t.Helper()
	key := map[Dialect]string{DialectOpenAI: "finish_reason", DialectAnthropic: "stop_reason", DialectGemini: "finishReason"}[d]
	if d == DialectResponses {
		return responsesFinish(t, body, stream)
	}
	if !stream {
		return finishFields(decode(t, body), key)
	}
	var out []string
	for _, ev := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(strings.TrimSuffix(ev, "\r"), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		out = append(out, finishFields(decode(t, []byte(data)), key)...)
	}
	return out
}

// responsesFinish is what a Responses body (or each event with a response
// object) says of its end: the response's status, or the reason it is
// incomplete.
func responsesFinish(t *testing.T, body []byte, stream bool) []string {
	t.Helper()
	read := func(data []byte) string {
		var v struct {
			Status            string `json:"status"`
			IncompleteDetails *struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
			Response *json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		if v.Response != nil {
			if err := json.Unmarshal(*v.Response, &v); err != nil {
				t.Fatal(err)
			}
		}
		if v.IncompleteDetails != nil {
			return v.IncompleteDetails.Reason
		}
		return v.Status
	}
	if !stream {
		return []string{read(body)}
	}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			if s := read([]byte(data)); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestAnswer_ScriptedTextInEveryDialect(t *testing.T) {
	const japanese = "答えは4です。二足す二は四、つまり「よん」と読みます"
	cases := []struct {
		name       string
		reply      Reply
		pieces     int
		wantFinish map[Dialect]string
		want       llm.FinishReason
		wantTokens int
		wantDeltas int // streamed content deltas; 0: not checked
	}{
		{
			name:       "complete",
			reply:      Reply{Text: "The answer is 4."},
			wantFinish: map[Dialect]string{DialectOpenAI: "stop", DialectAnthropic: "end_turn", DialectGemini: "STOP", DialectResponses: "completed"},
			want:       llm.FinishStop,
			wantTokens: 4, // 16 runes
			wantDeltas: 5, // "The", " answer", " is", " 4", "."
		},
		{
			name:       "japanese truncated",
			reply:      Reply{Text: japanese, Truncated: true, OutputTokens: 123},
			pieces:     7,
			wantFinish: map[Dialect]string{DialectOpenAI: "length", DialectAnthropic: "max_tokens", DialectGemini: "MAX_TOKENS", DialectResponses: "max_output_tokens"},
			want:       llm.FinishLength,
			wantTokens: 123,
			wantDeltas: 7,
		},
		{
			name:       "japanese estimated",
			reply:      Reply{Text: japanese},
			wantFinish: map[Dialect]string{DialectOpenAI: "stop", DialectAnthropic: "end_turn", DialectGemini: "STOP", DialectResponses: "completed"},
			want:       llm.FinishStop,
			wantTokens: (utf8.RuneCountInString(japanese) + 3) / 4,
			wantDeltas: 1, // no space to split at
		},
	}
	for _, d := range allDialects {
		for _, stream := range []bool{false, true} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/stream=%t/%s", d, stream, c.name), func(t *testing.T) {
					asked := make(chan Question, 4)
					r := newRig(t, "tcp", Provider{Name: "p", Dialect: d, Script: []Fault{{Pieces: c.pieces}},
						Answer: func(q Question) Reply { asked <- q; return c.reply }})
					url, header := scriptedPath(r, d, "p", "m-1", stream)
					resp, body := r.mustDo(t, http.MethodPost, url, questionBody(d, "m-1", stream), header...)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}

					if len(asked) != 1 {
						t.Fatalf("Answer called %d times, want 1", len(asked))
					}
					q := <-asked
					q.Seq = 0
					if diff := cmp.Diff(scriptedQuestion("p", "m-1"), q); diff != "" {
						t.Errorf("Question (-want +got):\n%s", diff)
					}
					if got, want := wireFinish(t, d, body, stream), c.wantFinish[d]; len(got) == 0 || got[len(got)-1] != want {
						t.Errorf("wire finish reasons %q, want the last to be %q", got, want)
					}

					var text string
					var finish llm.FinishReason
					var usage *llm.Usage
					if stream {
						chunks, err := drain(decodeStream(t, d, replay(resp.Header, body)))
						s := summarize(chunks, err)
						if err != nil {
							t.Fatalf("stream: %v", err)
						}
						text, finish, usage = s.text, s.finish, s.usage
						for _, ch := range chunks {
							if !utf8.ValidString(ch.Content) {
								t.Errorf("delta %q is not valid UTF-8", ch.Content)
							}
						}
						if s.deltas != c.wantDeltas {
							t.Errorf("%d content deltas, want %d", s.deltas, c.wantDeltas)
						}
					} else {
						res, err := decodeResponse(d, replay(resp.Header, body))
						if err != nil {
							t.Fatalf("decode: %v", err)
						}
						text, finish, usage = res.Message.Content, res.FinishReason, &res.Usage
					}
					if text != c.reply.Text {
						t.Errorf("text %q, want %q", text, c.reply.Text)
					}
					if finish != c.want {
						t.Errorf("finish %q, want %q", finish, c.want)
					}
					if usage == nil || usage.OutputTokens != c.wantTokens {
						t.Errorf("usage %+v, want %d output tokens", usage, c.wantTokens)
					}
				})
			}
		}
	}
}

func TestAnswer_QuestionInEachSpelling(t *testing.T) {
	cases := []struct {
		name    string
		dialect Dialect
		body    string
		want    Question
	}{
		{"openai max_tokens, no system, prefill after the user turn", DialectOpenAI,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hel"}]}`,
			Question{Prompt: "hi", MaxTokens: 5}},
		{"openai no limit, tool result after the user turn", DialectOpenAI,
			`{"model":"m","messages":[{"role":"system","content":""},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"tool","tool_call_id":"x","content":"42"}]}`,
			Question{Prompt: "a\nb"}},
		{"openai max_completion_tokens wins", DialectOpenAI,
			`{"model":"m","max_tokens":5,"max_completion_tokens":9,"messages":[{"role":"developer","content":"dev"},{"role":"user","content":null}]}`,
			Question{System: "dev", MaxTokens: 9}},
		{"anthropic string system", DialectAnthropic,
			`{"model":"m","max_tokens":3,"system":"sys","messages":[{"role":"user","content":"日本語で"}]}`,
			Question{System: "sys", Prompt: "日本語で", MaxTokens: 3}},
		{"anthropic tool result turn has no text", DialectAnthropic,
			`{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"t"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"42"}]}]}`,
			Question{Prompt: "", MaxTokens: 3}},
		{"gemini snake case", DialectGemini,
			`{"system_instruction":{"parts":[{"text":"sys"}]},"generation_config":{"max_output_tokens":8},"contents":[{"role":"user","parts":[{"text":"x"},{"text":"y"}]}]}`,
			Question{System: "sys", Prompt: "x\ny", MaxTokens: 8}},
		{"gemini prefill after the user turn, no limit", DialectGemini,
			`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"Hel"}]}]}`,
			Question{Prompt: "q"}},
	}
	asked := make(chan Question, len(cases))
	answer := func(q Question) Reply { asked <- q; return Reply{Text: "ok"} }
	var providers []Provider
	for _, d := range allDialects {
		providers = append(providers, Provider{Name: string(d), Dialect: d, Answer: answer})
	}
	r := newRig(t, "tcp", providers...)
	seqs := map[uint64]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, header := scriptedPath(r, c.dialect, string(c.dialect), "m", false)
			resp, body := r.mustDo(t, http.MethodPost, url, c.body, header...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			q := <-asked
			if seqs[q.Seq] {
				t.Errorf("Seq %d seen before", q.Seq)
			}
			seqs[q.Seq] = true
			c.want.Provider, c.want.Model, q.Seq = string(c.dialect), "m", 0
			if diff := cmp.Diff(c.want, q); diff != "" {
				t.Errorf("Question (-want +got):\n%s", diff)
			}
		})
	}
}

// preambles counts the events of each dialect's stream before its first
// content delta (OpenAI's role chunk; Anthropic's message_start,
// content_block_start and ping; the Responses API's opening events, in
// one write).
var preambles = map[Dialect]int{DialectOpenAI: 1, DialectAnthropic: 3, DialectGemini: 0, DialectResponses: 1}

func TestAnswer_ScriptedHeadOfACutStream(t *testing.T) {
	for _, d := range allDialects {
		for _, kind := range []Kind{StreamCut, StreamError, StreamMalformed} {
			t.Run(fmt.Sprintf("%s/%s", d, kind), func(t *testing.T) {
				var calls atomic.Int32
				r := newRig(t, "tcp", Provider{Name: "p", Dialect: d,
					Script: []Fault{{Kind: kind, Chunks: preambles[d] + 2}},
					Answer: func(Question) Reply { calls.Add(1); return Reply{Text: "一つ two three four"} }})
				url, header := scriptedPath(r, d, "p", "m", true)
				resp, err := r.do(t, t.Context(), http.MethodPost, url, questionBody(d, "m", true), header...)
				if err != nil {
					t.Fatal(err)
				}
				chunks, err := drain(decodeStream(t, d, resp))
				if err == nil {
					t.Fatal("the stream ended cleanly")
				}
				if got := summarize(chunks, err).text; got != "一つ two" {
					t.Errorf("text before the fault %q, want %q", got, "一つ two")
				}
				if n := calls.Load(); n != 1 {
					t.Errorf("Answer called %d times, want 1", n)
				}
			})
		}
	}
}

func TestAnswer_NotCalledForToolCallsAndContentFilters(t *testing.T) {
	toolBodies := map[Dialect]string{
		DialectOpenAI:    fmt.Sprintf(toolRequest, "false", ""),
		DialectAnthropic: fmt.Sprintf(anthropicToolRequest, ""),
		DialectGemini:    geminiToolRequest,
		DialectResponses: fmt.Sprintf(responsesToolRequest, "false"),
	}
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			var calls atomic.Int32
			r := newRig(t, "tcp", Provider{Name: "p", Dialect: d, Script: []Fault{{}, {Kind: ContentFilter}},
				Answer: func(Question) Reply { calls.Add(1); return Reply{Text: "scripted"} }})
			url, header := scriptedPath(r, d, "p", "m", false)

			resp, body := r.mustDo(t, http.MethodPost, url, toolBodies[d], header...)
			res, err := decodeResponse(d, replay(resp.Header, body))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if res.FinishReason != llm.FinishToolCalls || len(res.Message.ToolCalls) != 1 || res.Message.Content != "" {
				t.Errorf("tool answer: finish %q, %d calls, content %q", res.FinishReason, len(res.Message.ToolCalls), res.Message.Content)
			}

			// A filtered answer is a 200 the decoders turn into an error.
			resp, body = r.mustDo(t, http.MethodPost, url, questionBody(d, "m", false), header...)
			if _, err := decodeResponse(d, replay(resp.Header, body)); err == nil || strings.Contains(string(body), "scripted") {
				t.Errorf("filtered answer: decode error %v, body %s", err, body)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("Answer called %d times, want 0", n)
			}
		})
	}
}

func TestAnswer_EmptyScriptedText(t *testing.T) {
	for _, d := range allDialects {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", d, stream), func(t *testing.T) {
				r := newRig(t, "tcp", Provider{Name: "p", Dialect: d,
					Answer: func(Question) Reply { return Reply{Truncated: true} }})
				url, header := scriptedPath(r, d, "p", "m", stream)
				resp, body := r.mustDo(t, http.MethodPost, url, questionBody(d, "m", stream), header...)
				var s summary
				if stream {
					s = summarize(drain(decodeStream(t, d, replay(resp.Header, body))))
				} else {
					res, err := decodeResponse(d, replay(resp.Header, body))
					s = summary{text: res.Message.Content, finish: res.FinishReason, usage: &res.Usage, err: err}
				}
				if s.err != nil || s.text != "" || s.finish != llm.FinishLength || s.usage == nil || s.usage.OutputTokens != 0 {
					t.Errorf("got text %q, finish %q, usage %+v, err %v; want an empty truncated answer of 0 tokens", s.text, s.finish, s.usage, s.err)
				}
			})
		}
	}
}

func TestSplitPieces_KeepsTheText(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		n     int
		want  []string
		wantN int // when want is nil: the number of pieces
	}{
		{"fewer joins the last", "a b c d", 2, []string{"a", " b c d"}, 0},
		{"same", "a b", 2, []string{"a", " b"}, 0},
		{"more halves the longest", "abcd ef", 4, []string{"ab", "cd", " ", "ef"}, 0},
		{"runes stay whole", "日本語です", 3, []string{"日本", "語", "です"}, 0},
		{"too short stops at one rune each", "日本", 5, []string{"日", "本"}, 0},
		{"empty", "", 3, nil, 0},
		{"long", strings.Repeat("答え ", 50), 120, nil, 120},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := splitPieces(textPieces(c.text), c.n)
			if strings.Join(got, "") != c.text {
				t.Errorf("pieces %q join to another text than %q", got, c.text)
			}
			for _, p := range got {
				if p == "" || !utf8.ValidString(p) {
					t.Errorf("piece %q is empty or splits a rune", p)
				}
			}
			if c.want == nil {
				if len(got) != c.wantN {
					t.Errorf("%d pieces, want %d", len(got), c.wantN)
				}
				return
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
		})
	}
}
