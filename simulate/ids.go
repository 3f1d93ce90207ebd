package simulate

import (
	"hash/fnv"
	"net/http"
	"unicode/utf8"
)

// Identifiers in answers look like the real ones (chatcmpl-<29>, call_<24>,
// req_<32 hex>, fp_<10 hex>) but are derived from the request's sequence
// number, so a test that sends the same requests gets the same bytes.

const (
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	hexDigits = "0123456789abcdef"
)

// splitmix is the SplitMix64 finaliser: a cheap, well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// token returns n characters of alphabet derived from seed.
func token(seed uint64, n int, alphabet string) string {
	b := make([]byte, n)
	x := seed
	for i := range b {
		x = splitmix(x)
		b[i] = alphabet[x%uint64(len(alphabet))]
	}
	return string(b)
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func requestID(seq uint64) string {
	return "req_" + token(seq^0x7265715f, 32, hexDigits)
}

// splitRunes cuts s into pieces of at most n runes.
func splitRunes(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// writeModels answers GET /v1/models with OpenAI's list shape.
func writeModels(w http.ResponseWriter, t *target, reqID string) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	v := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range t.Models {
		v.Data = append(v.Data, model{ID: m, Object: "model", Created: 1686935002, OwnedBy: t.Name})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", reqID)
	w.Write(append(marshalIndent(v, "  "), '\n')) //nolint:errcheck // nothing to do for a gone client
}
