package simulate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/detourhq/detour/clock"
)

// MemoryURL is the root of the base URLs a Server hands out before Listen:
// requests to it only make sense through the Server's Transport (the
// .invalid domain never resolves, so a stray real request fails at once).
const MemoryURL = "http://simulate.invalid"

// maxBody caps the request bodies read.
const maxBody = 32 << 20

// Provider is one fake endpoint. Its zero Dialect speaks OpenAI's chat
// completions, its zero Style OpenAI's errors; its zero latency answers at once.
type Provider struct {
	// Name is the first path segment of every route of the provider (see
	// Server.BaseURL). It must be non-empty and contain no "/".
	Name string
	// Dialect is the wire format spoken: DialectOpenAI (the zero value),
	// DialectAnthropic, DialectGemini or DialectResponses. A client picks
	// its adapter from it.
	Dialect Dialect
	// Models lists the models served; a request for another model gets a
	// ModelNotFound. Empty means every model name is accepted.
	Models []string
	// Key, when set, is the only key accepted, read where the dialect sends
	// it: "Authorization: Bearer" (OpenAI), x-api-key or Authorization: Bearer
	// (Anthropic), x-goog-api-key or ?key= (Gemini). A missing or different key
	// gets an Unauthorized. Empty accepts anything.
	Key string
	// Style picks the error envelopes and messages of a DialectOpenAI
	// provider (OpenAI-compatible endpoints disagree only on errors). It must
	// be empty for the other dialects, whose errors are their own.
	Style Style
	// Script is served in order, one fault per request to any model of this
	// provider, after the request's ModelScripts entry is used up.
	Script []Fault
	// ModelScripts holds per-model scripts, served before Script.
	ModelScripts map[string][]Fault
	// Profile draws faults once the scripts are used up; nil answers OK.
	Profile *Profile
	// Latency is how long the provider takes, scaled by Server.LatencyScale.
	Latency Latency
	// ContextWindow is the limit named by ContextOverflow messages (0: 131072
	// for OpenAI, 200000 for Anthropic, 1048576 for Gemini).
	ContextWindow int
	// NoPrefill refuses a chat request whose last message has the assistant
	// role (G: "model") with a 400 carrying the message Anthropic's models
	// without prefill answer, "This model does not support assistant message
	// prefill. The conversation must end with a user message.": OpenAI:
	// invalid_request_error with param "messages" (in the Style's envelope);
	// A: invalid_request_error; G: INVALID_ARGUMENT. The request is recorded
	// as a BadRequest and uses up no scripted fault.
	NoPrefill bool
	// Answer, when set, writes the text of every text answer (OK, NoDone,
	// SlowFirstToken, LateFirstToken, and the head of the streams StreamCut,
	// StreamStall, StreamMalformed and StreamError cut short) in place of
	// "Hello from <provider>/<model>.": given the request's Question, it
	// returns the text, whether the answer was cut at its output limit and
	// its output token count (see Reply). Nil keeps the default text. A
	// tool call (any request offering tools that tool_choice does not rule
	// out) and a ContentFilter do not call it. It is called once per answer,
	// from the request's goroutine, so it must be safe for concurrent use.
	Answer func(Question) Reply
}

// prefillMessage is Anthropic's refusal of an assistant prefill by the models
// that do not support one.
const prefillMessage = "This model does not support assistant message prefill. The conversation must end with a user message."

// Latency is how long a provider takes to answer, read from the Server's
// Clock. The zero Latency answers at once.
type Latency struct {
	// Error is the wait before an error answer or a Reset. Real 429s fail
	// fast, about 130 ms.
	Error time.Duration
	// FirstToken is the wait before the headers of an answer.
	FirstToken time.Duration
	// PerChunk is the wait between streamed data events; a non-streamed
	// answer waits FirstToken plus PerChunk for each chunk it would have had.
	PerChunk time.Duration
}

