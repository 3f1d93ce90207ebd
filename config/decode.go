package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
)

// The fields each mapping accepts, in the order messages list them.
var (
	topFields      = []string{"providers", "targets", "routes"}
	providerFields = []string{"preset", "dialect", "base_url", "key_env", "pool", "headers"}
	targetFields   = []string{"family", "context", "max_output", "price"}
	priceFields    = []string{"in", "out"}
	routeFields    = []string{"chain", "budget", "fail_closed_on", "fallback"}
	budgetFields   = []string{"profile", "max_attempts", "max_per_target", "deadline", "reserve",
		"max_server_wait", "base_backoff", "max_backoff", "max_extra_cost", "queue"}
	profiles = []string{"interactive", "batch"}
)

// maxAliasDepth bounds alias and merge-key chains, so no document loops.
const maxAliasDepth = 16

// decoder turns a YAML AST into a Config, recording every problem and the
// position of every field it reads.
type decoder struct {
	c    *Config
	errs Errors
	// bad holds the fields whose value could not be read; validation does
	// not report them again.
	bad     map[string]bool
	anchors map[string]ast.Node
	depth   int
	// keyHint is the variable name suggested when a key is found in the file.
	keyHint string
}

// pair is one key and its value in a mapping.
type pair struct {
	key  string
	keyN ast.Node
	val  ast.Node
}

// decode parses data. The Config is nil only when the YAML cannot be read;
// bad lists the fields whose value could not be read.
func decode(name string, data []byte) (c *Config, errs Errors, bad map[string]bool) {
	d := &decoder{
		bad: map[string]bool{},
		c: &Config{File: name, Providers: map[string]Provider{}, Targets: map[string]Target{},
			Routes: map[string]Route{}, pos: map[string]position{}, keyPos: map[string]position{}},
		anchors: map[string]ast.Node{},
		keyHint: "PROVIDER_API_KEY",
	}
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, Errors{d.syntaxError(err)}, nil
	}
	var docs []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc.Body)
		}
	}
	if len(docs) == 0 {
		return d.c, nil, nil
	}
	if len(docs) > 1 {
		d.fail(startPos(docs[1]), "", nil, "a second YAML document: detour.yaml holds one; remove the '---' and merge what follows into the first")
	}
	ast.Walk(visitFunc(func(n ast.Node) {
		if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
			d.anchors[a.Name.GetToken().Value] = a.Value
		}
	}), docs[0])
	d.top(docs[0])
	return d.c, d.errs, d.bad
}

// visitFunc adapts a function to ast.Visitor.
type visitFunc func(ast.Node)

func (f visitFunc) Visit(n ast.Node) ast.Visitor { f(n); return f }

// syntaxError turns a YAML parse error into an *Error at its token.
func (d *decoder) syntaxError(err error) *Error {
	e := &Error{File: d.c.File, Msg: "YAML syntax: " + scrub(err.Error())}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = "YAML syntax: " + scrub(ye.GetMessage()) + " (check the indentation and quoting here)"
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}

// scrub hides any word of msg that looks like a key.
func scrub(msg string) string {
	words := strings.Fields(msg)
	for i, w := range words {
		if looksSecret(strings.Trim(w, `"'`)) {
			words[i] = "[hidden]"
		}
	}
	return strings.Join(words, " ")
}

// fail records a problem at p with the value of field.
func (d *decoder) fail(p position, field string, sentinel error, msg string) {
	d.bad[field] = true
	d.errs = append(d.errs, &Error{File: d.c.File, Line: p.line, Column: p.col, Field: field, Msg: msg, Err: sentinel})
}

// failf records a problem at node n.
func (d *decoder) failf(n ast.Node, field, format string, args ...any) {
	d.fail(startPos(n), field, nil, fmt.Sprintf(format, args...))
}

// mark records where the field at path and its value are.
func (d *decoder) mark(path string, p pair) {
	d.c.keyPos[path] = startPos(p.keyN)
	d.c.pos[path] = startPos(p.val)
	if p.val == nil {
		d.c.pos[path] = d.c.keyPos[path]
	}
}

