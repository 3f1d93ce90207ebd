package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// dialect is the wire format of a client surface.
type dialect uint8

const (
	openAIDialect dialect = iota
	anthropicDialect
	// responsesDialect is OpenAI's Responses API: errors in OpenAI's
	// shape; a target of config's dialect openai-responses gets its
	// requests raw, any other a translation.
	responsesDialect
	geminiDialect
)

func (d dialect) String() string {
	switch d {
	case anthropicDialect:
		return "anthropic"
	case responsesDialect:
		return "responses"
	case geminiDialect:
		return "gemini"
	}
	return "openai"
}

// wire is the name of d's wire format among the targets' dialects
// (config's, and llm.Raw's): String, but for the Responses surface, whose
// targets are of dialect "openai-responses".
func (d dialect) wire() string {
	if d == responsesDialect {
		return "openai-responses"
	}
	return d.String()
}

// chatRequest is a client's request, read from either surface.
type chatRequest struct {
	req *llm.Request
	// model is the request's model; models its own candidate list
	// (OpenRouter's "models"), tried after model.
	model  string
	models []string
	stream bool
	// includeUsage is OpenAI's stream_options.include_usage.
	includeUsage bool
	// rs is what a Responses answer repeats of its request; nil on the
	// other surfaces.
	rs *rsEcho
}

// ownNames makes model and models strings of their own. A parser reads
// them as slices of the body, and they outlive it (the route, the answer's
// model, the ledger): a 4-byte model name would otherwise hold a stream's
// whole request, however long its conversation, until the stream ends.
func (cr *chatRequest) ownNames() {
	cr.model = strings.Clone(cr.model)
	for i, m := range cr.models {
		cr.models[i] = strings.Clone(m)
	}
}

// call is one chat request being served.
type call struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	d     dialect
	id    string
	start time.Time
	key   *clientKey
	// admitted is set once the key's limits let the call in (enter): its
	// slot is given back when it leaves.
	admitted bool
	cr       chatRequest
	route    *router.Route
	// label is the route's metrics label: its name, or "_target" and
	// "_models" for routes a request made up.
	label string
	opts  router.Options
	idem  string
	// body is the client's request body, pooled; nil once released.
	body *bytes.Buffer

	// What happened, for the log line and metrics. status is what went
	// out on the wire; errStatus, when not 0, the status of the error the
	// request ended in (the same, or carried by a stream's error event).
	status    int
	errStatus int
	outcome   string
	errText   string
	answered  *router.Target
	sends     int
	ttft      time.Duration
	// degraded and dropped are what the who headers said of the answer
	// (whoHeaders): a stream that ends more degraded says so in trailers,
	// and the log line names what was dropped.
	degraded bool
	dropped  []string

	// hv holds the values of the headers the call sets (headerVals).
	hv headerVals
}

// headerVals keeps a call's header values in one array: each header's
// []string is a slice of it, where a []string{v} apiece cost an
// allocation per header, ten on a plain answer. A slice's capacity is its
// length, so an Add elsewhere copies rather than writes into the array.
type headerVals struct {
	a [10]string
	n int
}

// set sets h[k] (k in canonical form) to the one value v.
func (hv *headerVals) set(h http.Header, k, v string) {
	if hv.n == len(hv.a) {
		h[k] = []string{v}
		return
	}
	hv.a[hv.n] = v
	h[k] = hv.a[hv.n : hv.n+1 : hv.n+1]
	hv.n++
}

// enter opens a call of surface d: its request id on the answer, counted
// in flight until c.leave, refused while the gateway drains, authenticated
// and admitted under its client key's limits. ok is false when the call
// was refused (and answered); c.leave must run either way, once.
func (s *Server) enter(w http.ResponseWriter, r *http.Request, d dialect) (c *call, ok bool) {
	c = &call{s: s, w: w, r: r, d: d, start: s.clk.Now(), id: requestID(r)}
	h := w.Header()
	c.hv.set(h, "X-Request-Id", c.id)
	h["Request-Id"] = h["X-Request-Id"] // the same value: one slice serves both
	s.active.add()
	s.metrics.inflight.Inc()
	if s.draining.Load() {
		h.Set("Connection", "close")
		c.reject(&apiError{Status: http.StatusServiceUnavailable, Reason: "draining", RetryAfter: 1,
			Message: "the gateway is shutting down: send the request again"})
		return c, false
	}
	key, ae := s.authenticate(r)
	if ae != nil {
		c.reject(ae)
		return c, false
	}
	c.key = key
	if ae := s.admit(key); ae != nil {
		c.reject(ae)
		return c, false
	}
	c.admitted = true
	return c, true
}

