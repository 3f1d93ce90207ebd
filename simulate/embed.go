package simulate

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Embeddings, as OpenAI's API reference shows them
// (https://platform.openai.com/docs/api-reference/embeddings: a body
// pretty-printed with two spaces, "object": "list", each vector an
// "embedding" object with its index, usage with prompt_tokens and
// total_tokens; a base64 string per vector when encoding_format asks) and
// as the Gemini API's (https://ai.google.dev/api/embeddings:
// {"embedding": {"values": [...]}} from :embedContent, {"embeddings":
// [...]} from :batchEmbedContents, in the order asked, no usage).

// EmbedDimensions is the length of the vectors a provider answers with
// when the request asks for no other (OpenAI's dimensions, Gemini's
// outputDimensionality).
const EmbedDimensions = 8

// maxEmbedDimensions caps what a request may ask for.
const maxEmbedDimensions = 4096

// Vector returns the vector a simulated provider answers for text with
// model: dims numbers (EmbedDimensions when dims is 0) drawn from a hash of
// model and text, scaled to length 1. The same model and text always give
// the same vector, whatever the provider and dialect; another model gives
// another.
func Vector(model, text string, dims int) []float32 {
	if dims <= 0 {
		dims = EmbedDimensions
	}
	v := make([]float32, dims)
	var sum float64
	for i := range v {
		h := fnv.New64a()
		h.Write([]byte(model + "\x00" + text + "\x00" + strconv.Itoa(i)))
		x := float64(mix(h.Sum64())>>11)/float64(1<<53)*2 - 1
		v[i], sum = float32(x), sum+x*x
	}
	if n := math.Sqrt(sum); n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / n)
		}
	}
	return v
}

// mix is SplitMix64's finalizer: FNV's high bits barely move when only
// the last bytes differ, and these numbers are read from the high bits.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// embedReq is an embeddings request as read from either dialect.
type embedReq struct {
	model  string
	input  []string
	dims   int
	base64 bool // OpenAI: encoding_format base64
	gemini bool // the answer is Gemini's
	batch  bool // Gemini: :batchEmbedContents
}

// parseOpenAIEmbed reads a POST /v1/embeddings body: input a string, a
// list of strings, or token ids (each list kept as its JSON text).
func parseOpenAIEmbed(body []byte) (*embedReq, *reqError) {
	var in struct {
		Model          *string         `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     int             `json:"dimensions"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &reqError{status: 400, kind: BadRequest,
			msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON."}
	}
	if in.Model == nil || *in.Model == "" {
		return nil, &reqError{status: 400, kind: BadRequest, msg: "you must provide a model parameter"}
	}
	r := &embedReq{model: *in.Model, dims: in.Dimensions, base64: in.EncodingFormat == "base64"}
	bad := &reqError{status: 400, kind: BadRequest, model: r.model, param: "input",
		msg: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."}
	var one string
	var list []json.RawMessage
	switch {
	case json.Unmarshal(in.Input, &one) == nil:
		r.input = []string{one}
	case json.Unmarshal(in.Input, &list) == nil && len(list) > 0:
		if list[0][0] != '"' && list[0][0] != '[' {
			r.input = []string{string(in.Input)} // one list of token ids
			break
		}
		for _, it := range list {
			var s string
			if json.Unmarshal(it, &s) != nil {
				s = string(it)
			}
			r.input = append(r.input, s)
		}
	default:
		return nil, bad
	}
	switch {
	case in.EncodingFormat != "" && in.EncodingFormat != "float" && in.EncodingFormat != "base64":
		return nil, &reqError{status: 400, kind: BadRequest, model: r.model, param: "encoding_format",
			msg: "Invalid value for 'encoding_format': " + strconv.Quote(in.EncodingFormat) + ". Supported values are: 'float' and 'base64'."}
	case r.dims < 0 || r.dims > maxEmbedDimensions:
		return nil, &reqError{status: 400, kind: BadRequest, model: r.model, param: "dimensions",
			msg: "Invalid value for 'dimensions' = " + strconv.Itoa(r.dims) + ". Must be between 1 and " + strconv.Itoa(maxEmbedDimensions) + "."}
	}
	return r, nil
}

// geminiEmbedIn is one EmbedContentRequest.
type geminiEmbedIn struct {
	Model   string `json:"model"`
	Content *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"content"`
	OutputDimensionality      int `json:"outputDimensionality"`
	OutputDimensionalitySnake int `json:"output_dimensionality"`
}

// parseGeminiEmbed reads the body of :embedContent (batch false) or
// :batchEmbedContents for model.
func parseGeminiEmbed(body []byte, model string, batch bool) (*embedReq, *reqError) {
	r := &embedReq{model: model, gemini: true, batch: batch}
	invalid := func(msg string) *reqError {
		return &reqError{status: 400, kind: BadRequest, model: model, msg: msg}
	}
	var ins []geminiEmbedIn
	if batch {
		var b struct {
			Requests []geminiEmbedIn `json:"requests"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, invalid("Invalid JSON payload received. " + err.Error())
		}
		if len(b.Requests) == 0 {
			return nil, invalid("* BatchEmbedContentsRequest.requests: contents is not specified\n")
		}
		for i, q := range b.Requests {
			if strings.TrimPrefix(q.Model, "models/") != model {
				return nil, invalid("Model in request " + strconv.Itoa(i) + " (" + strconv.Quote(q.Model) +
					") does not match the model in the URL (models/" + model + ").")
			}
		}
		ins = b.Requests
	} else {
		var one geminiEmbedIn
		if err := json.Unmarshal(body, &one); err != nil {
			return nil, invalid("Invalid JSON payload received. " + err.Error())
		}
		ins = []geminiEmbedIn{one}
	}
	for _, q := range ins {
		if q.Content == nil || len(q.Content.Parts) == 0 {
			return nil, invalid("* EmbedContentRequest.content: contents is not specified\n")
		}
		var sb strings.Builder
		for _, p := range q.Content.Parts {
			sb.WriteString(p.Text)
		}
		r.input = append(r.input, sb.String())
		r.dims = either(q.OutputDimensionality, q.OutputDimensionalitySnake)
	}
	if r.dims < 0 || r.dims > maxEmbedDimensions {
		return nil, invalid("* EmbedContentRequest.output_dimensionality: must be between 1 and " + strconv.Itoa(maxEmbedDimensions) + "\n")
	}
	return r, nil
}

