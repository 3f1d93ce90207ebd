package config

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
)

// failKinds are the kinds fail_closed_on accepts.
var failKinds = []string{
	string(classify.Transient), string(classify.Wall), string(classify.Invalid),
	string(classify.ContextOverflow), string(classify.Policy), string(classify.Unknown),
}

// validator checks a typed Config; positions come from the decoder's maps.
type validator struct {
	c *Config
	// bad are the fields whose value the decoder could not read: they and
	// the fields inside them already have a problem reported.
	bad  map[string]bool
	errs Errors
}

// validate returns the problems of c, leaving out fields in bad.
func (c *Config) validate(bad map[string]bool) Errors {
	v := &validator{c: c, bad: bad}
	for _, name := range sortedKeys(c.Providers) {
		v.provider(name, c.Providers[name])
	}
	for _, addr := range sortedKeys(c.Targets) {
		v.target(addr, c.Targets[addr])
	}
	v.checkFailKinds("defaults", c.Defaults.FailClosedOn)
	v.checkBudget("defaults", c.Defaults.Budget)
	if c.Defaults.Budget != (policy.Budget{}) {
		v.checkReserve("defaults", c.Defaults.Budget)
	}
	for _, name := range sortedKeys(c.Routes) {
		v.route(name, c.Routes[name])
	}
	v.gateway(c.Gateway)
	v.telemetry(c.Telemetry)
	v.probe(c.Probe)
	return v.errs
}

// where returns the position of field (its key when key is true), or of
// the nearest enclosing field the source records.
func (c *Config) where(field string, key bool) position {
	maps := []map[string]position{c.pos, c.keyPos}
	if key {
		maps[0], maps[1] = maps[1], maps[0]
	}
	for f := field; f != ""; f = parent(f) {
		for _, m := range maps {
			if p, ok := m[f]; ok && p.line > 0 {
				return p
			}
		}
	}
	return position{}
}

// parent returns the path that encloses field ("" at the top).
func parent(field string) string {
	if strings.HasSuffix(field, "\"]") {
		if i := strings.LastIndex(field, "[\""); i >= 0 {
			return field[:i]
		}
	}
	if strings.HasSuffix(field, "]") {
		if i := strings.LastIndexByte(field, '['); i >= 0 {
			return field[:i]
		}
	}
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[:i]
	}
	return ""
}

// covered reports whether field or a field enclosing it already has a problem.
func (v *validator) covered(field string) bool {
	for f := field; f != ""; f = parent(f) {
		if v.bad[f] {
			return true
		}
	}
	for _, e := range v.errs {
		if e.Field == field {
			return true
		}
	}
	return false
}

// fail records a problem at field (at its key when key is true).
func (v *validator) fail(field string, key bool, sentinel error, format string, args ...any) {
	if v.covered(field) {
		return
	}
	p := v.c.where(field, key)
	v.errs = append(v.errs, &Error{File: v.c.File, Line: p.line, Column: p.col, Field: field,
		Msg: fmt.Sprintf(format, args...), Err: sentinel})
}

// envVar matches a portable environment variable name.
var envVar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// credentialHeaders are headers that carry a key; key_env is the place for it.
var credentialHeaders = []string{"authorization", "proxy-authorization", "x-api-key", "api-key",
	"x-goog-api-key", "cookie"}

