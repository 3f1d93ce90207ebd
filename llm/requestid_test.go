package llm

import (
	"net/http"
	"strings"
	"testing"
)

func TestProviderRequestID(t *testing.T) {
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   string
	}{
		{"x-request-id first", http.Header{"X-Request-Id": {"a"}, "Request-Id": {"b"}, "Cf-Ray": {"c"}, "X-Amzn-Requestid": {"d"}}, "", "a"},
		{"request-id before cf-ray", http.Header{"Request-Id": {"b"}, "Cf-Ray": {"c"}}, "", "b"},
		{"cf-ray before amzn", http.Header{"Cf-Ray": {"c"}, "X-Amzn-Requestid": {"d"}}, "", "c"},
		{"amzn", http.Header{"X-Amzn-Requestid": {"d"}}, "", "d"},
		{"an empty header is passed over", http.Header{"X-Request-Id": {" \x01 "}, "Cf-Ray": {"c"}}, "", "c"},
		{"header before body", http.Header{"Request-Id": {"h"}}, `{"request_id":"b"}`, "h"},
		{"anthropic body", nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CUB2XUHWkFnQzxcKBbjpF"}`, "req_011CUB2XUHWkFnQzxcKBbjpF"},
		{"nested request_id is not the body's", nil, `{"error":{"request_id":"x"}}`, ""},
		{"non-string request_id", nil, `{"request_id":42}`, ""},
		{"not JSON", nil, `request_id: x`, ""},
		{"array", nil, `[{"request_id":"x"}]`, ""},
		{"none", nil, "", ""},
	}
	for _, c := range cases {
		if got := ProviderRequestID(c.header, []byte(c.body)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCleanRequestID(t *testing.T) {
	long := strings.Repeat("x", 500)
	cases := map[string]string{
		"req_1":                "req_1",
		"  req_1\t":            "req_1",
		"req\x00_\x1b[0m1\x7f": "req_[0m1",
		"r\u00e9q\u2028":       "rq",
		"a\r\nSet-Cookie: b":   "aSet-Cookie: b",
		long:                   long[:MaxProviderRequestID],
		"\x01" + long:          long[:MaxProviderRequestID],
		"":                     "",
		long[:127] + " b":      long[:127],
	}
	for in, want := range cases {
		if got := CleanRequestID(in); got != want {
			t.Errorf("CleanRequestID(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzProviderRequestID: whatever the headers and body, the id is at most
// MaxProviderRequestID bytes of printable ASCII with no space at its ends,
// and cleaning it again changes nothing.
func FuzzProviderRequestID(f *testing.F) {
	f.Add("req_1", "", `{"request_id":"req_2"}`)
	f.Add("", "8e1f-AMS", "")
	f.Add("\x00\x7f\xff", "", `{"request_id":"\u0000a\u00e9"}`)
	f.Add("", "", `{"request_id":"`+strings.Repeat("z", 200)+`"}`)
	f.Fuzz(func(t *testing.T, xrid, ray, body string) {
		h := http.Header{}
		if xrid != "" {
			h["X-Request-Id"] = []string{xrid}
		}
		if ray != "" {
			h["Cf-Ray"] = []string{ray}
		}
		id := ProviderRequestID(h, []byte(body))
		if len(id) > MaxProviderRequestID {
			t.Fatalf("%d bytes", len(id))
		}
		for i := 0; i < len(id); i++ {
			if id[i] < 0x20 || id[i] > 0x7e {
				t.Fatalf("byte %#x in %q", id[i], id)
			}
		}
		if strings.TrimSpace(id) != id || CleanRequestID(id) != id {
			t.Fatalf("%q is not clean", id)
		}
	})
}