// Server hosts fake providers on one http.Handler, each under /{name}/ with
// the routes of its Dialect. It is safe for concurrent use; set Clock and
// LatencyScale before the first request.
type Server struct {
	// Clock drives every latency and delay; nil is the wall clock. With a
	// clock.Fake, waits cost nothing.
	Clock clock.Clock
	// LatencyScale multiplies every Provider.Latency: 0 means 1 (as
	// measured), 0.1 runs ten times faster, a negative value removes
	// latency. The durations of faults (Delay) are not scaled.
	LatencyScale float64
	// URL is "http://127.0.0.1:<port>" once Listen has run, else empty.
	// A Server mounted in an http.Server of one's own (beside other
	// handlers) may set it to that server's root before the first request,
	// so that BaseURL names it.
	URL string
	// OnRecord, when set, is called with each Record once it is recorded
	// (see Stats), from the request's goroutine, before the answer is
	// written: a live log of what the providers serve. It must be safe for
	// concurrent use and must not block. Set it before the first request.
	OnRecord func(Record)

	providers map[string]*target // read-only after NewServer
	names     []string

	base context.Context // cancelled by Close: ends every wait
	stop context.CancelFunc
	wg   sync.WaitGroup // handlers in flight

	mu      sync.Mutex // guards closed, seq, records, srv and each target's queues, rngs and Profile
	closed  bool
	seq     uint64
	records []Record
	reads   map[string]int
	srv     *http.Server
}

// target is a Provider with its serving state.
type target struct {
	Provider
	models  map[string]bool
	queue   []Fault            // guarded by Server.mu
	byModel map[string][]Fault // guarded by Server.mu
	rngs    map[string]*rand.Rand
	cache   map[uint64]time.Time // prompt prefixes by when last used (promptcache.go); guarded by Server.mu
}

// NewServer checks the providers and returns a Server hosting them, not yet
// listening: use it as an http.Handler, through Transport, or call Listen.
func NewServer(providers ...Provider) (*Server, error) {
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{providers: map[string]*target{}, base: ctx, stop: stop}
	for _, p := range providers {
		if p.Name == "" || strings.ContainsAny(p.Name, "/?#") {
			stop()
			return nil, fmt.Errorf("simulate: invalid provider name %q", p.Name)
		}
		if _, dup := s.providers[p.Name]; dup {
			stop()
			return nil, fmt.Errorf("simulate: provider %q listed twice", p.Name)
		}
		if err := checkProvider(p); err != nil {
			stop()
			return nil, err
		}
		t := &target{Provider: p, models: map[string]bool{}, byModel: map[string][]Fault{}, rngs: map[string]*rand.Rand{}}
		for _, m := range p.Models {
			t.models[m] = true
		}
		t.queue = append([]Fault(nil), p.Script...)
		for m, fs := range p.ModelScripts {
			t.byModel[m] = append([]Fault(nil), fs...)
		}
		s.providers[p.Name] = t
		s.names = append(s.names, p.Name)
	}
	return s, nil
}

func checkProvider(p Provider) error {
	if !p.Dialect.valid() {
		return fmt.Errorf("simulate: provider %q: unknown dialect %q", p.Name, p.Dialect)
	}
	if !p.Style.valid() {
		return fmt.Errorf("simulate: provider %q: unknown style %q", p.Name, p.Style)
	}
	if p.Style != "" && p.Dialect.or() != DialectOpenAI {
		return fmt.Errorf("simulate: provider %q: style %q applies to the openai dialect only, not %q", p.Name, p.Style, p.Dialect)
	}
	if err := validateFaults(p.Name+" script", p.Script); err != nil {
		return err
	}
	for m, fs := range p.ModelScripts {
		if err := validateFaults(p.Name+" script for "+m, fs); err != nil {
			return err
		}
	}
	if p.Profile != nil {
		return p.Profile.validate(p.Name + " profile")
	}
	return nil
}

// Start returns a Server hosting providers, listening on 127.0.0.1 at a free port.
func Start(providers ...Provider) (*Server, error) {
	s, err := NewServer(providers...)
	if err != nil {
		return nil, err
	}
	if err := s.Listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// Listen serves on 127.0.0.1 at a free port and sets URL. Close stops it.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("simulate: server closed")
	}
	if s.srv != nil {
		return errors.New("simulate: server already listening")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simulate: listen: %w", err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	s.URL = "http://" + ln.Addr().String()
	go s.srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close.
	return nil
}

// Close ends every pending wait (Hang, latencies), closes the listener and its
// connections, and waits for the handlers to return. Requests arriving later
// get a Reset. Close is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	s.stop()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	s.wg.Wait()
	return err
}

