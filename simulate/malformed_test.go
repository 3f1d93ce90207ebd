package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

func TestStreamMalformed_GarbledEventThenACleanEnd(t *testing.T) {
	cases := []struct {
		d      Dialect
		chunks int
		// frames is the number of whole events before the garbled one.
		frames int
		// prefix and suffix bound the garbled event, framing included.
		prefix, suffix string
	}{
		{DialectOpenAI, 1, 1, `data: {"id":"chatcmpl-`, `"choices":[{"index":0,"delta":{"content":"Hel` + "\n\n"},
		{DialectOpenAI, 3, 3, `data: {"id":"chatcmpl-`, `"delta":{"content":" p` + "\n\n"},
		{DialectAnthropic, 3, 3, "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel` + "\n\n", ""},
		{DialectAnthropic, 0, 0, "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel` + "\n\n", ""},
		{DialectGemini, 0, 0, `data: {"candidates": [{"content": {"parts": [{"text": "Hel` + "\r\n\r\n", ""},
		{DialectGemini, 99, 4, `data: {"candidates": [{"content": {"parts": [{"text": ".` + "\r\n\r\n", ""},
	}
	for _, c := range cases {
		t.Run(string(c.d)+"/chunks="+strconv.Itoa(c.chunks), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: c.d, Script: []Fault{
					{Kind: StreamMalformed, Chunks: c.chunks}, {Kind: StreamMalformed, Chunks: c.chunks}}})
				resp, raw := r.mustAsk(t, "p", "m", true) // a clean end of the body
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, raw)
				}
				frames := strings.SplitAfter(string(raw), frameEnd(c.d))
				if frames[len(frames)-1] == "" {
					frames = frames[:len(frames)-1]
				}
				if len(frames) != c.frames+1 {
					t.Fatalf("%d events, want %d whole ones then the garbled one:\n%s", len(frames), c.frames+1, raw)
				}
				bad := frames[len(frames)-1]
				if !strings.HasPrefix(bad, c.prefix) || !strings.HasSuffix(bad, c.suffix) {
					t.Errorf("garbled event %q, want %q...%q", bad, c.prefix, c.suffix)
				}
				data := bad[strings.Index(bad, "data: ")+len("data: "):]
				if json.Valid([]byte(strings.TrimSpace(data))) {
					t.Errorf("garbled data is valid JSON: %s", data)
				}
				for _, end := range []string{"[DONE]", "message_stop", "finishReason"} {
					if strings.Contains(string(raw), end) {
						t.Errorf("the stream carried its end %q:\n%s", end, raw)
					}
				}

				// The decoder: the whole events, then the garbled one left
				// out and the end of a stream cut before its terminal
				// event; with no event before it, a malformed chunk.
				resp, err := r.ask(t, context.Background(), "p", "m", true)
				if err != nil {
					t.Fatal(err)
				}
				st := decodeStream(t, c.d, resp)
				chunks, err := drain(st)
				if c.frames > 0 {
					if !errors.Is(err, llm.ErrStreamTruncated) || llm.SkippedOf(st) != 1 {
						t.Errorf("decoder after %d chunks: %v, %d skipped; want a truncation, 1 skipped", len(chunks), err, llm.SkippedOf(st))
					}
					return
				}
				if !errors.Is(err, errMalformed(c.d)) || errors.Is(err, llm.ErrStreamTruncated) {
					t.Errorf("decoder after %d chunks: %v, want %v", len(chunks), err, errMalformed(c.d))
				}
				var pe *llm.ProviderError
				if !errors.As(err, &pe) || pe.Status != 200 {
					t.Errorf("decoder error %v carries no 200 ProviderError", err)
				}
			})
		})
	}
}