// leave closes a call enter opened: its key's slot given back, no longer
// in flight, logged.
func (c *call) leave() {
	s := c.s
	if c.admitted {
		c.key.release()
	}
	s.metrics.inflight.Dec()
	s.active.done()
	c.done()
}

// serveChat serves POST /v1/chat/completions, POST /v1/messages, POST
// /v1/responses and the Gemini surface's POST
// /v1beta/models/{model}:generateContent (and :streamGenerateContent).
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, d dialect) {
	c, ok := s.enter(w, r, d)
	defer c.leave()
	if !ok {
		return
	}
	var ae *apiError
	buf := getBuf()
	// The body lives until the answer started (releaseBody): it goes on
	// raw to a target of the client's dialect (llm.Raw).
	c.body = buf
	defer c.releaseBody()
	ae = s.readBody(w, r, buf)
	if ae == nil {
		switch d {
		case anthropicDialect:
			ae = parseAnthropic(buf.Bytes(), &c.cr)
		case responsesDialect:
			ae = parseResponses(buf.Bytes(), &c.cr) // its needs too, for a target of another dialect
		case geminiDialect:
			ae = parseGeminiCall(r, buf.Bytes(), &c.cr)
		default:
			ae = parseOpenAI(buf.Bytes(), &c.cr)
		}
	}
	if ae == nil {
		c.cr.ownNames()
		c.cr.req.Raw = &llm.Raw{Dialect: d.wire(), Body: buf.Bytes(), Header: rawHeader(d, r.Header)}
		ae = c.resolve()
	}
	if ae == nil && d != responsesDialect && c.route.ReadsNeeds(d.String()) {
		// Only a target of another dialect, or one that says what it
		// offers, looks at what the body carries: a route of the client's
		// dialect alone sends it raw, unread.
		if d == geminiDialect {
			c.cr.req.Needs, c.cr.req.Reasoning = geminiNeeds(buf.Bytes())
		} else {
			c.cr.req.Reasoning, c.cr.req.Needs = reasoningOf(d, buf.Bytes(), needsOf(d, buf.Bytes()))
		}
	}
	if ae == nil {
		ae = c.options()
	}
	if ae != nil {
		c.reject(ae)
		return
	}
	ctx := r.Context()
	if s.extract != nil {
		ctx = s.extract(ctx, r.Header) // the client's traceparent
	}
	if !s.served.Load() {
		// Mounted in someone else's server: Shutdown still reaches us.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.hard, cancel)()
	}
	if c.idem != "" && s.v().gw.IdempotencyTTL > 0 {
		answered, finish := c.idempotent(ctx, buf.Bytes())
		if answered {
			return
		}
		defer finish()
	}
	if c.cr.stream {
		c.serveStream(ctx)
	} else {
		c.serveComplete(ctx)
	}
}

// releaseBody gives the request's body back to its pool, and lets go of
// the parsed request, which borrows it (llm.Raw): once a stream flows
// nothing is sent again, so neither has to last the stream's life.
func (c *call) releaseBody() {
	if c.body != nil {
		putBuf(c.body)
		c.body = nil
	}
	c.cr.req = nil
}

// requestID returns the client's X-Request-Id when it is a plain token of
// at most 64 characters, else a new one.
func requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-Id"); v != "" && len(v) <= 64 && plainToken(v) {
		return v
	}
	var b [16]byte
	x := rand.Uint64()
	for i := range b {
		b[i] = hexDigits[x&0xf]
		x >>= 4
	}
	return string(b[:])
}

// plainToken reports whether s holds only letters, digits and ._:-.
func plainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// reject answers a request refused before routing.
func (c *call) reject(e *apiError) {
	c.setError(e)
	reason := e.Reason
	if reason == "" {
		reason = "other"
	}
	c.s.metrics.rejected.With(c.d.String(), reason).Inc()
	writeError(c.w, c.d, e, c.id)
}

// maxIdempotencyKey caps an Idempotency-Key header, as payment APIs do.
const maxIdempotencyKey = 255

// maxModels caps a request's own candidate list.
const maxModels = 16

