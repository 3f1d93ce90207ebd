package exchange

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

func TestRedact_ProviderErrorInPlaceAndWrappedMessages(t *testing.T) {
	pe := &llm.ProviderError{Status: 401, Message: "bad key " + testKey, Type: "t" + testKey,
		Code: testKey, Param: "p=" + testKey, Body: []byte(`{"key":"` + testKey + `"}`)}
	err := Redact(fmt.Errorf("openai: %w", pe), testKey)
	for _, s := range []string{err.Error(), pe.Message, pe.Type, pe.Code, pe.Param, string(pe.Body)} {
		if strings.Contains(s, testKey) {
			t.Errorf("key left in %q", s)
		}
	}
	var got *llm.ProviderError
	if !errors.As(err, &got) || got != pe {
		t.Errorf("errors.As lost the ProviderError: %v", err)
	}

	wrapped := Redact(fmt.Errorf("reading %s: %w", testKey, io.ErrUnexpectedEOF), testKey)
	if strings.Contains(wrapped.Error(), testKey) || !errors.Is(wrapped, io.ErrUnexpectedEOF) {
		t.Errorf("Redact = %v, want the key gone and io.ErrUnexpectedEOF kept", wrapped)
	}
}

func TestRedact_LeavesShortKeysNilAndCleanErrorsAlone(t *testing.T) {
	short := errors.New("model ollama not found")
	clean := errors.New("nothing secret here")
	for _, tc := range []struct {
		name string
		err  error
		key  string
	}{
		{"short key", short, "ollama"},
		{"empty key", short, ""},
		{"no key in it", clean, testKey},
		{"nil", nil, testKey},
		{"EOF", io.EOF, testKey},
	} {
		if got := Redact(tc.err, tc.key); got != tc.err {
			t.Errorf("%s: Redact = %v, want the error unchanged", tc.name, got)
		}
	}
}

// redactKey is shaped like no known key, and its + and / give the
// escaped forms something to escape.
const redactKey = "Zq8RvT3m+Kx7LpW2/nYc5HbJ4dFg6SeU"