func TestStreamMalformed_PlainAnswerIsACompleteInvalidBody(t *testing.T) {
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: d, Script: Faults(StreamMalformed, StreamMalformed)})
				resp, body := r.mustAsk(t, "p", "m", false)
				if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || len(body) < 50 {
					t.Fatalf("status %d, Content-Length %d, %d bytes", resp.StatusCode, resp.ContentLength, len(body))
				}
				if json.Valid(body) || !bytes.HasPrefix(body, []byte("{")) {
					t.Errorf("body %q, want a JSON object cut short", body)
				}
				resp, err := r.ask(t, context.Background(), "p", "m", false)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := decodeResponse(d, resp); !errors.Is(err, errMalformed(d)) {
					t.Errorf("decoder: %v, want %v", err, errMalformed(d))
				}
			})
		})
	}
}

// TestStreamMalformedEvent_OneGarbledEventInAWholeStream: the stream is
// OK's with one event more, StreamMalformed's garbled one, after the first
// Chunks events; the decoders leave it out, count it and read the answer
// whole, unless it comes first. A plain answer is OK's.
func TestStreamMalformedEvent_OneGarbledEventInAWholeStream(t *testing.T) {
	cases := []struct {
		d      Dialect
		chunks int
		fails  bool // the garbled event comes first: nothing readable before it
	}{
		{DialectOpenAI, 3, false}, {DialectOpenAI, 99, false}, {DialectOpenAI, 0, true},
		{DialectAnthropic, 4, false}, {DialectAnthropic, 0, true},
		{DialectGemini, 1, false}, {DialectGemini, 99, false}, {DialectGemini, 0, true},
	}
	for _, c := range cases {
		t.Run(string(c.d)+"/chunks="+strconv.Itoa(c.chunks), func(t *testing.T) {
			f := Fault{Kind: StreamMalformedEvent, Chunks: c.chunks}
			ok := okBody(t, c.d, Fault{}, true)
			raw := okBody(t, c.d, f, true)
			var garbled []string
			kept := ""
			for _, ev := range strings.SplitAfter(string(raw), frameEnd(c.d)) {
				i := strings.Index(ev, "data: ")
				if i < 0 {
					kept += ev
					continue
				}
				if data := strings.TrimSpace(ev[i+len("data: "):]); data != "[DONE]" && !json.Valid([]byte(data)) {
					garbled = append(garbled, ev)
					continue
				}
				kept += ev
			}
			if len(garbled) != 1 || kept != string(ok) {
				t.Fatalf("%d garbled events, the rest OK's: %v\n%s", len(garbled), kept == string(ok), raw)
			}
			if whole := okBody(t, c.d, f, false); !bytes.Equal(whole, okBody(t, c.d, Fault{}, false)) {
				t.Errorf("a plain answer differs from OK:\n%s", whole)
			}

			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: c.d, Script: []Fault{f}})
				resp, err := r.ask(t, context.Background(), "p", "m", true)
				if err != nil {
					t.Fatal(err)
				}
				st := decodeStream(t, c.d, resp)
				s := summarize(drain(st))
				if c.fails {
					if !errors.Is(s.err, errMalformed(c.d)) {
						t.Errorf("decoder: %v, want %v", s.err, errMalformed(c.d))
					}
					return
				}
				if s.err != nil || s.text != "Hello from p/m." || s.finish != llm.FinishStop || llm.SkippedOf(st) != 1 {
					t.Errorf("decoder: %q, finish %q, %v, %d skipped; want the whole answer, 1 skipped",
						s.text, s.finish, s.err, llm.SkippedOf(st))
				}
			})
		})
	}
}

// okBody returns the body of the first answer (sequence 0) of a fresh
// provider p of dialect d, served f, so that two faults' bytes compare.
func okBody(t *testing.T, d Dialect, f Fault, stream bool) []byte {
	t.Helper()
	r := newRig(t, "memory", Provider{Name: "p", Dialect: d, Script: []Fault{f}})
	_, b := r.mustAsk(t, "p", "m", stream)
	return b
}