// resolve finds the route the request names, within what its key may use.
func (c *call) resolve() *apiError {
	s, k := c.s, c.key
	if len(c.cr.models) == 0 {
		if c.cr.model == "" {
			return badRequest("model", "model is required: name a route (%s) or a target as provider/model",
				strings.Join(s.visibleRoutes(k), ", "))
		}
		r, label, ae := s.lookup(k, c.cr.model, "model")
		c.route, c.label = r, label
		return ae
	}
	names := c.cr.models
	if c.cr.model != "" && !slicesContains(names, c.cr.model) {
		names = append([]string{c.cr.model}, names...)
	}
	if len(names) > maxModels {
		return badRequest("models", "models lists %d candidates; at most %d are allowed", len(names), maxModels)
	}
	var out *router.Route
	seen := map[string]bool{}
	for i, name := range names {
		r, _, ae := s.lookup(k, name, "models")
		if ae != nil {
			return ae
		}
		if i == 0 {
			// Every setting of the first route, its eval gate among them,
			// whatever a route comes to hold; the chain is every route's.
			first := *r
			first.Name, first.Chain = strings.Join(names, ","), nil
			out = &first
		}
		for _, t := range r.Chain {
			if !seen[t.ID()] {
				seen[t.ID()] = true
				out.Chain = append(out.Chain, t)
			}
		}
	}
	c.route, c.label = out, "_models"
	return nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lookup returns the route name names for key k: a configured route, or a
// provider/model target of a configured provider.
func (s *Server) lookup(k *clientKey, name, param string) (*router.Route, string, *apiError) {
	v := s.v()
	if r, ok := v.routes[name]; ok {
		if !k.mayRoute(name) {
			return nil, "", forbidden(k, name, param)
		}
		return r, name, nil
	}
	if prov, model, ok := strings.Cut(name, "/"); ok && prov != "" && model != "" && v.providers[prov] {
		if !k.mayTarget(name) {
			return nil, "", forbidden(k, name, param)
		}
		if !v.knownTargets[name] {
			if err := v.direct.admit(prov, model, v.gw.MaxDirectModels, s.clk.Now()); err != nil {
				return nil, "", &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error",
					Code: "too_many_models", Param: param, Reason: "too_many_models", Message: err.Error()}
			}
		}
		r, err := s.targetRoute(name)
		if err != nil {
			return nil, "", badRequest(param, "%s", s.scrub(err.Error()))
		}
		return r, "_target", nil
	}
	return nil, "", &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
		Param: param, Reason: "not_found",
		Message: "the model " + strconv.Quote(name) + " does not exist here: name a route (" +
			strings.Join(s.visibleRoutes(k), ", ") + ") or a target as provider/model of a configured provider"}
}

func forbidden(k *clientKey, name, param string) *apiError {
	return &apiError{Status: http.StatusForbidden, Type: "permission_error", Code: "route_not_allowed", Param: param,
		Reason: "forbidden", Message: "client key " + strconv.Quote(k.name) + " may not use " + strconv.Quote(name)}
}

// targetRoute returns the route of the one target addr, built once.
func (s *Server) targetRoute(addr string) (*router.Route, error) {
	v := s.v()
	v.tmu.Lock()
	r, ok := v.targets[addr]
	v.tmu.Unlock()
	if ok {
		return r, nil
	}
	r, err := v.file.TargetRoute(addr, v.buildOpts)
	if err != nil {
		return nil, err
	}
	v.tmu.Lock()
	if len(v.targets) < maxTargetRoutes {
		v.targets[addr] = r
	}
	v.tmu.Unlock()
	return r, nil
}

// visibleRoutes returns the routes k may use, sorted.
func (s *Server) visibleRoutes(k *clientKey) []string {
	var out []string
	for _, name := range s.v().routeNames {
		if k.mayRoute(name) {
			out = append(out, name)
		}
	}
	return out
}

// options reads the per-request control headers.
func (c *call) options() *apiError {
	h := c.r.Header
	c.opts.RequestID = c.id
	if c.key != nil {
		c.opts.Spend = c.key.spend
	}
	noFallback, ae := boolHeader(h, "X-Detour-No-Fallback")
	if ae != nil {
		return ae
	}
	c.opts.NoFallback = c.opts.NoFallback || noFallback
	// A request with side effects (tools that book, pay, send): an
	// attempt whose outcome is unknown once sent (a reset or timeout after
	// the send) is never sent again, to any target.
	sideEffects, ae := boolHeader(h, "X-Detour-Non-Idempotent")
	if ae != nil {
		return ae
	}
	c.opts.NonIdempotent = c.opts.NonIdempotent || sideEffects
	if v := strings.TrimSpace(h.Get("X-Detour-Start")); v != "" {
		if _, ok := c.route.Candidate(v); !ok {
			return badRequest("x-detour-start", "header x-detour-start names %q, which is not a candidate of route %q",
				v, c.route.Name)
		}
		c.opts.Start = v
	}
	if v := strings.TrimSpace(h.Get("X-Detour-Require")); v != "" && c.cr.req != nil {
		// What must not be dropped on a cross-dialect hop: needs by name
		// (seed, user, cache_control, ...), or all of them. An
		// embeddings request (no chat request) has no such hop.
		for _, name := range strings.Split(v, ",") {
			switch name = strings.TrimSpace(name); strings.ToLower(name) {
			case "":
			case "all", "*":
				c.cr.req.Require = append(c.cr.req.Require, "*")
			default:
				c.cr.req.Require = append(c.cr.req.Require, name)
			}
		}
	}
	// One operation, one answer: see idempotency.go.
	if v := h.Get("Idempotency-Key"); v != "" {
		if len(v) > maxIdempotencyKey {
			return badRequest("Idempotency-Key", "the Idempotency-Key header is %d bytes; at most %d are allowed (a UUID is 36)", len(v), maxIdempotencyKey)
		}
		c.idem = v
	}
	return nil
}

