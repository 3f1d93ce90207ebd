package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The OpenAI embeddings surface: POST /v1/embeddings in, an embeddings
// list out, in the shapes of OpenAI's API reference
// (https://platform.openai.com/docs/api-reference/embeddings).

// maxEmbedInputs caps the texts of one request, as OpenAI does.
const maxEmbedInputs = 2048

// embedFields are the fields an embeddings request may carry. Any other
// is refused rather than dropped unseen: every field reaches a target
// that honours it, or the request says why not.
var embedFields = []string{"model", "models", "input", "encoding_format", "dimensions", "user"}

// oaEmbedRequest is an embeddings request as the surface reads it.
type oaEmbedRequest struct {
	Model          string          `json:"model"`
	Models         []string        `json:"models"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

// parseEmbed reads an embeddings request: its canonical form, and
// whether the answer goes as base64.
func parseEmbed(body []byte, cr *chatRequest) (*llm.EmbedRequest, bool, *apiError) {
	var fields map[string]json.RawMessage
	if ae := decodeJSON(body, &fields); ae != nil {
		return nil, false, ae
	}
	for k := range fields {
		if !slices.Contains(embedFields, k) {
			return nil, false, badRequest(k, "detour does not carry %q on embeddings; it takes %s", k, strings.Join(embedFields, ", "))
		}
	}
	var in oaEmbedRequest
	if ae := decodeJSON(body, &in); ae != nil {
		return nil, false, ae
	}
	if ae := checkModels(in.Model, in.Models); ae != nil {
		return nil, false, ae
	}
	cr.model, cr.models = in.Model, in.Models
	req := &llm.EmbedRequest{User: in.User}
	var one string
	raw := bytes.TrimSpace(in.Input)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, false, badRequest("input", "input is required: a string or a list of strings")
	case raw[0] == '"' && json.Unmarshal(raw, &one) == nil:
		req.Input = []string{one}
	case raw[0] == '[' && json.Unmarshal(raw, &req.Input) == nil:
		if len(req.Input) == 0 {
			return nil, false, badRequest("input", "input is an empty list: give at least one string")
		}
		if len(req.Input) > maxEmbedInputs {
			return nil, false, badRequest("input", "input lists %d strings; at most %d are allowed", len(req.Input), maxEmbedInputs)
		}
	default:
		return nil, false, badRequest("input", "input must be a string or a list of strings; "+
			"detour does not carry token ids, whose meaning depends on the model's tokenizer")
	}
	b64 := false
	if f := in.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			b64 = true
		default:
			return nil, false, badRequest("encoding_format", "encoding_format must be float or base64, not %q", *f)
		}
	}
	if d := in.Dimensions; d != nil {
		if *d < 1 {
			return nil, false, badRequest("dimensions", "dimensions must be at least 1, not %d", *d)
		}
		req.Dimensions = *d
	}
	return req, b64, nil
}

// serveEmbed serves POST /v1/embeddings (d openAIDialect) and the Gemini
// surface's :embedContent and :batchEmbedContents of model (d
// geminiDialect, method the one asked): authenticated, limited, routed
// and logged as a chat request is, through the router's Embed.
func (s *Server) serveEmbed(w http.ResponseWriter, r *http.Request, d dialect, model, method string) {
	c, ok := s.enter(w, r, d)
	defer c.leave()
	if !ok {
		return
	}
	h := w.Header()
	var ae *apiError
	buf := getBuf()
	defer putBuf(buf)
	var req *llm.EmbedRequest
	var b64 bool
	ae = s.readBody(w, r, buf)
	if ae == nil {
		if d == geminiDialect {
			req, ae = parseGeminiEmbed(buf.Bytes(), model, method, &c.cr)
		} else {
			req, b64, ae = parseEmbed(buf.Bytes(), &c.cr)
		}
	}
	if ae == nil {
		ae = c.resolve()
	}
	if ae == nil {
		ae = c.options()
	}
	if ae != nil {
		c.reject(ae)
		return
	}
	// An embeddings request is safe to repeat: Idempotency-Key binds
	// nothing here, and the router refuses one.
	c.opts.IdempotencyKey, c.idem = "", ""
	ctx := r.Context()
	if s.extract != nil {
		ctx = s.extract(ctx, r.Header)
	}
	if !s.served.Load() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.hard, cancel)()
	}
	res, err := s.router.Embed(ctx, c.route, req, c.opts)
	if err != nil {
		c.failed(err)
		return
	}
	pre := res.Attempts[:max(0, len(res.Attempts)-1)]
	c.outcome = outcome(pre, res.Target)
	s.metrics.observeRecovery(pre, res.Target, res.Response.Usage)
	c.setWho(h, res.Result, sends(res.Attempts))
	p := getBytes()
	var b []byte
	if d == geminiDialect {
		b = appendGeminiEmbeddings(*p, method, res.Embeddings)
	} else {
		// The model's name is the one text an upstream writes here.
		b = appendEmbeddings(*p, c.answerKeys().Redact(answerModel(res.Embeddings.Model, c)), res.Embeddings, b64)
	}
	c.hv.set(h, "Content-Type", "application/json")
	c.hv.set(h, "Content-Length", strconv.Itoa(len(b)))
	c.status = http.StatusOK
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // nothing to do for a gone client
	putBytes(p, b)
}

// appendEmbeddings appends the embeddings list of e, answered by model:
// each vector as numbers, or as base64 of little-endian float32s.
func appendEmbeddings(b []byte, model string, e *llm.EmbedResponse, b64 bool) []byte {
	b = append(b, `{"object":"list","data":[`...)
	var raw []byte
	for i, v := range e.Vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = appendInt(b, i)
		b = append(b, `,"embedding":`...)
		if b64 {
			raw = raw[:0]
			for _, x := range v {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, x := range v {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = jsonw.String(b, model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = appendInt(b, e.Usage.InputTokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, e.Usage.InputTokens)
	return append(b, "}}\n"...)
}
