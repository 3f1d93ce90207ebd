package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// piecewise is an upstream of both dialects whose model "retired" is gone
// (404, as a provider answers a model it withdrew) and whose other models
// stream their answer in pieces cut anywhere: in the middle of a data
// line, between a line and its blank line, inside a CRLF. Each piece is
// flushed and followed by a pause, so the gateway reads them apart.
type piecewise struct {
	openai, anthropic string // the streams, whole
	mu                sync.Mutex
	models            []string // the model of each request, in order
}

// pieces cuts a stream in the middle of each event's last line, between
// that line's end and the blank line that ends the event, and, for CRLF,
// inside the blank line's CRLF; the piece after runs on into the next
// event. The reader must carry a cut-off line into its next read, and
// keep an event's data before a read that writes over it.
func pieces(stream string) []string {
	end := "\n\n"
	if strings.Contains(stream, "\r\n") {
		end = "\r\n\r\n"
	}
	var out []string
	for stream != "" {
		i := strings.Index(stream, end)
		if i < 0 {
			return append(out, stream)
		}
		line := strings.LastIndexAny(stream[:i], "\r\n") + 1 // the event's last line
		cuts := []int{line + (i-line)/2, i + len(end)/2}
		if end != "\n\n" {
			cuts = append(cuts, i+3)
		}
		from := 0
		for _, c := range cuts {
			out = append(out, stream[from:c])
			from = c
		}
		stream = stream[from:]
	}
	return out
}

func (p *piecewise) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	model := jsonField(string(body), "model")
	p.mu.Lock()
	p.models = append(p.models, model)
	p.mu.Unlock()
	anthropicPath := strings.HasPrefix(r.URL.Path, "/upa/")
	if model == "retired" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		if anthropicPath {
			io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"model: retired"}}`) //nolint:errcheck // test
		} else {
			io.WriteString(w, `{"error":{"message":"The model `+"`retired`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`) //nolint:errcheck // test
		}
		return
	}
	stream := p.openai
	if anthropicPath {
		stream = p.anthropic
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, piece := range pieces(stream) {
		io.WriteString(w, piece) //nolint:errcheck // test
		w.(http.Flusher).Flush()
		time.Sleep(2 * time.Millisecond)
	}
}

// jsonField returns the string value of a top-level "key" in a small JSON
// object written as the SDKs write it.
func jsonField(body, key string) string {
	i := strings.Index(body, `"`+key+`":"`)
	if i < 0 {
		return ""
	}
	rest := body[i+len(key)+4:]
	return rest[:strings.IndexByte(rest, '"')]
}

// A stream that reaches detour in pieces cut anywhere reaches the official
// SDKs whole, event by event, on both surfaces, from a fallback at the
// same provider after the first model of the chain is gone: the SSE
// reader carries a line cut off at the end of a read into the next, keeps
// an event's data before a read that would write over it, and hands each
// event's data on where it lies.
func TestSDK_StreamInPiecesArrivesWhole(t *testing.T) {
	long := strings.Repeat("long line of text, ", 150) // 2,850 bytes: past half the read buffer
	medium := strings.Repeat("medium ", 50)            // 350 bytes: past the small buffer
	texts := []string{"Hello", " there.", medium, long, " Done."}
	var oa strings.Builder
	oa.WriteString(`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	var an strings.Builder
	an.WriteString("event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\r\n\r\n" +
		"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n")
	for _, s := range texts {
		oa.WriteString(`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n")
		an.WriteString("event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + s + "\"}}\r\n\r\n")
	}
	oa.WriteString(`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":700,"total_tokens":709}}` + "\n\ndata: [DONE]\n\n")
	an.WriteString("event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n" +
		"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":700}}\r\n\r\n" +
		"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n")
	up := &piecewise{openai: oa.String(), anthropic: an.String()}
	ts, _ := yamlGateway(t, up, `providers:
  up:  {dialect: openai, base_url: %[1]s/up/v1, key_env: UP_KEY}
  upa: {dialect: anthropic, base_url: %[1]s/upa, key_env: UP_KEY}
routes:
  oa:
    chain: [up/retired, up/gpt-4.1-mini]
  an:
    chain: [upa/retired, upa/claude-haiku-4-5]
`)
	want := strings.Join(texts, "")

	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	s := oc.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{Model: "oa",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say it.")}})
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for s.Next() {
		acc.AddChunk(s.Current())
		chunks++
	}
	if err := s.Err(); err != nil {
		t.Fatalf("openai stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want || acc.Choices[0].FinishReason != "stop" || acc.Model != "gpt-4.1-mini" {
		t.Errorf("the OpenAI SDK put together model %q, %+v; want %d bytes of text from gpt-4.1-mini", acc.Model, acc.Choices, len(want))
	}
	if chunks != len(texts)+2 {
		t.Errorf("the OpenAI SDK read %d chunks, want %d (role, texts, finish)", chunks, len(texts)+2)
	}

	ac := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	msg := accumulate(t, ac.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{Model: "an", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say it."))}}))
	if len(msg.Content) != 1 || msg.Content[0].Text != want || msg.StopReason != "end_turn" || msg.Model != "claude-haiku-4-5" ||
		msg.Usage.OutputTokens != 700 {
		t.Errorf("the Anthropic SDK put together %s; want %d bytes of text from claude-haiku-4-5", msg.RawJSON(), len(want))
	}

	up.mu.Lock()
	defer up.mu.Unlock()
	if got := strings.Join(up.models, ","); got != "retired,gpt-4.1-mini,retired,claude-haiku-4-5" {
		t.Errorf("the upstream was asked for %s: want each retired model once, then its fallback at the same provider", got)
	}
}