// BaseURL returns the base URL a client of the named provider's dialect
// expects, under URL (or MemoryURL before Listen):
//
//	DialectOpenAI     URL/{name}/v1      the client appends /chat/completions
//	DialectAnthropic  URL/{name}         the client appends /v1/messages
//	DialectGemini     URL/{name}/v1beta  the client appends /models/{model}:generateContent
//	DialectResponses  URL/{name}/v1      the client appends /responses
//
// An unknown name gets the OpenAI form.
func (s *Server) BaseURL(name string) string {
	s.mu.Lock()
	root := s.URL
	s.mu.Unlock()
	if root == "" {
		root = MemoryURL
	}
	var d Dialect
	if t := s.providers[name]; t != nil {
		d = t.Dialect
	}
	return d.baseURL(root, name)
}

// Dialect returns the dialect the named provider speaks (DialectOpenAI for a
// zero Dialect), or "" for an unknown name.
func (s *Server) Dialect(name string) Dialect {
	t := s.providers[name]
	if t == nil {
		return ""
	}
	return t.Dialect.or()
}

// Providers returns the names of the providers hosted, in the order given.
func (s *Server) Providers() []string { return append([]string(nil), s.names...) }

// Transport returns an in-memory RoundTripper serving this Server without
// sockets; any host works, e.g. BaseURL before Listen.
func (s *Server) Transport() *Transport { return &Transport{Handler: s} }

// Enqueue appends faults to a provider's script: to the model's script when
// model is not empty, else to the provider-wide one.
func (s *Server) Enqueue(provider, model string, faults ...Fault) error {
	t := s.providers[provider]
	if t == nil {
		return fmt.Errorf("simulate: unknown provider %q", provider)
	}
	if err := validateFaults(provider+" enqueue", faults); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		t.queue = append(t.queue, faults...)
	} else {
		t.byModel[model] = append(t.byModel[model], faults...)
	}
	return nil
}

// SetProfile replaces the Profile of the named provider while the Server
// runs: the requests that follow, once the provider's scripts are used up,
// draw their faults from p (nil: every one is answered OK). The random
// sources start again from p's Seed. p is read-only from then on.
func (s *Server) SetProfile(provider string, p *Profile) error {
	t := s.providers[provider]
	if t == nil {
		return fmt.Errorf("simulate: unknown provider %q", provider)
	}
	if p != nil {
		if err := p.validate(provider + " profile"); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Profile = p
	t.rngs = map[string]*rand.Rand{}
	return nil
}

// Stats returns a snapshot of the requests received so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Records: append([]Record(nil), s.records...), Reads: maps.Clone(s.reads)}
}

// read counts one model-list or model-metadata read of t.
func (s *Server) read(t *target) {
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[string]int{}
	}
	s.reads[t.Name]++
	s.mu.Unlock()
}

// ClearStats forgets the requests received so far; scripts are untouched.
func (s *Server) ClearStats() {
	s.mu.Lock()
	s.records, s.reads = nil, nil
	s.mu.Unlock()
}

