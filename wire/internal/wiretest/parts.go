package wiretest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

// Encoder is a dialect's request encoder, its stream argument bound.
type Encoder func(req *llm.Request) ([]byte, error)

// OnlyMessage encodes a request of msg alone for model and returns the
// JSON of the one entry of the body's list under key ("messages",
// "contents"), as the encoder wrote it.
func OnlyMessage(t testing.TB, encode Encoder, key, model string, msg llm.Message) string {
	t.Helper()
	b, err := encode(&llm.Request{Model: model, Messages: []llm.Message{msg}})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]json.RawMessage
	var list []json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil || json.Unmarshal(body[key], &list) != nil || len(list) != 1 {
		t.Fatalf("body %s: want one entry under %q (%v)", b, key, err)
	}
	return string(list[0])
}

// WantEncodeError checks that encode refuses a request of msg alone with
// an error saying want: a part the dialect cannot carry is never left out.
func WantEncodeError(t testing.TB, encode Encoder, msg llm.Message, want string) {
	t.Helper()
	b, err := encode(&llm.Request{Messages: []llm.Message{msg}})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("EncodeRequest = %s, %v; want an error saying %q", b, err, want)
	}
}

// WantCarries checks what c says it carries, need by need.
func WantCarries(t testing.TB, c llm.Carrier, want map[string]bool) {
	t.Helper()
	for need, w := range want {
		if got := c.Carries(need); got != w {
			t.Errorf("Carries(%q) = %v, want %v", need, got, w)
		}
	}
}
