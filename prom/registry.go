package prom

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
)

// Registry holds metric families and writes them, in the order they were
// registered, in the text exposition format. Its zero value is an empty
// registry, as is NewRegistry's. Safe for concurrent use: registering,
// updating and scraping may all happen at once.
type Registry struct {
	mu       sync.Mutex        // guards families and names
	families []family          // in registration order; only ever appended to
	names    map[string]string // every sample name taken -> the family that took it
}

// family is a registered metric family.
type family interface {
	// appendTo appends the family in the text format, or nothing if it
	// has no series now.
	appendTo(b []byte) []byte
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return new(Registry) }

// register adds f, named name, whose samples are named name plus each of
// suffixes (name alone if none). It panics if one of those names is taken.
func (r *Registry) register(f family, name string, suffixes ...string) {
	r.registerGroup(f, sampleNames(name, suffixes...))
}

// names are a family's name and the names of its samples.
type names struct {
	family  string
	samples []string
}

// sampleNames returns the names of family name, whose samples are named
// name plus each of suffixes (name alone if none).
func sampleNames(name string, suffixes ...string) names {
	n := names{family: name, samples: []string{name}}
	for _, s := range suffixes {
		n.samples = append(n.samples, name+s)
	}
	return n
}

// namesOf returns the names a family of d takes: a histogram's _bucket,
// _sum and _count samples, a summary's _sum and _count.
func namesOf(d *desc) names {
	switch d.typ {
	case "histogram":
		return sampleNames(d.name, "_bucket", "_sum", "_count")
	case "summary":
		return sampleNames(d.name, "_sum", "_count")
	}
	return sampleNames(d.name)
}

// registerGroup adds f, which writes the families of all at once. It
// panics if one of their sample names is taken, by another family or by
// one of all.
func (r *Registry) registerGroup(f family, all ...names) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.names = map[string]string{}
	}
	taken := map[string]string{}
	for _, n := range all {
		for _, s := range n.samples {
			owner, ok := r.names[s]
			if !ok {
				owner, ok = taken[s]
			}
			if ok {
				if owner == n.family {
					panic(fmt.Sprintf("prom: metric %q registered twice", n.family))
				}
				panic(fmt.Sprintf("prom: metric %q: the name %q is taken by metric %q", n.family, s, owner))
			}
			taken[s] = n.family
		}
	}
	maps.Copy(r.names, taken)
	r.families = append(r.families, f)
}

// WriteTo writes every family with a series, in registration order, in
// the text exposition format 0.0.4: series sorted by label values, labels
// sorted by name. It returns the bytes written and the first write error.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	families := r.families
	r.mu.Unlock()
	var (
		n int64
		b []byte
	)
	for _, f := range families {
		if b = f.appendTo(b[:0]); len(b) == 0 {
			continue
		}
		m, err := w.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Handler returns an http.Handler that answers GET and HEAD with the
// registry in the text format (Content-Type ContentType) and any other
// method with 405 Method Not Allowed.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method "+req.Method+" is not allowed; use GET", http.StatusMethodNotAllowed)
			return
		}
		var buf bytes.Buffer
		r.WriteTo(&buf) // a bytes.Buffer never fails
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
		if req.Method == http.MethodGet {
			w.Write(buf.Bytes())
		}
	})
}
