package responses_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
	"github.com/detourhq/detour/wire/responses"
)

// sseResponse is a 200 event stream of body.
func sseResponse(body []byte, kv ...string) *http.Response {
	h := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(body))}
}

// decodeFixture decodes testdata/streams/name and drains it.
func decodeFixture(t *testing.T, name string) ([]llm.Chunk, error) {
	t.Helper()
	st, err := responses.DecodeStream(sseResponse(wiretest.Fixture(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return wiretest.Drain(t, st)
}

// joined is what the chunks say, assembled.
func joined(t *testing.T, chunks []llm.Chunk) *llm.Response {
	t.Helper()
	r, err := llm.Assemble(&sliceStream{chunks: chunks})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type sliceStream struct{ chunks []llm.Chunk }

func (s *sliceStream) Next() (llm.Chunk, error) {
	if len(s.chunks) == 0 {
		return llm.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *sliceStream) Close() error { return nil }

// The recorded streams (testdata/streams/README.md) read as the answers
// they carried: text, a function call beside a reasoning item that is left
// out, and an answer cut at max_output_tokens, which is no failure.
func TestDecodeStream_RecordedAnswers(t *testing.T) {
	for _, tc := range []struct {
		file string
		want *llm.Response
	}{
		{"gpt41_text.sse", &llm.Response{ID: "resp_68856c12e8888199b0fa6001eba510f3061f2d634771bf81", Model: "gpt-4.1-2025-04-14",
			Message: llm.Message{Role: llm.RoleAssistant, Content: "Hello!"}, FinishReason: llm.FinishStop,
			Usage: llm.Usage{InputTokens: 15, OutputTokens: 3}}},
		{"gpt5mini_tool.sse", &llm.Response{ID: "resp_68b4f167f5988193aed47cdf9ab926020ea61a6a8455e9b5", Model: "gpt-5-mini-2025-08-07",
			Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_XZR8W0n6PxDW8UjaqV3E2RnI", Name: "square_root", Arguments: `{"number":132413}`}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 73, OutputTokens: 149, ReasoningTokens: 128}}},
		{"gpt5mini_max_tokens.sse", &llm.Response{ID: "resp_68b4f16181908196bd01521b5b4a6c53012eaf3e014424a1", Model: "gpt-5-mini-2025-08-07",
			Message: llm.Message{Role: llm.RoleAssistant}, FinishReason: llm.FinishLength,
			Usage: llm.Usage{InputTokens: 16}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			chunks, end := decodeFixture(t, tc.file)
			if end != io.EOF {
				t.Fatalf("end = %v, want io.EOF", end)
			}
			if diff := cmp.Diff(tc.want, joined(t, chunks)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			// The same body unstreamed reads the same (DecodeResponse
			// drains an event stream).
			got, err := responses.DecodeResponse(sseResponse(wiretest.Fixture(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecodeResponse (-want +got):\n%s", diff)
			}
		})
	}
}

// Every failure shape of a Responses stream becomes a stream
// ProviderError with the event's code, and classify gives it the kind
// detour must assign, through the tables every dialect shares.
func TestDecodeStream_FailuresGetTheirKinds(t *testing.T) {
	now := time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		file, code string
		kind       classify.Kind
		content    string // what came before the failure
	}{
		{file: "failed_server_error.sse", code: "server_error", kind: classify.Transient},
		{file: "failed_rate_limit.sse", code: "rate_limit_exceeded", kind: classify.Transient},
		{file: "failed_invalid_prompt.sse", code: "invalid_prompt", kind: classify.Policy},
		{file: "failed_bio_policy.sse", code: "bio_policy", kind: classify.Policy},
		{file: "failed_image_policy.sse", code: "image_content_policy_violation", kind: classify.Policy},
		{file: "failed_vector_store_timeout.sse", code: "vector_store_timeout", kind: classify.Transient},
		{file: "failed_midstream.sse", code: "server_error", kind: classify.Transient, content: "Partial answ"},
		{file: "error_event.sse", code: "server_error", kind: classify.Transient},
		{file: "error_event_wrapped.sse", code: "rate_limit_exceeded", kind: classify.Transient},
	} {
		t.Run(tc.file, func(t *testing.T) {
			chunks, end := decodeFixture(t, tc.file)
			pe := wiretest.WantStreamError(t, end, responses.Dialect)
			if pe.Code != tc.code || pe.Message == "" {
				t.Errorf("ProviderError code %q message %q, want code %q and a message", pe.Code, pe.Message, tc.code)
			}
			var content strings.Builder
			for _, c := range chunks {
				content.WriteString(c.Content)
			}
			if content.String() != tc.content {
				t.Errorf("content before the failure %q, want %q", content.String(), tc.content)
			}
			if f := classify.Classify(end, now); f.Kind != tc.kind || f.Status != classify.StatusStream {
				t.Errorf("classify = %s (%s, %q), want %s", f.Kind, f.Status, f.Reason, tc.kind)
			}
			// DecodeResponse of the same body fails the same way.
			_, err := responses.DecodeResponse(sseResponse(wiretest.Fixture(t, tc.file)))
			if f := classify.Classify(err, now); f.Kind != tc.kind {
				t.Errorf("DecodeResponse: classify = %s (%v), want %s", f.Kind, err, tc.kind)
			}
		})
	}
}

// A response stopped by the content filter ends the stream with
// FinishReason content_filter (which the router reads as a refusal before
// output), and is a policy failure read whole: it fails closed.
func TestDecodeStream_ContentFilterIsARefusal(t *testing.T) {
	chunks, end := decodeFixture(t, "incomplete_content_filter.sse")
	if end != io.EOF || len(chunks) == 0 || chunks[len(chunks)-1].FinishReason != llm.FinishContentFilter {
		t.Fatalf("chunks %+v, end %v; want a content_filter finish", chunks, end)
	}
	_, err := responses.DecodeResponse(sseResponse(wiretest.Fixture(t, "incomplete_content_filter.sse")))
	if f := classify.Classify(err, time.Now()); f.Kind != classify.Policy {
		t.Errorf("DecodeResponse = %v, classified %s; want policy", err, f.Kind)
	}
}

// A stream that ends before response.completed (cut, or a [DONE] early)
// is truncated, never a clean end; a [DONE] after it is ignored.
func TestDecodeStream_EndsOnlyAtItsTerminalEvent(t *testing.T) {
	full := wiretest.Fixture(t, "gpt41_text.sse")
	events := wiretest.SplitEvents(full, "\n\n")
	for _, tc := range []struct {
		name string
		body []byte
		want error
	}{
		{"cut before response.completed", bytes.Join(events[:len(events)-1], nil), llm.ErrStreamTruncated},
		{"cut inside response.completed", full[:len(full)-40], llm.ErrStreamTruncated},
		{"[DONE] before response.completed", append(bytes.Join(events[:5], nil), "data: [DONE]\n\n"...), llm.ErrStreamTruncated},
		{"[DONE] after response.completed", append(bytes.Clone(full), "data: [DONE]\n\n"...), io.EOF},
		{"no events at all", nil, llm.ErrStreamTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := responses.DecodeStream(sseResponse(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			_, end := wiretest.Drain(t, st)
			if !errors.Is(end, tc.want) || (tc.want != io.EOF && end == io.EOF) {
				t.Errorf("end = %v, want %v", end, tc.want)
			}
			if _, again := st.Next(); again != end {
				t.Errorf("Next after the end = %v, want %v", again, end)
			}
		})
	}
}

// A server that sends only the ends of its items (no deltas: some copies
// of the API do) still gives the whole text and arguments, once.
func TestDecodeStream_ItemsWithoutDeltas(t *testing.T) {
	body := `event: response.created
data: {"type":"response.created","response":{"id":"resp_1","model":"m","status":"in_progress","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}

event: response.output_text.done
data: {"type":"response.output_text.done","output_index":0,"content_index":0,"text":"Hi there"}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi there"}]}}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get","arguments":""}}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"put","arguments":""}}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","output_index":2,"arguments":"{\"k\":1}"}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"put","arguments":"{\"k\":1}"}}

event: response.completed
data: {"type":"response.completed","response":{"id":"resp_1","model":"m","status":"completed","usage":{"input_tokens":5,"output_tokens":7,"input_tokens_details":{"cached_tokens":3},"output_tokens_details":{"reasoning_tokens":2}}}}

`
	st, err := responses.DecodeStream(sseResponse([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	chunks, end := wiretest.Drain(t, st)
	if end != io.EOF {
		t.Fatalf("end = %v", end)
	}
	want := &llm.Response{ID: "resp_1", Model: "m", FinishReason: llm.FinishToolCalls,
		Message: llm.Message{Role: llm.RoleAssistant, Content: "Hi there", ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "get", Arguments: "{}"}, {ID: "call_2", Name: "put", Arguments: `{"k":1}`}}},
		Usage: llm.Usage{InputTokens: 5, OutputTokens: 7, CacheReadTokens: 3, ReasoningTokens: 2}}
	if diff := cmp.Diff(want, joined(t, chunks)); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
}

// One unreadable event between readable ones is left out and counted;
// two in a row end the stream as malformed.
func TestDecodeStream_SkipsOneBadEvent(t *testing.T) {
	events := wiretest.SplitEvents(wiretest.Fixture(t, "gpt41_text.sse"), "\n\n")
	bad := []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\n\n")
	one := bytes.Join(append(append(append([][]byte{}, events[:5]...), bad), events[5:]...), nil)
	st, err := responses.DecodeStream(sseResponse(one))
	if err != nil {
		t.Fatal(err)
	}
	if end := wiretest.DrainSkipping(t, st, "Hello!", 1); end != io.EOF {
		t.Errorf("end = %v, want io.EOF", end)
	}
	two := bytes.Join(append(append(append([][]byte{}, events[:5]...), bad, bad), events[5:]...), nil)
	st, err = responses.DecodeStream(sseResponse(two))
	if err != nil {
		t.Fatal(err)
	}
	_, end := wiretest.Drain(t, st)
	wiretest.WantMalformed(t, end, responses.ErrMalformed, strings.TrimPrefix(strings.TrimSuffix(string(bad), "\n\n"), "event: response.output_text.delta\ndata: "))
}

// A stream of a request sent raw gives every event as a chunk that keeps
// its data and its type, the terminal one included, then io.EOF.
func TestDecodeStream_RawKeepsEveryEvent(t *testing.T) {
	body := wiretest.Fixture(t, "gpt5mini_tool.sse")
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	})
	c := &responses.Client{BaseURL: srv.URL, APIKey: testKey}
	st, err := c.Stream(ctx(t), &llm.Request{Model: "gpt-5-mini", Raw: &llm.Raw{Dialect: responses.Dialect,
		Body: []byte(`{"model":"x","input":"hi","reasoning":{"effort":"low"}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	chunks, end := wiretest.Drain(t, st)
	if end != io.EOF {
		t.Fatalf("end = %v", end)
	}
	events := wiretest.SplitEvents(body, "\n\n")
	if len(chunks) != len(events) {
		t.Fatalf("%d chunks for %d events", len(chunks), len(events))
	}
	for i, c := range chunks {
		name, data, _ := strings.Cut(strings.TrimSuffix(string(events[i]), "\n\n"), "\ndata: ")
		if "event: "+c.Event != name || c.Raw != data {
			t.Errorf("chunk %d: event %q raw %.60q; want %q %.60q", i, c.Event, c.Raw, name, data)
		}
	}
	if last := chunks[len(chunks)-1]; last.FinishReason != llm.FinishToolCalls || last.Usage == nil || last.Usage.ReasoningTokens != 128 {
		t.Errorf("last chunk %+v, want the finish and the usage", last)
	}
}