// boolHeader reads the control header name: true for true, 1 or yes,
// false for false, 0, no or no header; anything else is a 400 naming the
// header.
func boolHeader(h http.Header, name string) (bool, *apiError) {
	v := h.Get(name)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes":
		return true, nil
	case "", "false", "0", "no":
		return false, nil
	}
	lower := strings.ToLower(name)
	return false, badRequest(lower, "header %s takes true or false, not %q", lower, v)
}

// sends counts the attempts that reached a provider.
func sends(as []router.Attempt) int {
	n := 0
	for _, a := range as {
		if a.Action != policy.Skip && a.Action != policy.Static {
			n++
		}
	}
	return n
}

// setWho sets the headers that say who answered.
func (c *call) setWho(h http.Header, res *router.Result, attempts int) {
	c.answered, c.sends = res.Target, attempts
	c.hv.set(h, "X-Detour-Route", c.route.Name)
	c.whoHeaders(h, res, attempts)
}

// whoHeaders sets the answer's provider, model, attempts, degraded and
// dropped headers: the ones a stream committed early sends as trailers.
// x-detour-dropped names what the request carried that the answering
// target went without (a cross-dialect hop), and the events of its answer
// left out as unreadable ("1 malformed event"); absent when nothing was.
func (c *call) whoHeaders(h http.Header, res *router.Result, attempts int) {
	t := res.Target
	c.hv.set(h, "X-Detour-Provider", t.Provider)
	c.hv.set(h, "X-Detour-Model", t.Model)
	c.hv.set(h, "X-Detour-Attempts", strconv.Itoa(attempts))
	c.hv.set(h, "X-Detour-Degraded", strconv.FormatBool(res.Degraded))
	if len(res.Dropped) > 0 {
		c.hv.set(h, "X-Detour-Dropped", strings.Join(res.Dropped, ", "))
	}
	c.degraded, c.dropped = res.Degraded, res.Dropped
	if res.Response != nil && res.Phase == policy.PhaseCommitted {
		// Known once the answer is whole: a plain answer's headers carry
		// it; a stream's goes as a trailer when it ends.
		c.hv.set(h, "X-Detour-Cost", costText(res.Attempts))
	}
}

// costText is what attempts cost together, in USD, for x-detour-cost.
func costText(as []router.Attempt) string {
	cost := 0.0
	for _, a := range as {
		cost += a.Cost
	}
	return strconv.FormatFloat(cost, 'f', 6, 64)
}

// serveComplete answers a request that did not ask for a stream.
func (c *call) serveComplete(ctx context.Context) {
	res, err := c.s.router.Complete(ctx, c.route, c.cr.req, c.opts)
	if err != nil {
		c.failed(err)
		return
	}
	pre := res.Attempts[:max(0, len(res.Attempts)-1)]
	c.outcome = outcome(pre, res.Target)
	if lastResort(res.Attempts) {
		c.outcome = OutcomeStatic
	}
	c.s.metrics.observeRecovery(pre, res.Target, res.Response.Usage)
	h := c.w.Header()
	c.setWho(h, res, sends(res.Attempts))
	if c.writeRaw(res.Response) {
		return
	}
	p := getBytes()
	b := *p
	switch c.d {
	case anthropicDialect:
		b = appendAnthropicMessage(b, c, res.Response)
	case responsesDialect:
		b = appendResponsesObject(b, c, res.Response)
	case geminiDialect:
		b = appendGeminiResponse(b, c, res.Response)
	default:
		b = appendOpenAICompletion(b, c, res.Response)
	}
	b = redactEvents(c.answerKeys(), b, 0)
	c.hv.set(h, "Content-Type", "application/json")
	c.hv.set(h, "Content-Length", strconv.Itoa(len(b)))
	c.status = http.StatusOK
	c.w.WriteHeader(http.StatusOK)
	c.w.Write(b) //nolint:errcheck // nothing to do for a gone client
	putBytes(p, b)
}

