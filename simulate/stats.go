package simulate

import "time"

// Record is one chat or embeddings request a Server received and what it
// served, in any dialect.
type Record struct {
	Provider string
	// Model is the model asked for; empty when the request was rejected
	// before its body was read (bad key) or named no model.
	Model string
	// Kind is what was served: the scripted or drawn fault, or the kind of
	// the rejection (Unauthorized, BadRequest, ModelNotFound).
	Kind Kind
	// Stream is set for a streamed request (body "stream": true, or Gemini's
	// streamGenerateContent).
	Stream bool
	// LastRole is the role of the request's last message as received:
	// "user", "assistant", "tool", "system"...; Gemini's "model" is reported
	// as "assistant" and a Gemini content without a role as "user". Empty
	// for a request rejected before its messages were read (bad key,
	// malformed body).
	LastRole string
	// Embed is set for an embeddings request (OpenAI's /embeddings,
	// Gemini's :embedContent and :batchEmbedContents); Stream and
	// LastRole are then empty.
	Embed bool
	// At is the Server's Clock reading when the fault was chosen.
	At time.Time
}

// Stats is a snapshot of the chat requests a Server received, in arrival
// order, and of its reads of model lists and metadata (probes), which are
// no chat requests and generate nothing.
type Stats struct {
	Records []Record
	// Reads counts GET requests for a model list or a model's metadata,
	// per provider name.
	Reads map[string]int
}

// ModelReads counts the model-list and model-metadata reads of provider
// (any provider when empty).
func (s Stats) ModelReads(provider string) int {
	if provider != "" {
		return s.Reads[provider]
	}
	n := 0
	for _, v := range s.Reads {
		n += v
	}
	return n
}

// Requests counts the requests to provider and model, chat and embeddings
// alike; an empty provider or model matches any.
func (s Stats) Requests(provider, model string) int {
	return s.count(provider, model, "")
}

// Embeds counts the embeddings requests to provider and model; an empty
// provider or model matches any.
func (s Stats) Embeds(provider, model string) int {
	n := 0
	for _, r := range s.Records {
		if r.Embed && (provider == "" || r.Provider == provider) && (model == "" || r.Model == model) {
			n++
		}
	}
	return n
}

// Served counts the requests to provider and model that were served kind; an
// empty provider or model matches any.
func (s Stats) Served(provider, model string, kind Kind) int {
	return s.count(provider, model, kind)
}

// Total is the number of requests received, chat and embeddings alike.
func (s Stats) Total() int { return len(s.Records) }

func (s Stats) count(provider, model string, kind Kind) int {
	n := 0
	for _, r := range s.Records {
		if (provider == "" || r.Provider == provider) && (model == "" || r.Model == model) && (kind == "" || r.Kind == kind) {
			n++
		}
	}
	return n
}