// startPos returns where n begins in the source.
func startPos(n ast.Node) position {
	switch v := n.(type) {
	case nil:
		return position{}
	case *ast.MappingNode:
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return startPos(v.Values[0])
		}
	case *ast.MappingValueNode:
		return startPos(v.Key)
	case *ast.MappingKeyNode:
		if v.Value != nil {
			return startPos(v.Value)
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return position{}
	}
	return position{tk.Position.Line, tk.Position.Column}
}

// resolve looks through tags, anchors and aliases to the node that holds
// the value; nil means no value.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range maxAliasDepth {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			n = d.anchors[v.Value.GetToken().Value]
		case *ast.MappingKeyNode:
			n = v.Value
		default:
			return n
		}
	}
	return nil
}

// describe names the kind of value n holds, for messages.
func describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "true/false"
	}
	return "text"
}

// child returns the path of key under path.
func child(path, key string) string {
	if key == "" || !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// plainKey matches keys that need no quoting in a field path.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// index returns the path of item i of the list at path.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// mapping returns the pairs of the mapping n (merge keys applied, later
// duplicates reported and dropped). A null n is an empty mapping. what names
// the keys for the duplicate message ("field", "route", ...).
func (d *decoder) mapping(n ast.Node, path, what string) ([]pair, bool) {
	n = d.resolve(n)
	var values []*ast.MappingValueNode
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.MappingNode:
		values = v.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{v}
	default:
		d.failf(n, path, "expected a mapping (key: value), got %s", describe(n))
		return nil, false
	}
	var out, merged []pair
	seen := map[string]ast.Node{}
	for _, mv := range values {
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			merged = append(merged, d.mergeSource(mv.Value, path)...)
			continue
		}
		k := keyText(d.resolve(mv.Key))
		if first, dup := seen[k]; dup {
			p := startPos(mv.Key)
			d.errs = append(d.errs, &Error{File: d.c.File, Line: p.line, Column: p.col, Field: child(path, k),
				Msg: fmt.Sprintf("%s %s is defined twice (first at line %d); %s",
					what, quote(k), startPos(first).line, duplicateFix[what])})
			continue
		}
		seen[k] = mv.Key
		out = append(out, pair{key: k, keyN: mv.Key, val: mv.Value})
	}
	for _, p := range merged {
		if _, ok := seen[p.key]; !ok {
			seen[p.key] = p.keyN
			out = append(out, p)
		}
	}
	return out, true
}

// duplicateFix says how to resolve a duplicated key, by what it names.
var duplicateFix = map[string]string{
	"field":    "keep one",
	"route":    "give each route its own name",
	"provider": "give each provider its own name (for a second account of one service, name it e.g. groq2 and write preset: groq)",
	"target":   "merge the two entries",
}

// mergeSource returns the pairs a merge key ("<<: *base") brings in.
func (d *decoder) mergeSource(n ast.Node, path string) []pair {
	if d.depth >= maxAliasDepth {
		d.failf(n, path, "merge keys nest too deeply")
		return nil
	}
	d.depth++
	defer func() { d.depth-- }()
	if s, ok := d.resolve(n).(*ast.SequenceNode); ok {
		var out []pair
		for _, v := range s.Values {
			ps, _ := d.mapping(v, path, "field")
			out = append(out, ps...)
		}
		return out
	}
	ps, _ := d.mapping(n, path, "field")
	return ps
}

// keyText returns the text of a mapping key.
func keyText(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return ""
	case *ast.StringNode:
		return v.Value
	case *ast.NullNode:
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.String()
}

// str reads a text value. Null reads as "". Any scalar reads as its source
// text, so `family: 3.3` is the text "3.3".
func (d *decoder) str(n ast.Node, path string) (string, bool) {
	n = d.resolve(n)
	var s string
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "", true
	case *ast.StringNode:
		s = v.Value
	case *ast.LiteralNode:
		s = v.Value.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		s = v.GetToken().Value
	default:
		d.failf(n, path, "expected text, got %s", describe(n))
		return "", false
	}
	if looksSecret(s) {
		d.secret(startPos(n), path)
		return "", false
	}
	return s, true
}

// secret records that a key was written into the file at path.
func (d *decoder) secret(p position, path string) {
	d.fail(p, path, ErrKeyInFile, fmt.Sprintf("this looks like an API key, and keys never go in this file: "+
		"delete it, export it in the environment (export %s=...) and write key_env: %s in the provider",
		d.keyHint, d.keyHint))
}