// failed answers a request the router could not answer.
func (c *call) failed(err error) {
	if e, gone := c.failure(err); !gone {
		writeError(c.w, c.d, e, c.id)
	}
}

// failure reads the router's error: the answer the client gets, and
// whether the client is gone (then there is nobody to answer). It records
// the outcome and sets the headers of a failed request.
func (c *call) failure(err error) (*apiError, bool) {
	s := c.s
	e := s.routeError(err, c.route)
	var re *router.Error
	if errors.As(err, &re) {
		c.sends = re.Attempts
		h := c.w.Header()
		c.hv.set(h, "X-Detour-Route", c.route.Name)
		c.hv.set(h, "X-Detour-Attempts", strconv.Itoa(re.Attempts))
	}
	c.setError(e)
	switch {
	case errors.Is(err, router.ErrCanceled):
		c.outcome = OutcomeCanceled
		if s.hard.Err() != nil {
			e = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
				RetryAfter: 1, Message: "detour: the gateway is shutting down: send the request again"}
			c.setError(e)
			return e, false
		}
		return e, c.r.Context().Err() != nil
	case errors.Is(err, router.ErrFailClosed):
		c.outcome = OutcomeFailClosed
	case errors.Is(err, router.ErrAllFailed):
		c.outcome = OutcomeAllFailed
	default:
		c.outcome = OutcomeError
	}
	return e, false
}

// setError records e as the error the request ends in: its status goes
// out on the wire unless a stream's headers already have (the caller then
// sets status to 200).
func (c *call) setError(e *apiError) {
	c.status, c.errStatus, c.errText = e.Status, e.Status, e.Message
}

// level is the level of the request's log line: WARN for every request
// that ended in an error, whether or not its headers had gone out (a
// rejection, a fail-closed or all-failed answer, a stream that failed after
// its keep-alives or after output, a request cut by shutdown); INFO for an
// answer and for a client that went away.
func (c *call) level() slog.Level {
	switch {
	case c.outcome == OutcomeCanceled && c.s.hard.Err() == nil:
		return slog.LevelInfo
	case c.errStatus != 0:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// maxLoggedError cuts the error text of a log line, in runes: enough for
// every candidate's reason of a long chain.
const maxLoggedError = 2000

// done writes the request's metrics and its one log line.
func (c *call) done() {
	s := c.s
	took := s.clk.Now().Sub(c.start)
	if c.outcome != "" {
		s.metrics.requests.With(c.d.String(), c.label, c.outcome).Inc()
		s.metrics.latency.With(c.d.String(), strconv.FormatBool(c.cr.stream)).Observe(took.Seconds())
	}
	level := c.level()
	ctx := context.Background()
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.String("id", c.id), slog.String("surface", c.d.String()),
		slog.Int("status", c.status), slog.Duration("took", took))
	if c.errStatus != 0 && c.errStatus != c.status {
		attrs = append(attrs, slog.Int("error_status", c.errStatus))
	}
	switch {
	case c.outcome != "":
		attrs = append(attrs, slog.String("outcome", c.outcome))
	case c.errStatus != 0:
		attrs = append(attrs, slog.String("outcome", OutcomeRejected))
	}
	if c.key != nil {
		attrs = append(attrs, slog.String("key", c.key.name))
	}
	if c.route != nil {
		attrs = append(attrs, slog.String("route", c.route.Name), slog.Bool("stream", c.cr.stream),
			slog.Int("attempts", c.sends))
	}
	if c.answered != nil {
		attrs = append(attrs, slog.String("target", c.answered.ID()))
	}
	if c.ttft > 0 {
		attrs = append(attrs, slog.Duration("ttft", c.ttft))
	}
	if len(c.dropped) > 0 {
		attrs = append(attrs, slog.String("dropped", strings.Join(c.dropped, ", ")))
	}
	if c.idem != "" {
		attrs = append(attrs, slog.String("idempotency_key", c.idem))
	}
	if c.errText != "" {
		msg := c.errText
		if r := []rune(msg); len(r) > maxLoggedError {
			msg = string(r[:maxLoggedError-1]) + "…"
		}
		attrs = append(attrs, slog.String("error", s.scrub(msg)))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}