// tokens estimates the request's input tokens: about four characters each.
func (r *embedReq) tokens() int {
	n := 0
	for _, s := range r.input {
		n += (utf8.RuneCountInString(s) + 3) / 4
	}
	return max(n, 1)
}

// serveEmbed answers a well-formed embeddings request: an unknown model
// gets a ModelNotFound, anything else the next scripted or drawn fault, as
// a chat request would. Faults that shape a stream shape the body (cut,
// stalled or cut short); StreamError is a ServerError.
func (s *Server) serveEmbed(ctx context.Context, w http.ResponseWriter, t *target, req *embedReq, ec errCtx) {
	ec.model, ec.promptTokens, ec.stream = req.model, req.tokens(), false
	rec := Record{Model: req.model, Embed: true}
	if !s.known(ctx, w, t, rec, ec) {
		return
	}
	f := s.draw(t, rec)
	ec.f = f
	wa := wireAnswer{body: req.answer(), bodyType: "application/json"}
	if req.gemini {
		wa.bodyType = "application/json; charset=UTF-8"
	} else {
		wa.header = http.Header{"X-Request-Id": {ec.requestID}, "Openai-Model": {req.model}}
	}
	applyHeader(w.Header(), wa.header)
	switch f.Kind {
	case OK, NoDone, ContentFilter, StreamMalformedEvent:
		s.whole(ctx, w, t, 0, &wa, ec, endNormal)
	case SlowFirstToken, LateFirstToken:
		if s.sleep(ctx, f.Delay, false) {
			s.whole(ctx, w, t, 0, &wa, ec, endNormal)
		}
	case Hang:
		<-ctx.Done()
	case Reset:
		if s.sleep(ctx, t.Latency.Error, true) {
			abortConn(w, true)
		}
	case StreamCut:
		s.whole(ctx, w, t, 0, &wa, ec, endCut)
	case StreamStall:
		s.whole(ctx, w, t, 0, &wa, ec, endStall)
	case StreamMalformed:
		s.whole(ctx, w, t, 0, &wa, ec, endMalformed)
	default:
		s.sendError(ctx, w, t, ec.reply(), f.Header)
	}
}

// answer is the request's answer body in its dialect.
func (r *embedReq) answer() []byte {
	type values struct {
		Values []float32 `json:"values"`
	}
	var v any
	switch {
	case r.gemini && !r.batch:
		v = struct {
			Embedding values `json:"embedding"`
		}{values{Vector(r.model, r.input[0], r.dims)}}
	case r.gemini:
		list := make([]values, len(r.input))
		for i, text := range r.input {
			list[i] = values{Vector(r.model, text, r.dims)}
		}
		v = struct {
			Embeddings []values `json:"embeddings"`
		}{list}
	default:
		type item struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding any    `json:"embedding"`
		}
		type usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
		data := make([]item, len(r.input))
		for i, text := range r.input {
			var e any = Vector(r.model, text, r.dims)
			if r.base64 {
				e = vectorBase64(e.([]float32))
			}
			data[i] = item{Object: "embedding", Index: i, Embedding: e}
		}
		v = struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
			Usage  usage  `json:"usage"`
		}{"list", data, r.model, usage{r.tokens(), r.tokens()}}
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// vectorBase64 is v as OpenAI's encoding_format base64 sends it:
// little-endian float32s.
func vectorBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