// integer reads a whole number.
func (d *decoder) integer(n ast.Node, path string) (int, bool) {
	n = d.resolve(n)
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt {
				return int(x), true
			}
		}
		d.failf(n, path, "%s is too large", v.GetToken().Value)
		return 0, false
	}
	d.failf(n, path, "expected a whole number, got %s", describe(n))
	return 0, false
}

// number reads a finite number.
func (d *decoder) number(n ast.Node, path string) (float64, bool) {
	n = d.resolve(n)
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.FloatNode:
		if !math.IsNaN(v.Value) && !math.IsInf(v.Value, 0) {
			return v.Value, true
		}
	}
	d.failf(n, path, "expected a number, got %s", describe(n))
	return 0, false
}

// boolean reads true or false.
func (d *decoder) boolean(n ast.Node, path string) (bool, bool) {
	n = d.resolve(n)
	if v, ok := n.(*ast.BoolNode); ok {
		return v.Value, true
	}
	d.failf(n, path, "expected true or false, got %s", describe(n))
	return false, false
}

// duration reads a positive duration written with a unit ("30s", "1m30s").
// A bare number is refused: 30 could mean seconds or milliseconds.
func (d *decoder) duration(n ast.Node, path string) (time.Duration, bool) {
	n = d.resolve(n)
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		t := v.GetToken().Value
		d.failf(n, path, "%s has no unit: write %q for seconds (units: ms, s, m, h)", t, t+"s")
		return 0, false
	case *ast.StringNode:
		dur, err := time.ParseDuration(strings.TrimSpace(v.Value))
		if err != nil {
			d.failf(n, path, "%s is not a duration: write a number and a unit, like \"30s\", \"1m30s\" or \"500ms\"", quote(v.Value))
			return 0, false
		}
		if dur <= 0 {
			d.failf(n, path, "must be more than 0; leave the field out to take the default")
			return 0, false
		}
		return dur, true
	}
	d.failf(n, path, "expected a duration like \"30s\", got %s", describe(n))
	return 0, false
}

// list reads a sequence; null is an empty (nil) list.
func (d *decoder) list(n ast.Node, path, example string) ([]ast.Node, bool) {
	n = d.resolve(n)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.SequenceNode:
		if v.Values == nil {
			return []ast.Node{}, true
		}
		return v.Values, true
	}
	d.failf(n, path, "expected a list, got %s; write it like %s", describe(n), example)
	return nil, false
}

// unknown reports a field that allowed does not contain. A field that
// names a key (api_key, token, ...) gets the key_env explanation instead.
func (d *decoder) unknown(p pair, parent string, allowed []string) {
	path := child(parent, p.key)
	norm := strings.ToLower(strings.ReplaceAll(p.key, "-", "_"))
	v := d.resolve(p.val)
	secretValue := false
	if s, ok := v.(*ast.StringNode); ok {
		secretValue = looksSecret(s.Value)
	}
	if secretFieldNames[norm] || secretValue || (suggest(p.key, allowed) == "" &&
		(strings.HasSuffix(norm, "_key") || strings.HasSuffix(norm, "_token") || strings.HasSuffix(norm, "secret"))) {
		d.fail(startPos(p.keyN), path, ErrKeyInFile, fmt.Sprintf("keys never go in this file: delete %s, "+
			"export the key in the environment (export %s=...) and write key_env: %s in the provider",
			p.key, d.keyHint, d.keyHint))
		return
	}
	d.fail(startPos(p.keyN), path, nil, fmt.Sprintf("unknown field %s%s", quote(p.key), didYouMean(p.key, allowed, "fields")))
}

// secretFieldNames are field names people use for a key written inline.
var secretFieldNames = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "token": true, "api_token": true,
	"access_token": true, "auth_token": true, "secret": true, "password": true,
	"auth": true, "authorization": true, "bearer": true, "credentials": true,
}

