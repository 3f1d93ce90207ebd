package classify_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/openai"
)

// sampleNow is the clock of the sample: the instant the reconstructed
// Anthropic rate-limit headers were captured (sample
// anthropic-429-with-ratelimit-headers), so their resets are in the future.
var sampleNow = time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)

// sampleCase is one line of testdata/errors/sample.jsonl (README there).
type sampleCase struct {
	ID          string            `json:"id"`
	Provider    string            `json:"provider"`
	Status      *int              `json:"status"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	Phase       string            `json:"phase"`
	Expect      string            `json:"expect"`
	RetryAfterS *float64          `json:"retry_after_s"`
	Source      string            `json:"source"`
	Note        string            `json:"note"`
}

// expectKind maps the sample's bucket names to kinds.
var expectKind = map[string]classify.Kind{
	"TRANSIENT":        classify.Transient,
	"WALL":             classify.Wall,
	"INVALID":          classify.Invalid,
	"CONTEXT_OVERFLOW": classify.ContextOverflow,
	"POLICY":           classify.Policy,
	"UNKNOWN":          classify.Unknown,
}

func loadSample(tb testing.TB) []sampleCase {
	tb.Helper()
	f, err := os.Open("../testdata/errors/sample.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []sampleCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c sampleCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatalf("sample line: %v", err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// sampleError turns one sample case into the error detour would see.
func sampleError(t *testing.T, c sampleCase) error {
	t.Helper()
	h := http.Header{}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	switch {
	case c.Phase == "network" || c.Status == nil:
		return networkError(c)
	case c.Phase == "stream":
		data, ok := errorFrame(c.Body)
		if !ok {
			t.Fatalf("no error frame in %q", c.Body)
		}
		e, ok := openai.ParseStreamError(data)
		if !ok {
			t.Fatalf("ParseStreamError(%q) found no error", data)
		}
		return e
	default:
		return fmt.Errorf("attempt 1: %w", openai.ParseError(*c.Status, h, []byte(c.Body)))
	}
}

// networkError builds the Go error a transport returns for a network case.
// A 200 whose stream then broke is a truncated stream, wrapping its cause.
func networkError(c sampleCase) error {
	text := strings.ToLower(c.ID + " " + c.Note)
	var cause error
	switch {
	case strings.Contains(text, "refused"):
		cause = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case strings.Contains(text, "reset"):
		cause = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case strings.Contains(text, "timeout"):
		cause = context.DeadlineExceeded
	case strings.Contains(text, "dns"), strings.Contains(text, "no such host"):
		cause = &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}
	default:
		cause = io.EOF
	}
	if c.Status != nil {
		return fmt.Errorf("%w: %w", llm.ErrStreamTruncated, cause)
	}
	return fmt.Errorf("Post %q: %w", "https://api.example.invalid/v1/chat/completions", cause)
}

// errorFrame returns the data of the first SSE event of an SSE body that
// carries an error.
func errorFrame(body string) ([]byte, bool) {
	for block := range strings.SplitSeq(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		var data []string
		for line := range strings.SplitSeq(block, "\n") {
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data = append(data, strings.TrimPrefix(v, " "))
			}
		}
		d := []byte(strings.Join(data, "\n"))
		if _, ok := openai.ParseStreamError(d); ok {
			return d, true
		}
	}
	return nil, false
}

// expectScope is the scope each sample's failure must get: the account's
// for a rejected key or the account's money, the target's for this model's
// limits, overload, absence or context, the attempt's for a cut stream, a
// refusal or an invalid request.
var expectScope = map[string]classify.Scope{
	"anthropic-400-prompt-too-long":               classify.ScopeTarget,
	"anthropic-429-itpm-rate-limit":               classify.ScopeTarget,
	"anthropic-429-with-ratelimit-headers":        classify.ScopeTarget,
	"anthropic-openai-compat-429":                 classify.ScopeTarget,
	"anthropic-400-user-spend-limit":              classify.ScopeAccount,
	"anthropic-402-billing-error":                 classify.ScopeAccount,
	"anthropic-400-credit-balance-too-low":        classify.ScopeAccount,
	"net-stream-eof-without-terminal-event":       classify.ScopeAttempt,
	"net-reset-after-first-sse-event":             classify.ScopeAttempt,
	"azure-200-finish-reason-content-filter":      classify.ScopeAttempt,
	"azure-429-retry-after-86400":                 classify.ScopeTarget,
	"bedrock-400-input-too-long":                  classify.ScopeTarget,
	"cerebras-429-tpm":                            classify.ScopeTarget,
	"cerebras-404-model-not-found":                classify.ScopeTarget,
	"cerebras-429-tpd-long-retry-after":           classify.ScopeTarget,
	"deepseek-429-rate-limit-reached":             classify.ScopeTarget,
	"deepseek-401-auth-fails":                     classify.ScopeAccount,
	"gemini-200-finish-reason-safety":             classify.ScopeAttempt,
	"gemini-503-model-overloaded":                 classify.ScopeTarget,
	"gemini-429-no-details":                       classify.ScopeTarget,
	"gemini-429-limit-zero":                       classify.ScopeTarget,
	"gemini-404-model-not-found":                  classify.ScopeTarget,
	"gemini-400-bad-model-name":                   classify.ScopeTarget,
	"groq-498-flex-capacity-exceeded":             classify.ScopeTarget,
	"groq-424-failed-dependency":                  classify.ScopeTarget,
	"groq-401-invalid-api-key":                    classify.ScopeAccount,
	"groq-413-request-too-large-for-tpm":          classify.ScopeTarget,
	"llamacpp-400-exceed-context-size":            classify.ScopeTarget,
	"mistral-400-image-input-not-enabled":         classify.ScopeAttempt,
	"mistral-429-requests-rate-limit":             classify.ScopeTarget,
	"mistral-500-service-unavailable":             classify.ScopeTarget,
	"mistral-401-unauthorized":                    classify.ScopeAccount,
	"openai-chat-400-unsupported-parameter":       classify.ScopeAttempt,
	"openai-429-tpm-ms":                           classify.ScopeTarget,
	"openai-429-slow-down":                        classify.ScopeTarget,
	"openai-responses-stream-error-event":         classify.ScopeTarget,
	"openai-429-rpd-short-drip":                   classify.ScopeTarget,
	"openai-429-rpd-long-wait":                    classify.ScopeTarget,
	"openai-chat-401-invalid-api-key":             classify.ScopeAccount,
	"openai-429-insufficient-quota":               classify.ScopeAccount,
	"openrouter-400-provider-returned-error":      classify.ScopeAttempt,
	"openrouter-402-insufficient-credits":         classify.ScopeTarget,
	"openrouter-401-auth":                         classify.ScopeAccount,
	"together-429-rate-limited-credit-limit-type": classify.ScopeTarget,
	"together-401-invalid-api-key":                classify.ScopeAccount,
	"vllm-400-context-length":                     classify.ScopeTarget,
	"xai-400-incorrect-api-key":                   classify.ScopeAccount,
}

// TestSample classifies every real failure of the shared corpus and checks
// its kind, and its retry_after_s where the corpus gives one that does not
// depend on the current date.
func TestSample(t *testing.T) {
	cases := loadSample(t)
	if len(cases) == 0 {
		t.Fatal("empty sample")
	}
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			want, ok := expectKind[c.Expect]
			if !ok {
				t.Fatalf("unknown expect %q", c.Expect)
			}
			f := classify.Classify(sampleError(t, c), sampleNow)
			t.Logf("%s %s code=%q wait=%v should_retry=%d: %s", f.Kind, f.Status, f.Code, f.RetryAfter, f.ShouldRetry, f.Reason)
			if f.Kind != want {
				t.Errorf("Kind = %s, want %s (reason %q; source %s)", f.Kind, want, f.Reason, c.Source)
			}
			if ws, ok := expectScope[c.ID]; !ok {
				t.Errorf("no expected scope for %s: add it to expectScope", c.ID)
			} else if f.Scope != ws {
				t.Errorf("Scope = %s, want %s (reason %q)", f.Scope, ws, f.Reason)
			}
			if c.RetryAfterS != nil {
				want := time.Duration(math.Round(*c.RetryAfterS * 1e9))
				if d := f.RetryAfter - want; d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("RetryAfter = %v, want %v", f.RetryAfter, want)
				}
				if !f.Until.Equal(sampleNow.Add(f.RetryAfter)) && f.Kind != classify.Wall {
					t.Errorf("Until = %v, want now+%v", f.Until, f.RetryAfter)
				}
			}
			checkFailure(t, f)
		})
	}
}

// checkFailure checks what every Failure promises.
func checkFailure(t *testing.T, f classify.Failure) {
	t.Helper()
	if f.Kind == "" || f.Status == "" || f.Reason == "" {
		t.Errorf("incomplete failure %+v", f)
	}
	if n := utf8.RuneCountInString(f.Reason); n > classify.MaxReason {
		t.Errorf("Reason has %d runes: %q", n, f.Reason)
	}
	if strings.ContainsAny(f.Reason, "\r\n") || !utf8.ValidString(f.Reason) {
		t.Errorf("Reason not one valid line: %q", f.Reason)
	}
	if f.RetryAfter < 0 {
		t.Errorf("negative RetryAfter %v", f.RetryAfter)
	}
}