// ServeHTTP serves each provider's routes under /{provider}/: for
// DialectOpenAI POST v1/chat/completions, POST v1/embeddings and GET
// v1/models, for DialectAnthropic POST v1/messages and GET
// v1/models/{model}, for DialectGemini POST
// v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse,
// :embedContent and :batchEmbedContents, and GET v1beta/models/{model}.
// Anything else is a 404 in the provider's shape (OpenAI's for an unknown
// provider).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		abortConn(w, true)
		return
	}
	s.wg.Add(1)
	seq := s.seq
	s.seq++
	s.mu.Unlock()
	defer s.wg.Done()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()

	name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	t := s.providers[name]
	ec := errCtx{requestID: requestID(seq), now: clock.Or(s.Clock).Now()}
	if t == nil {
		writeReply(w, genericError(ec, 404, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "", ""), nil)
		return
	}
	ec.style, ec.dialect, ec.contextWindow = t.Style, t.Dialect.or(), t.ContextWindow
	switch ec.dialect {
	case DialectAnthropic:
		s.serveAnthropic(ctx, w, r, t, seq, rest, ec)
		return
	case DialectGemini:
		s.serveGemini(ctx, w, r, t, seq, rest, ec)
		return
	case DialectResponses:
		s.serveResponses(ctx, w, r, t, seq, rest, ec)
		return
	}
	var want string
	embed := rest == "v1/embeddings"
	switch rest {
	case "v1/chat/completions", "v1/embeddings":
		want = http.MethodPost
	case "v1/models":
		want = http.MethodGet
	default:
		writeReply(w, genericError(ec, 404, fmt.Sprintf("Invalid URL (%s /%s)", r.Method, rest), "", ""), nil)
		return
	}
	if r.Method != want {
		writeReply(w, genericError(ec, 405, fmt.Sprintf("Invalid method for URL (%s /%s)", r.Method, rest), "", ""), nil)
		return
	}
	if want == http.MethodGet {
		s.read(t)
	}
	ec.key, ec.keyGiven = bearer(r)
	if t.Key != "" && (!ec.keyGiven || ec.key != t.Key) {
		ec.f = Fault{Kind: Unauthorized}
		if want == http.MethodPost {
			s.record(t, Record{Kind: Unauthorized, Embed: embed})
		}
		s.sendError(ctx, w, t, errorReply(ec), nil)
		return
	}
	if want == http.MethodGet {
		writeModels(w, t, ec.requestID)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return // the client is gone
	}
	if embed {
		er, rerr := parseOpenAIEmbed(body)
		if rerr != nil {
			s.rejectEmbed(ctx, w, t, ec, rerr)
			return
		}
		s.serveEmbed(ctx, w, t, er, ec)
		return
	}
	req, rerr := parseChat(body)
	if rerr != nil {
		s.reject(ctx, w, t, ec, rerr)
		return
	}
	s.serve(ctx, w, t, req, seq, ec)
}

// rejectEmbed answers an embeddings request the provider refuses before
// choosing a fault, in the dialect's shape.
func (s *Server) rejectEmbed(ctx context.Context, w http.ResponseWriter, t *target, ec errCtx, rerr *reqError) {
	s.record(t, Record{Model: rerr.model, Kind: rerr.kind, Embed: true})
	s.sendError(ctx, w, t, rerr.reply(ec), nil)
}

// reject answers a request the provider refuses before choosing a fault
// (malformed body, missing header), in the dialect's shape.
func (s *Server) reject(ctx context.Context, w http.ResponseWriter, t *target, ec errCtx, rerr *reqError) {
	s.record(t, Record{Model: rerr.model, Kind: rerr.kind, Stream: ec.stream, LastRole: ec.lastRole})
	s.sendError(ctx, w, t, rerr.reply(ec), nil)
}

// known reports whether t serves rec's model; an unknown one is recorded
// and answered with a ModelNotFound.
func (s *Server) known(ctx context.Context, w http.ResponseWriter, t *target, rec Record, ec errCtx) bool {
	if len(t.models) == 0 || t.models[rec.Model] {
		return true
	}
	rec.Kind = ModelNotFound
	s.record(t, rec)
	ec.f = Fault{Kind: ModelNotFound}
	s.sendError(ctx, w, t, ec.reply(), nil)
	return false
}

// draw pops the fault the request of rec gets (OK when none), and records
// it.
func (s *Server) draw(t *target, rec Record) Fault {
	f := s.next(t, rec.Model)
	if f.Kind == "" {
		f.Kind = OK
	}
	rec.Kind = f.Kind
	s.record(t, rec)
	return f
}

