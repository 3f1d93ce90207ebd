package gateway

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/detourhq/detour/llm"
)

// The Gemini surface's embeddings: POST models/{model}:embedContent (one
// content) and :batchEmbedContents (several; what go-genai's
// Models.EmbedContent sends), in the shapes of Gemini's API reference
// (https://ai.google.dev/api/embeddings), through router.Embed as
// POST /v1/embeddings is.

// The Gemini methods of a model that embed.
const (
	gmEmbed      = "embedContent"
	gmBatchEmbed = "batchEmbedContents"
)

// gmEmbedFields are the fields of one embedContent request detour
// carries. taskType and title change the vector a Gemini model makes and
// no canonical field holds them: they are refused, never dropped unseen.
var gmEmbedFields = []string{"model", "content", "outputDimensionality"}

// gmEmbedContent is one embedContent request.
type gmEmbedContent struct {
	Model   string `json:"model"`
	Content *struct {
		Parts []map[string]json.RawMessage `json:"parts"`
	} `json:"content"`
	OutputDimensionality *int `json:"outputDimensionality"`
}

// parseGeminiEmbed reads an embedContent or batchEmbedContents request to
// model: one text per content (its text parts joined by new lines).
func parseGeminiEmbed(body []byte, model, method string, cr *chatRequest) (*llm.EmbedRequest, *apiError) {
	if ae := checkModels(model, nil); ae != nil {
		return nil, ae
	}
	cr.model = model
	var items []json.RawMessage
	if method == gmBatchEmbed {
		var batch map[string]json.RawMessage
		if ae := decodeJSON(body, &batch); ae != nil {
			return nil, ae
		}
		for k := range batch {
			if k != "requests" {
				return nil, badRequest(k, "detour does not carry %q on batchEmbedContents; it takes requests", k)
			}
		}
		if json.Unmarshal(batch["requests"], &items) != nil || len(items) == 0 {
			return nil, badRequest("requests", "requests must be a non-empty list of embedContent requests")
		}
		if len(items) > maxEmbedInputs {
			return nil, badRequest("requests", "requests lists %d contents; at most %d are allowed", len(items), maxEmbedInputs)
		}
	} else {
		items = []json.RawMessage{body}
	}
	req := &llm.EmbedRequest{}
	for i, raw := range items {
		where := "requests[" + strconv.Itoa(i) + "]"
		if method != gmBatchEmbed {
			where = "request"
		}
		text, dims, ae := parseGeminiEmbedOne(raw, model, where)
		if ae != nil {
			return nil, ae
		}
		if i > 0 && dims != req.Dimensions {
			return nil, badRequest(where+".outputDimensionality", "every request of a batch must ask for the same outputDimensionality")
		}
		req.Dimensions = dims
		req.Input = append(req.Input, text)
	}
	return req, nil
}

// parseGeminiEmbedOne reads one embedContent request: its text and the
// dimensions it asks for (0: the model's own).
func parseGeminiEmbedOne(raw json.RawMessage, model, where string) (string, int, *apiError) {
	var fields map[string]json.RawMessage
	if ae := decodeJSON(raw, &fields); ae != nil {
		return "", 0, ae
	}
	for k := range fields {
		if !slices.Contains(gmEmbedFields, k) {
			return "", 0, badRequest(where+"."+k, "detour does not carry %q on embeddings (it changes the vector and no other provider takes it); it takes %s",
				k, strings.Join(gmEmbedFields, ", "))
		}
	}
	var in gmEmbedContent
	if ae := decodeJSON(raw, &in); ae != nil {
		return "", 0, ae
	}
	if in.Model != "" && strings.TrimPrefix(in.Model, "models/") != model {
		return "", 0, badRequest(where+".model", "%s names model %q, but the URL names %q: they must be the same", where, in.Model, model)
	}
	if in.Content == nil || len(in.Content.Parts) == 0 {
		return "", 0, badRequest(where+".content", "%s needs content: {parts: [{text: ...}]}", where)
	}
	var texts []string
	for j, p := range in.Content.Parts {
		var t string
		if len(p) != 1 || p["text"] == nil || json.Unmarshal(p["text"], &t) != nil {
			return "", 0, badRequest(where+".content.parts["+strconv.Itoa(j)+"]", "detour embeds text parts only")
		}
		texts = append(texts, t)
	}
	dims := 0
	if d := in.OutputDimensionality; d != nil {
		if *d < 1 {
			return "", 0, badRequest(where+".outputDimensionality", "outputDimensionality must be at least 1, not %d", *d)
		}
		dims = *d
	}
	return strings.Join(texts, "\n"), dims, nil
}

// appendGeminiEmbeddings appends the answer of method: one embedding
// ({"embedding":{"values":[...]}}) or a list of them.
func appendGeminiEmbeddings(b []byte, method string, e *llm.EmbedResponse) []byte {
	values := func(b []byte, v []float32) []byte {
		b = append(b, `{"values":[`...)
		for j, x := range v {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
		}
		return append(b, "]}"...)
	}
	if method == gmEmbed && len(e.Vectors) == 1 {
		b = append(b, `{"embedding":`...)
		return append(values(b, e.Vectors[0]), "}\n"...)
	}
	b = append(b, `{"embeddings":[`...)
	for i, v := range e.Vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = values(b, v)
	}
	return append(b, "]}\n"...)
}
