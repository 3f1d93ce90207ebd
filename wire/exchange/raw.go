package exchange

import (
	"fmt"

	"github.com/detourhq/detour/internal/jsonedit"
	"github.com/detourhq/detour/internal/jsonw"
)

// Owned are the top-level fields of a client's body that detour owns and
// never passes on: "models", a request's own candidate list (the router
// walks it; passed on, an upstream like OpenRouter would fall back a
// second time and bill twice), and "detour", the per-request controls.
var Owned = []string{"models", "detour"}

// RawBody returns a client's raw request body (llm.Raw) made ready for one
// send to model: the fields of Owned left out, "model" set, and for a
// stream "stream": true plus the stream options the dialect needs
// (streamOptions, nil for none; its fields are set over the client's own
// options), for a non-streamed call "stream" and "stream_options" left
// out. Every other field passes unchanged. name prefixes the error of a
// body that is not a JSON object.
func RawBody(name string, body []byte, model string, stream bool, streamOptions ...jsonedit.Field) ([]byte, error) {
	drop := Owned
	set := make([]jsonedit.Field, 0, 3)
	set = append(set, jsonedit.Field{Key: "model", Value: jsonw.String(make([]byte, 0, len(model)+2), model)})
	if stream {
		set = append(set, jsonedit.Field{Key: "stream", Value: []byte("true")})
		if len(streamOptions) > 0 {
			opts, _ := jsonedit.Value(body, "stream_options")
			if len(opts) == 0 || string(opts) == "null" {
				opts = []byte("{}") // none: no reading through encoding/json for nothing
			}
			merged, ok := jsonedit.Object(nil, opts, nil, streamOptions...)
			if !ok {
				merged, _ = jsonedit.Object(nil, []byte("{}"), nil, streamOptions...)
			}
			set = append(set, jsonedit.Field{Key: "stream_options", Value: merged})
		}
	} else {
		drop = append(drop[:len(drop):len(drop)], "stream", "stream_options")
	}
	out, ok := jsonedit.Object(make([]byte, 0, len(body)+len(model)+48), body, drop, set...)
	if !ok {
		return nil, fmt.Errorf("%s: the request body is not a JSON object", name)
	}
	return out, nil
}