// provider checks one provider.
func (v *validator) provider(name string, p Provider) {
	path := child("providers", name)
	if looksSecret(name) || looksRandom(name) {
		v.fail(path, true, ErrKeyInFile, "this provider name looks like an API key, and keys never go in this file: "+
			"name the provider, export the key in the environment and write key_env: VAR in it")
		return
	}
	if name == "" || strings.ContainsAny(name, "/ \t\n") {
		v.fail(path, true, nil, "provider name %s cannot be empty or hold \"/\" or spaces: "+
			"in a target address the first \"/\" ends the provider name", quote(name))
	}
	if !slices.Contains(dialects, string(p.dialect())) {
		v.fail(child(path, "dialect"), false, nil, "unknown dialect %s%s",
			quote(string(p.Dialect)), didYouMean(string(p.Dialect), dialects, "dialects"))
	}
	if !slices.Contains(pools, string(p.pool())) {
		v.fail(child(path, "pool"), false, nil, "unknown pool %s%s",
			quote(string(p.Pool)), didYouMean(string(p.Pool), pools, "pools"))
	}
	v.baseURL(path, p)
	if p.KeyEnv != "" {
		f := child(path, "key_env")
		switch {
		case looksSecret(p.KeyEnv) || looksRandom(p.KeyEnv):
			v.fail(f, false, ErrKeyInFile, "key_env takes the NAME of an environment variable, not the key: "+
				"delete the key from this file, export %s=... and write key_env: %s", envName(name), envName(name))
		case !envVar.MatchString(p.KeyEnv):
			v.fail(f, false, nil, "key_env %s is not an environment variable name: use letters, digits and _, like %s",
				quote(p.KeyEnv), envName(name))
		}
	}
	for _, h := range sortedKeys(p.Headers) {
		f := child(child(path, "headers"), h)
		switch {
		case slices.Contains(credentialHeaders, strings.ToLower(h)):
			v.fail(f, true, ErrKeyInFile, "header %s carries a key, and keys never go in this file: "+
				"delete it and write key_env: %s (detour sends the key as Authorization: Bearer)", h, envName(name))
		case !headerName.MatchString(h):
			v.fail(f, true, nil, "%s is not a valid HTTP header name: use letters, digits and - "+
				"(like X-Title), without spaces, colons or line breaks", quote(h))
		case slices.Contains(managedHeaders, strings.ToLower(h)):
			v.fail(f, true, nil, "header %s is set by detour and Go's HTTP client for each request, "+
				"so this one would be dropped or break the request: delete it", h)
		case looksSecret(p.Headers[h]) || looksRandom(p.Headers[h]):
			v.fail(f, false, ErrKeyInFile, "this header value looks like a key, and keys never go in this file: "+
				"delete it and write key_env: %s", envName(name))
		default:
			if i, c, bad := badHeaderByte(p.Headers[h]); bad {
				v.fail(f, false, nil, "the value of header %s holds %s at byte %d, which no HTTP header value may hold "+
					"(every request would fail): write it on one line, without control characters", h, c, i+1)
			}
		}
	}
}

// headerName matches an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// managedHeaders are the headers, lower-cased, that a provider's headers:
// cannot set: Go's client writes the framing ones itself (it drops these
// from a request's header) and the hop-by-hop ones would change the
// connection.
var managedHeaders = []string{"host", "content-length", "transfer-encoding", "trailer", "te",
	"connection", "keep-alive", "upgrade", "proxy-connection"}

// badHeaderByte returns the first byte of v that an HTTP header value may
// not hold (RFC 9110 field-value: a control character other than tab,
// that is CR, LF, NUL and the rest below 0x20, or DEL), named for a
// message; bad is false when there is none.
func badHeaderByte(v string) (i int, name string, bad bool) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\r':
			return i, "a carriage return (CR, \\r)", true
		case c == '\n':
			return i, "a line feed (LF, \\n)", true
		case c == 0:
			return i, "a NUL byte (\\0)", true
		case c < 0x20 && c != '\t' || c == 0x7f:
			return i, fmt.Sprintf("the control character 0x%02X", c), true
		}
	}
	return 0, "", false
}

// baseURL checks a provider's base_url.
func (v *validator) baseURL(path string, p Provider) {
	f := child(path, "base_url")
	if p.BaseURL == "" {
		if p.dialect() == OpenAI && !v.bad[child(path, "preset")] {
			v.fail(path, true, nil, "base_url is missing: a provider that is not a preset needs one, like "+
				"base_url: https://api.example.com/v1 (or copy a preset with preset: NAME; presets are: %s)",
				strings.Join(presetNames(), ", "))
		}
		return
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(f, false, nil, "base_url %s is not an http(s) URL: write it like https://api.example.com/v1", quote(p.BaseURL))
		return
	}
	if _, hasPass := u.User.Password(); hasPass || u.User != nil && looksSecret(u.User.Username()) {
		v.fail(f, false, ErrKeyInFile, "base_url holds a credential, and keys never go in this file: "+
			"remove it from the URL and write key_env: %s", envName(p.Name))
		return
	}
	for q := range u.Query() {
		if lq := strings.ToLower(q); secretFieldNames[lq] || lq == "access_key" {
			v.fail(f, false, ErrKeyInFile, "base_url carries a key in ?%s=, and keys never go in this file: "+
				"remove it from the URL and write key_env: %s", q, envName(p.Name))
			return
		}
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions") {
		v.fail(f, false, nil, "base_url is the API root, without /chat/completions: write %s",
			strings.TrimSuffix(strings.TrimRight(p.BaseURL, "/"), "/chat/completions"))
	}
}