func TestNoDone_OmitsOnlyTheTerminalMarker(t *testing.T) {
	omitted := map[Dialect]string{
		DialectOpenAI:    "data: [DONE]\n\n",
		DialectAnthropic: "event: message_stop\ndata: {\"type\":\"message_stop\"", // then its padding
		DialectGemini:    "",
		DialectResponses: "event: response.completed\n",
	}
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			ok := string(okBody(t, d, Fault{}, true))
			got := string(okBody(t, d, Fault{Kind: NoDone}, true))
			cut := strings.LastIndex(ok, omitted[d])
			if omitted[d] == "" {
				cut = len(ok)
			}
			if cut < 0 || got != ok[:cut] || !strings.HasSuffix(ok, frameEnd(d)) {
				t.Errorf("NoDone stream is not OK's without %q:\n--- ok\n%s\n--- no_done\n%s", omitted[d], ok, got)
			}
			if d == DialectAnthropic && !strings.Contains(got, `"stop_reason":"end_turn"`) {
				t.Errorf("no message_delta with its stop_reason:\n%s", got)
			}
			if whole := okBody(t, d, Fault{Kind: NoDone}, false); !bytes.Equal(whole, okBody(t, d, Fault{}, false)) {
				t.Errorf("a plain NoDone answer differs from OK:\n%s", whole)
			}
		})
	}
}

// TestNoDone_WhatTheDecodersMakeOfIt pins the client side: OpenAI's and
// Gemini's decoders take the end of the body after a finish reason as the
// complete end; Anthropic's reports the stream as truncated, message_delta
// and its stop_reason notwithstanding, because the API always sends
// message_stop; so does the Responses decoder, whose finish and usage come
// only with the response.completed left out.
func TestNoDone_WhatTheDecodersMakeOfIt(t *testing.T) {
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: d, Script: Faults(NoDone)})
				resp, err := r.ask(t, context.Background(), "p", "m", true)
				if err != nil {
					t.Fatal(err)
				}
				s := summarize(drain(decodeStream(t, d, resp)))
				if d == DialectResponses {
					if s.text != "Hello from p/m." || s.finish != "" || !errors.Is(s.err, llm.ErrStreamTruncated) {
						t.Errorf("responses decoder: text %q, finish %q, %v; want the text, then llm.ErrStreamTruncated", s.text, s.finish, s.err)
					}
					return
				}
				if s.text != "Hello from p/m." || s.finish != llm.FinishStop || s.usage == nil || s.usage.OutputTokens != 4 || s.usage.InputTokens == 0 {
					t.Errorf("text %q, finish %q, usage %+v", s.text, s.finish, s.usage)
				}
				if d != DialectAnthropic {
					if s.err != nil {
						t.Errorf("decoder: %v, want the complete end (io.EOF)", s.err)
					}
					return
				}
				if !errors.Is(s.err, llm.ErrStreamTruncated) || !errors.Is(s.err, io.ErrUnexpectedEOF) {
					t.Errorf("anthropic decoder: %v, want llm.ErrStreamTruncated wrapping io.ErrUnexpectedEOF", s.err)
				}
			})
		})
	}
}

func TestStreamMalformed_TheGarbledEventIsTheNextContentCutShort(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"delta":{"content":"Hello"}}`, `{"delta":{"content":"Hel`},
		{`{"delta":{"content":"."}}`, `{"delta":{"content":".`},
		{`{"function":{"arguments":"{\"n\":1}"}}`, `{"function":{"arguments":"{`},
		{`{"delta":{"type":"input_json_delta","partial_json":""}}`, `{"delta":{"type":"input_json_delta","partial_json":"`},
		{`{"parts": [{"text": "héllo"}]}`, `{"parts": [{"text": "hél`},
		{`{"functionCall": {"name": "f"}}`, `{"functionCall"`}, // no text: cut in half
	} {
		if got := string(cutShort([]byte(c.in))); got != c.want {
			t.Errorf("cutShort(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	wa := wireAnswer{garbled: []garbledEvent{{1, []byte("a")}, {2, []byte("b")}}}
	got := []string{string(wa.garbledAfter(0)), string(wa.garbledAfter(2)), string(wa.garbledAfter(9))}
	if diff := cmp.Diff([]string{"a", "b", "b"}, got); diff != "" {
		t.Errorf("garbledAfter (-want +got):\n%s", diff)
	}
}