// every returns s with each byte written by format.
func every(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// forms are the ways an upstream may echo key that Redact must catch.
func forms(key string) []struct{ name, text string } {
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	mixed := []byte(key)
	for i := range mixed {
		if i%2 == 0 {
			mixed[i] = strings.ToUpper(string(mixed[i]))[0]
		} else {
			mixed[i] = strings.ToLower(string(mixed[i]))[0]
		}
	}
	n := runLen(len(key))
	return []struct{ name, text string }{
		{"exact", key},
		{"upper", strings.ToUpper(key)},
		{"lower", strings.ToLower(key)},
		{"mixed case", string(mixed)},
		{"cut by two at the end", key[:len(key)-2]},
		{"cut by two at the start", key[2:]},
		{"shortest run, from the start", key[:n]},
		{"shortest run, from the middle", key[5 : 5+n]},
		{"shortest run, upper", strings.ToUpper(key[len(key)-n:])},
		{`JSON \/`, strings.ReplaceAll(key, "/", `\/`)},
		{`JSON \u00XX`, every(key, `\u%04x`)},
		{`JSON \u00XX upper hex`, every(key, `\u%04X`)},
		{`JavaScript \xXX`, every(key, `\x%02x`)},
		{"URL query", url.QueryEscape(key)},
		{"URL path", url.PathEscape(key)},
		{"URL every byte, upper hex", every(key, "%%%02X")},
		{"URL every byte, lower hex", every(key, "%%%02x")},
		{"HTML entities", every(key, "&#%d;")},
		{"HTML hex entities", every(key, "&#x%x;")},
		{"URL-encoded, then JSON-escaped", every(url.QueryEscape(key), `\u%04x`)},
		{"URL-encoded twice", url.QueryEscape(url.QueryEscape(key))},
		{"base64 Bearer", b64(base64.StdEncoding, "Bearer "+key)},
		{"base64 Bearer unpadded", b64(base64.RawStdEncoding, "Bearer "+key)},
		{"base64url Bearer", b64(base64.URLEncoding, "Bearer "+key)},
		{"base64url Bearer unpadded", b64(base64.RawURLEncoding, "Bearer "+key)},
		{"base64 key", b64(base64.StdEncoding, key)},
		{"base64url key unpadded", b64(base64.RawURLEncoding, key)},
		{"base64 Basic user:key", b64(base64.StdEncoding, "user:"+key)},
		{"base64url Basic admin:key unpadded", b64(base64.RawURLEncoding, "admin:"+key)},
		{"base64 Bearer, cut", b64(base64.StdEncoding, "Bearer "+key)[:32]},
		{"base64 Bearer, JSON-escaped slashes", strings.ReplaceAll(b64(base64.StdEncoding, "Bearer "+key), "/", `\/`)},
		{"base64 Bearer, URL-encoded", url.QueryEscape(b64(base64.StdEncoding, "Bearer "+key))},
	}
}

func TestRedactString_HidesTheKeyTransformed(t *testing.T) {
	for _, key := range []string{redactKey, "sk-proj-" + strings.Repeat("aB3dE6gH9jK2", 13), "0123456789abcdef"} {
		for _, f := range forms(key) {
			in := "upstream said: " + f.text + ". Try again."
			got := RedactString(in, key)
			if got == in || !strings.Contains(got, redacted) {
				t.Errorf("key %.12s…, %s: %q left as it was", key, f.name, in)
				continue
			}
			if !strings.HasPrefix(got, "upstream said: ") || !strings.HasSuffix(got, ". Try again.") {
				t.Errorf("key %.12s…, %s: the text around the key changed: %q", key, f.name, got)
			}
			if leaks := leaksOf(got, key); leaks != nil {
				t.Errorf("key %.12s…, %s: %q leaks %v", key, f.name, got, leaks)
			}
		}
	}
}

func TestRunLen_IsAtLeastEightAndHalfTheKeyUpToTwelve(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{8, 8}, {12, 8}, {16, 8}, {17, 9}, {20, 10}, {22, 11}, {23, 12}, {24, 12}, {51, 12}, {164, 12},
	} {
		if got := runLen(tc.n); got != tc.want {
			t.Errorf("runLen(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestRedactString_RunShorterThanTheRuleIsLeft(t *testing.T) {
	for _, key := range []string{"0123456789", "abcdefghijklmnopqrst", redactKey, "sk-proj-" + strings.Repeat("x7Qz", 40)} {
		n := runLen(len(key))
		short := key[len(key)-n+1:]
		in := "a run of " + strings.ToUpper(short) + " is not the key"
		if got := RedactString(in, key); got != in {
			t.Errorf("key %.12s…: a run of %d (rule %d) was redacted: %q", key, len(short), n, got)
		}
		in = "a run of " + key[:n] + " is"
		if got := RedactString(in, key); got == in {
			t.Errorf("key %.12s…: a run of %d (the rule) was left: %q", key, n, got)
		}
	}
}

func TestRedactString_LeavesOtherTextAlone(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("aB3dE6gH9jK2", 4)
	for _, in := range []string{
		"Incorrect API key provided: sk-proj-****************************aBjK. You can find your API key at https://platform.openai.com/account/api-keys.",
		`{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29800.","type":"tokens","code":"rate_limit_exceeded"}}`,
		"The model `gpt-4o-2024-08-06` does not exist or you do not have access to it. %20 \\u0041 &#65; \\n",
		"QmVhcmVyIHNvbWV0aGluZyBlbHNlIGVudGlyZWx5", // base64 of another Bearer value
		"",
	} {
		if got := RedactString(in, key); got != in {
			t.Errorf("RedactString changed text without the key:\n in: %q\nout: %q", in, got)
		}
	}
	if got := RedactString("key abcdefg here", "abcdefg"); got != "key abcdefg here" {
		t.Errorf("a key of 7 bytes was redacted: %q", got)
	}
	if got := RedactString("key ABCDEFGH here", "abcdefgh"); got != "key [redacted] here" {
		t.Errorf("an 8-byte key, upper = %q, want it redacted", got)
	}
	if got := RedactString("key abcdefg here", "abcdefgh"); got != "key abcdefg here" {
		t.Errorf("an 8-byte key cut by one = %q, want it left (shorter than any run the rule takes)", got)
	}
}

func TestRedactString_WidensOverTheTokenAndNeverCutsAnEscape(t *testing.T) {
	k := redactKey
	for _, tc := range []struct{ name, in, want string }{
		{"a changed character leaves no piece", "key " + k[:14] + "!" + k[15:] + " end", "key [redacted]![redacted] end"},
		{"the token's other characters go too", "token=xx" + k + "yy&a=1", "token=[redacted]&a=1"},
		{"an escape before the key goes whole", `"\n` + k + `\u0041"`, `"[redacted]\u0041"`},
		{"a percent escape before the key goes whole", "a=%2B" + k, "a=[redacted]"},
		{"base64 with its padding", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+k)) + ", next", "Basic [redacted], next"},
	} {
		if got := RedactString(tc.in, k); got != tc.want {
			t.Errorf("%s: RedactString(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestRedact_KeepsJSONBodiesValid(t *testing.T) {
	for _, f := range forms(redactKey) {
		msg := "echo \n" + f.text + "\t<" + f.text + ">\"" + strings.ToLower(f.text) + `\`
		body, _ := json.Marshal(map[string]string{"message": msg, "hint": `\/` + f.text})
		pe := &llm.ProviderError{Status: 400, Body: body}
		Redact(pe, redactKey)
		if !json.Valid(pe.Body) {
			t.Errorf("%s: the redacted body is not JSON: %s", f.name, pe.Body)
			continue
		}
		var got map[string]string
		json.Unmarshal(pe.Body, &got) //nolint:errcheck // valid, checked above
		for k, v := range got {
			if leaks := leaksOf(v, redactKey); leaks != nil || !strings.Contains(v, redacted) {
				t.Errorf("%s: %s = %q, leaks %v", f.name, k, v, leaks)
			}
		}
	}
}

func TestRedact_HeaderValuesURLErrorsAndWrappersTransformed(t *testing.T) {
	upper := strings.ToUpper(redactKey)
	pe := &llm.ProviderError{Status: 401, Message: "bad key " + upper,
		Header: http.Header{"X-Echo": {"Bearer " + strings.ToLower(redactKey)}, "Retry-After": {"3"}}}
	err := Redact(fmt.Errorf("anthropic: %w: %w (%s)", io.ErrUnexpectedEOF, pe, url.QueryEscape(redactKey)), redactKey)
	for _, s := range []string{err.Error(), pe.Message, pe.Header.Get("X-Echo")} {
		if leaks := leaksOf(s, redactKey); leaks != nil {
			t.Errorf("%q leaks %v", s, leaks)
		}
	}
	if pe.Header.Get("Retry-After") != "3" {
		t.Errorf("Retry-After = %q, want 3 untouched", pe.Header.Get("Retry-After"))
	}
	var got *llm.ProviderError
	if !errors.As(err, &got) || got != pe || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is/As lost the wrapped errors: %v", err)
	}

	ue := &url.Error{Op: "Post", URL: "https://h/v1?key=" + strings.ToLower(redactKey[:20]), Err: io.ErrUnexpectedEOF}
	err = Redact(ue, redactKey)
	if leaks := leaksOf(err.Error(), redactKey); leaks != nil || !strings.Contains(ue.URL, redacted) {
		t.Errorf("url.Error = %v, leaks %v", err, leaks)
	}
}

func TestRedactString_NoMatchAllocatesNothing(t *testing.T) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog 0123456789. ", 200)
	RedactString(s, redactKey)
	if n := testing.AllocsPerRun(20, func() { RedactString(s, redactKey) }); n != 0 {
		t.Errorf("RedactString of text without the key or escapes: %v allocations, want 0", n)
	}
}

// TestRedactString_LinearInTheText checks that text full of the key costs
// a bounded number of byte visits per byte, by timing against clean text
// of the same length: a matcher that walks the text again for each match
// is hundreds of times slower on it.
func TestRedactString_LinearInTheText(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	full := strings.Repeat(redactKey+"x", 2000)
	clean := strings.Repeat("y", len(full))
	time := func(s string) float64 {
		return float64(testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				RedactString(s, redactKey)
			}
		}).NsPerOp())
	}
	if c, f := time(clean), time(full); f > 40*c {
		t.Errorf("text full of the key takes %.0f ns, clean text %.0f ns: not linear", f, c)
	}
}

func BenchmarkRedactString(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"clean 64KiB", strings.Repeat("The quick brown fox jumps over the lazy dog 0123456789. ", 1170)},
		{"escapes 64KiB", strings.Repeat(`The \"quick\" brown fox\n jumps %20over the lazy dog. `, 1170)},
		{"keys 64KiB", strings.Repeat(redactKey+" ", 1985)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				RedactString(bc.text, redactKey)
			}
		})
	}
}