// target checks one targets: entry.
func (v *validator) target(addr string, t Target) {
	path := child("targets", addr)
	prov, _, ok := splitAddr(addr)
	switch {
	case !ok:
		v.fail(path, true, nil, "%s is not an address: write provider/model, like groq/llama-3.3-70b-versatile", quote(addr))
	default:
		if _, known := v.c.Provider(prov); !known {
			v.fail(path, true, ErrUnknownProvider, "%s", v.c.unknownProviderMsg(prov))
		}
	}
	if t.Context < 0 {
		v.fail(child(path, "context"), false, nil, "context is negative: write the window in tokens, or leave it out if unknown")
	}
	if t.MaxOutput < 0 {
		v.fail(child(path, "max_output"), false, nil, "max_output is negative: write the cap in tokens, or leave it out if unknown")
	}
	for _, pr := range []struct {
		name string
		v    float64
	}{{"in", t.Price.In}, {"out", t.Price.Out}} {
		if pr.v < 0 || math.IsNaN(pr.v) || math.IsInf(pr.v, 0) {
			v.fail(child(child(path, "price"), pr.name), false, nil,
				"price.%s is %v: prices are USD per million tokens, 0 or more", pr.name, pr.v)
		}
	}
}

// route checks one route.
func (v *validator) route(name string, r Route) {
	path := child("routes", name)
	if name == "" {
		v.fail(path, true, nil, "a route needs a name")
	}
	cp := child(path, "chain")
	if len(r.Chain) == 0 {
		v.fail(cp, true, nil, "chain is empty: list the targets to try, in order, as provider/model, "+
			"like chain: [groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]")
	}
	seen := map[string]int{}
	for i, addr := range r.Chain {
		ip := index(cp, i)
		if j, dup := seen[addr]; dup {
			v.fail(ip, false, nil, "%s is already chain[%d]: list each target once (max_per_target sets the retries)", quote(addr), j)
			continue
		}
		seen[addr] = i
		v.address(ip, addr)
	}
	if r.Embeddings {
		v.embeddingsFamilies(path, r)
	}
	if d := v.c.Defaults.FailClosedOn; d == nil || !slices.Equal(r.FailClosedOn, d) {
		v.checkFailKinds(path, r.FailClosedOn) // the defaults' list is checked once, where it is written
	}
	v.checkBudget(path, r.Budget)
	db := v.c.Defaults.route("", nil).Budget.WithDefaults()
	rb := r.Budget.WithDefaults()
	if rb.Deadline != db.Deadline || rb.Reserve != db.Reserve || db.Reserve < db.Deadline {
		v.checkReserve(path, r.Budget) // the defaults' are checked once, at defaults:
	}
}

// checkReserve refuses the budget of the route (or defaults:) at path when
// its reserve, the time kept out of the deadline for the next candidates,
// leaves the deadline nothing: the first attempt would get no time and no
// retry would ever fit.
func (v *validator) checkReserve(path string, b policy.Budget) {
	w := b.WithDefaults()
	if w.Reserve < w.Deadline || b.Reserve < 0 || b.Deadline < 0 {
		return
	}
	bp := child(path, "budget")
	field, reserve, deadline := bp, "", ""
	for _, f := range []string{"deadline", "reserve"} {
		if _, written := v.c.keyPos[child(bp, f)]; written {
			field = child(bp, f)
		}
	}
	if _, written := v.c.keyPos[child(bp, "reserve")]; !written {
		reserve = " (the default)"
	}
	if _, written := v.c.keyPos[child(bp, "deadline")]; !written {
		deadline = " (the default)"
	}
	fix := (w.Deadline / 6).Truncate(100 * time.Millisecond)
	if w.Deadline >= 6*time.Second {
		fix = fix.Truncate(time.Second)
	}
	fix = max(fix, time.Millisecond)
	v.fail(field, true, nil, "budget reserve %s%s is not below the deadline %s%s: the reserve is the part of the "+
		"deadline kept for the next candidates, so the first attempt would get no time and no retry would fit; "+
		"lower it (like reserve: %s) or raise deadline above %s",
		short(w.Reserve), reserve, short(w.Deadline), deadline, short(fix), short(w.Reserve))
}