// top decodes the document's root mapping.
func (d *decoder) top(n ast.Node) {
	switch d.resolve(n).(type) {
	case nil, *ast.NullNode, *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.failf(n, "", "expected a mapping with providers:, targets: and routes: at the top, got %s (see examples/detour.yaml)",
			describe(d.resolve(n)))
		return
	}
	pairs, _ := d.mapping(n, "", "field")
	for _, p := range pairs {
		d.mark(p.key, p)
		switch p.key {
		case "providers":
			d.providers(p.val)
		case "targets":
			d.targets(p.val)
		case "routes":
			d.routes(p.val)
		default:
			d.unknown(p, "", topFields)
		}
	}
}

// providers decodes the providers: mapping.
func (d *decoder) providers(n ast.Node) {
	pairs, _ := d.mapping(n, "providers", "provider")
	for _, p := range pairs {
		path := child("providers", p.key)
		d.mark(path, p)
		d.provider(p.key, path, p.val)
	}
	d.keyHint = "PROVIDER_API_KEY"
}

// provider decodes one provider, starting from its preset (preset: NAME, or
// a preset of the same name) and overriding the fields it writes.
func (d *decoder) provider(name, path string, n ast.Node) {
	d.keyHint = envName(name)
	pairs, ok := d.mapping(n, path, "field")
	if !ok {
		return
	}
	prov := Provider{Name: name}
	if ps, ok := LookupPreset(name); ok {
		prov = ps.provider(name)
	}
	for _, p := range pairs { // the preset first: the other fields override it
		if p.key != "preset" {
			continue
		}
		fp := child(path, p.key)
		d.mark(fp, p)
		s, ok := d.str(p.val, fp)
		if !ok {
			continue
		}
		ps, found := LookupPreset(s)
		if !found {
			d.failf(p.val, fp, "unknown preset %s%s", quote(s), didYouMean(s, presetNames(), "presets"))
			continue
		}
		prov = ps.provider(name)
	}
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "preset":
		case "dialect":
			s, _ := d.str(p.val, fp)
			prov.Dialect = Dialect(s)
		case "base_url":
			prov.BaseURL, _ = d.str(p.val, fp)
		case "key_env":
			prov.KeyEnv, _ = d.str(p.val, fp)
		case "pool":
			s, _ := d.str(p.val, fp)
			prov.Pool = Pool(s)
		case "headers":
			hs, _ := d.mapping(p.val, fp, "field")
			prov.Headers = map[string]string{}
			for _, h := range hs {
				hp := child(fp, h.key)
				d.mark(hp, h)
				prov.Headers[h.key], _ = d.str(h.val, hp)
			}
		default:
			d.unknown(p, path, providerFields)
		}
	}
	if prov.Dialect == "" {
		prov.Dialect = OpenAI
	}
	if prov.Pool == "" {
		prov.Pool = Payg
	}
	d.c.Providers[name] = prov
}

// envName returns the key variable to suggest for a provider: its preset's,
// else NAME_API_KEY.
func envName(name string) string {
	if ps, ok := LookupPreset(name); ok && ps.KeyEnv != "" {
		return ps.KeyEnv
	}
	up := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
	if up == "" || (up[0] >= '0' && up[0] <= '9') {
		up = "P" + up
	}
	return up + "_API_KEY"
}

// targets decodes the targets: mapping of optional detail.
func (d *decoder) targets(n ast.Node) {
	pairs, _ := d.mapping(n, "targets", "target")
	for _, p := range pairs {
		path := child("targets", p.key)
		d.mark(path, p)
		prov, model, _ := splitAddr(p.key)
		t := Target{Provider: prov, Model: model}
		fields, _ := d.mapping(p.val, path, "field")
		for _, f := range fields {
			fp := child(path, f.key)
			d.mark(fp, f)
			switch f.key {
			case "family":
				t.Family, _ = d.str(f.val, fp)
			case "context":
				t.Context, _ = d.integer(f.val, fp)
			case "max_output":
				t.MaxOutput, _ = d.integer(f.val, fp)
			case "price":
				ps, _ := d.mapping(f.val, fp, "field")
				for _, q := range ps {
					qp := child(fp, q.key)
					d.mark(qp, q)
					switch q.key {
					case "in":
						t.Price.In, _ = d.number(q.val, qp)
					case "out":
						t.Price.Out, _ = d.number(q.val, qp)
					default:
						d.unknown(q, fp, priceFields)
					}
				}
			default:
				d.unknown(f, path, targetFields)
			}
		}
		d.c.Targets[p.key] = t
	}
}