// serve answers a well-formed chat request of any dialect: an unknown model
// gets a ModelNotFound, anything else the next scripted or drawn fault.
func (s *Server) serve(ctx context.Context, w http.ResponseWriter, t *target, req *chatReq, seq uint64, ec errCtx) {
	ec.model, ec.promptTokens, ec.maxTokens, ec.stream = req.model, req.promptTokens, req.maxTokens, req.stream
	ec.lastRole = req.lastRole
	rec := Record{Model: req.model, Stream: req.stream, LastRole: req.lastRole}
	if !s.known(ctx, w, t, rec, ec) {
		return
	}
	if t.NoPrefill && req.lastRole == "assistant" {
		s.reject(ctx, w, t, ec, &reqError{status: 400, kind: BadRequest, model: req.model, msg: prefillMessage, param: "messages"})
		return
	}
	f := s.draw(t, rec)
	ec.f = f

	if f.Kind == OK {
		req.cached = s.cachedTokens(t, req)
	}
	switch f.Kind {
	case OK:
		s.answer(ctx, w, t, req, seq, ec, endNormal)
	case NoDone:
		s.answer(ctx, w, t, req, seq, ec, endNoDone)
	case ContentFilter:
		s.answer(ctx, w, t, req, seq, ec, endFiltered)
	case SlowFirstToken:
		if s.sleep(ctx, f.Delay, false) {
			s.answer(ctx, w, t, req, seq, ec, endNormal)
		}
	case LateFirstToken:
		if req.stream || s.sleep(ctx, f.Delay, false) {
			s.answer(ctx, w, t, req, seq, ec, endNormal)
		}
	case Hang:
		<-ctx.Done()
	case EmptyDeltas, Trickle:
		s.drip(ctx, w, t, req, seq, ec)
	case Reset:
		if s.sleep(ctx, t.Latency.Error, true) {
			abortConn(w, true)
		}
	case StreamCut:
		s.answer(ctx, w, t, req, seq, ec, endCut)
	case StreamStall:
		s.answer(ctx, w, t, req, seq, ec, endStall)
	case StreamMalformed:
		s.answer(ctx, w, t, req, seq, ec, endMalformed)
	case StreamMalformedEvent:
		s.answer(ctx, w, t, req, seq, ec, endGarbledOnce)
	case StreamError:
		if req.stream {
			s.answer(ctx, w, t, req, seq, ec, endErrorFrame)
			return
		}
		s.sendError(ctx, w, t, ec.reply(), f.Header)
	default:
		s.sendError(ctx, w, t, ec.reply(), f.Header)
	}
}

// next pops the fault a request to t and model gets.
func (s *Server) next(t *target, model string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := t.byModel[model]; len(q) > 0 {
		t.byModel[model] = q[1:]
		return q[0]
	}
	if len(t.queue) > 0 {
		f := t.queue[0]
		t.queue = t.queue[1:]
		return f
	}
	if t.Profile == nil {
		return Fault{Kind: OK}
	}
	rng := t.rngs[model]
	if rng == nil {
		h := fnv.New64a()
		io.WriteString(h, t.Name+"/"+model)
		rng = rand.New(rand.NewPCG(t.Profile.Seed, h.Sum64()))
		t.rngs[model] = rng
	}
	return t.Profile.pick(model, rng.Float64())
}

// record appends r, completed with t's name and the clock's reading.
func (s *Server) record(t *target, r Record) {
	r.Provider, r.At = t.Name, clock.Or(s.Clock).Now()
	s.mu.Lock()
	s.records = append(s.records, r)
	s.mu.Unlock()
	if s.OnRecord != nil {
		s.OnRecord(r)
	}
}

// sleep waits d on the Server's clock (scaled by LatencyScale when scaled),
// and reports whether the full wait elapsed.
func (s *Server) sleep(ctx context.Context, d time.Duration, scaled bool) bool {
	if scaled {
		d = s.scale(d)
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	return clock.Or(s.Clock).Sleep(ctx, d)
}

func (s *Server) scale(d time.Duration) time.Duration {
	switch f := s.LatencyScale; {
	case f == 0:
		return d
	case f < 0:
		return 0
	default:
		return time.Duration(float64(d) * f)
	}
}

// sendError waits the provider's error latency, then writes r.
func (s *Server) sendError(ctx context.Context, w http.ResponseWriter, t *target, r reply, extra http.Header) {
	if !s.sleep(ctx, t.Latency.Error, true) {
		return
	}
	writeReply(w, r, extra)
}

func writeReply(w http.ResponseWriter, r reply, extra http.Header) {
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	applyHeader(h, extra)
	w.WriteHeader(r.status)
	w.Write(r.body) //nolint:errcheck // nothing to do for a gone client
}

// applyHeader sets each key of extra; a key with no values is deleted.
func applyHeader(h, extra http.Header) {
	for k, v := range extra {
		if len(v) == 0 {
			h.Del(k)
			continue
		}
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	if a == "" {
		return "", false
	}
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:]), true
	}
	return a, true
}