// checkFailKinds checks the fail_closed_on list of the route (or defaults:) at path.
func (v *validator) checkFailKinds(path string, kinds []classify.Kind) {
	fp := child(path, "fail_closed_on")
	for i, k := range kinds {
		if j := slices.Index(kinds, k); j < i {
			first := fmt.Sprintf("also at %s", index(fp, j))
			if p := v.c.where(index(fp, j), false); p.line > 0 {
				first = fmt.Sprintf("first at line %d", p.line)
			}
			v.fail(index(fp, i), false, nil, "%s is listed twice (%s): list each kind once", quote(string(k)), first)
			continue
		}
		if slices.Contains(failKinds, string(k)) {
			continue
		}
		hint := didYouMean(string(k), failKinds, "kinds")
		switch strings.ToLower(string(k)) {
		case "auth", "quota", "402", "401", "403", "429":
			hint = " (401/403, 402 and quota 429s are kind wall; kinds are: " + strings.Join(failKinds, ", ") + ")"
		case "canceled", "cancelled":
			hint = " (a cancelled request always ends; kinds are: " + strings.Join(failKinds, ", ") + ")"
		}
		v.fail(index(fp, i), false, nil, "unknown failure kind %s%s", quote(string(k)), hint)
	}
}

// checkBudget checks the budget of the route (or defaults:) at path.
func (v *validator) checkBudget(path string, b policy.Budget) {
	if b.MaxAttempts < 0 || b.MaxPerTarget < 0 || b.Deadline < 0 || b.Reserve < 0 || b.MaxServerWait < 0 ||
		b.MaxRetryWait < 0 || b.BaseBackoff < 0 || b.MaxBackoff < 0 || b.MaxExtraCost < 0 || math.IsNaN(b.MaxExtraCost) {
		v.fail(child(path, "budget"), false, nil, "budget fields cannot be negative")
	}
}

// address checks one chain entry.
func (v *validator) address(field, addr string) {
	prov, _, ok := splitAddr(addr)
	if ok {
		if _, known := v.c.Provider(prov); !known {
			v.fail(field, false, ErrUnknownProvider, "%s", v.c.unknownProviderMsg(prov))
		}
		return
	}
	msg := fmt.Sprintf("%s is not a target: write provider/model, like groq/llama-3.3-70b-versatile", quote(addr))
	if p, known := v.c.Provider(strings.TrimSuffix(addr, "/")); known && addr != "" {
		msg = fmt.Sprintf("%s names a provider; add the model: %s/MODEL", quote(addr), p.Name)
		if ps, ok := LookupPreset(p.Preset); ok && ps.Model != "" {
			msg += fmt.Sprintf(", like %s/%s", p.Name, ps.Model)
		}
	} else if _, isRoute := v.c.Routes[addr]; isRoute {
		msg = fmt.Sprintf("%s is a route: a chain lists targets (provider/model), not routes", quote(addr))
	}
	v.fail(field, false, nil, "%s", msg)
}

// secretPrefixes begin the keys of common providers (OpenAI and DeepSeek
// sk-, OpenRouter sk-or-, Anthropic sk-ant-, Groq gsk_, xAI xai-, Cerebras
// csk-, Fireworks fw_, Google AIza, Hugging Face hf_, NVIDIA nvapi-,
// Replicate r8_, Perplexity pplx-, GitHub ghp_/github_pat_, GitLab glpat-).
var secretPrefixes = []string{"sk-", "sk_", "gsk_", "xai-", "csk-", "fw_", "AIza", "hf_", "nvapi-",
	"r8_", "pplx-", "ghp_", "github_pat_", "glpat-", "tgp_"}

// looksSecret reports whether s looks like an API key of a known shape or a
// bearer token. Model names, URLs and variable names do not match.
func looksSecret(s string) bool {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "bearer "); ok {
		return len(strings.TrimSpace(rest)) >= 8
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(s, p) && len(s)-len(p) >= 16 && tokenChars(s) {
			return true
		}
	}
	return false
}

// looksRandom reports whether s looks like a key of no known prefix: at
// least 24 letters and digits, both present, with no separator (Mistral,
// Together). Used only where a name (key_env) or a header value is expected.
func looksRandom(s string) bool {
	if len(s) < 24 {
		return false
	}
	var digit, letter bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letter = true
		default:
			return false
		}
	}
	return digit && letter
}

// tokenChars reports whether s holds only the characters keys are made of.
func tokenChars(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