// routes decodes the routes: mapping.
func (d *decoder) routes(n ast.Node) {
	pairs, _ := d.mapping(n, "routes", "route")
	for _, p := range pairs {
		path := child("routes", p.key)
		d.mark(path, p)
		r := Route{Name: p.key, BudgetName: "interactive", Budget: policy.Interactive()}
		fields, _ := d.mapping(p.val, path, "field")
		for _, f := range fields {
			fp := child(path, f.key)
			d.mark(fp, f)
			switch f.key {
			case "chain":
				items, _ := d.list(f.val, fp, "[groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]")
				r.Chain = make([]string, 0, len(items))
				for i, it := range items {
					ip := index(fp, i)
					d.c.pos[ip] = startPos(it)
					s, _ := d.str(it, ip)
					r.Chain = append(r.Chain, s)
				}
			case "budget":
				r.BudgetName, r.Budget = d.budget(f.val, fp)
			case "fail_closed_on":
				items, ok := d.list(f.val, fp, "[invalid, policy]")
				if ok && items != nil {
					r.FailClosedOn = make([]classify.Kind, 0, len(items))
				}
				for i, it := range items {
					ip := index(fp, i)
					d.c.pos[ip] = startPos(it)
					s, _ := d.str(it, ip)
					r.FailClosedOn = append(r.FailClosedOn, classify.Kind(s))
				}
			case "fallback":
				fb, ok := d.boolean(f.val, fp)
				r.NoFallback = ok && !fb
			default:
				d.unknown(f, path, routeFields)
			}
		}
		d.c.Routes[p.key] = r
	}
}

// budget decodes a profile name or an inline budget, whose fields override
// the profile named by its profile: field (interactive when absent).
func (d *decoder) budget(n ast.Node, path string) (string, policy.Budget) {
	switch d.resolve(n).(type) {
	case nil, *ast.NullNode:
		return "interactive", policy.Interactive()
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		s, ok := d.str(n, path)
		if !ok {
			return "interactive", policy.Interactive()
		}
		b, found := policy.Profile(s)
		if !found || s == "" {
			d.failf(n, path, "unknown budget profile %s%s; or write the fields inline, like budget: {deadline: 30s, max_attempts: 4}",
				quote(s), didYouMean(s, profiles, "profiles"))
			return "interactive", policy.Interactive()
		}
		return s, b
	}
	pairs, _ := d.mapping(n, path, "field")
	b := policy.Interactive()
	for _, p := range pairs {
		if p.key != "profile" {
			continue
		}
		fp := child(path, p.key)
		d.mark(fp, p)
		if s, ok := d.str(p.val, fp); ok {
			if pb, found := policy.Profile(s); found && s != "" {
				b = pb
			} else {
				d.failf(p.val, fp, "unknown budget profile %s%s", quote(s), didYouMean(s, profiles, "profiles"))
			}
		}
	}
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "profile":
		case "max_attempts", "max_per_target":
			v, ok := d.integer(p.val, fp)
			if ok && v < 1 {
				d.failf(p.val, fp, "must be at least 1; leave the field out to take the default")
			} else if ok && p.key == "max_attempts" {
				b.MaxAttempts = v
			} else if ok {
				b.MaxPerTarget = v
			}
		case "deadline", "reserve", "max_server_wait", "base_backoff", "max_backoff":
			v, ok := d.duration(p.val, fp)
			if ok {
				*durationField(&b, p.key) = v
			}
		case "max_extra_cost":
			v, ok := d.number(p.val, fp)
			if ok && v < 0 {
				d.failf(p.val, fp, "must be 0 (no ceiling) or more USD")
			} else if ok {
				b.MaxExtraCost = v
			}
		case "queue":
			b.Queue, _ = d.boolean(p.val, fp)
		default:
			d.unknown(p, path, budgetFields)
		}
	}
	return "", b
}

// durationField returns the Budget field a duration key sets.
func durationField(b *policy.Budget, key string) *time.Duration {
	switch key {
	case "deadline":
		return &b.Deadline
	case "reserve":
		return &b.Reserve
	case "max_server_wait":
		return &b.MaxServerWait
	case "base_backoff":
		return &b.BaseBackoff
	}
	return &b.MaxBackoff
}
