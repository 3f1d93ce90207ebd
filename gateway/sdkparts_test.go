package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/ledger"
)

// The official OpenAI SDK sends a base64 image to a route whose first
// target, OpenAI dialect, answers 503, and whose fallback speaks
// Anthropic's: the fallback gets the text and an image block with the
// same bytes and media type, in order, and the SDK its answer.
func TestSDK_OpenAIImageFallsBackToAnthropic(t *testing.T) {
	var mu sync.Mutex
	var anthropicBody []byte
	openaiSends := 0
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/up/") {
			openaiSends++
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"The server is overloaded.","type":"server_error","param":null,"code":null}}`)
			return
		}
		anthropicBody = b
		w.Header().Set("Content-Type", "application/json")
		w.Write(surfaces[1].answer) //nolint:errcheck // a test upstream
	})
	ts, book := yamlGateway(t, up, `providers:
  up:  {dialect: openai, base_url: %[1]s/up/v1, key_env: UP_KEY}
  upa: {dialect: anthropic, base_url: %[1]s/upa, key_env: UP_KEY}
routes:
  vision:
    chain: [up/gpt-4o, upa/claude-sonnet-4-5]
    budget: {max_per_target: 1}
`)

	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	var resp *http.Response
	got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "vision",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this image?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png1x1}),
		})},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content == "" {
		t.Errorf("the SDK got %+v", got)
	}
	if d := resp.Header.Get("X-Detour-Dropped"); d != "" {
		t.Errorf("dropped %q: the image should be carried whole", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if openaiSends != 1 || anthropicBody == nil {
		t.Fatalf("%d sends to the OpenAI target, Anthropic body %q: want one 503, then the fallback", openaiSends, anthropicBody)
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					Type      string `json:"type"`
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(anthropicBody, &sent); err != nil || len(sent.Messages) != 1 || len(sent.Messages[0].Content) != 2 {
		t.Fatalf("the Anthropic upstream got %s (%v): want one user turn of a text and an image block", anthropicBody, err)
	}
	text, img := sent.Messages[0].Content[0], sent.Messages[0].Content[1]
	if text.Type != "text" || text.Text != "What is in this image?" {
		t.Errorf("first block %+v: want the text, first", text)
	}
	wantBytes, _ := base64.StdEncoding.DecodeString(png1x1)
	gotBytes, err := base64.StdEncoding.DecodeString(img.Source.Data)
	if img.Type != "image" || img.Source.Type != "base64" || img.Source.MediaType != "image/png" || err != nil ||
		string(gotBytes) != string(wantBytes) {
		t.Errorf("second block %+v: want an image block, base64 source, image/png, the same %d bytes", img, len(wantBytes))
	}
	recs := book.Records()
	if len(recs) != 2 || recs[0].Provider != "up" || recs[0].Status != "http_503" || recs[1].Provider != "upa" || recs[1].Status != ledger.StatusOK {
		t.Errorf("ledger %+v: want the failed OpenAI attempt, then the Anthropic one", recs)
	}
}
