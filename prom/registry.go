package prom

import (
	"bytes"
	"fmt"
	"io"
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
	samples := []string{name}
	for _, s := range suffixes {
		samples = append(samples, name+s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.names = map[string]string{}
	}
	for _, s := range samples {
		if owner, ok := r.names[s]; ok {
			if owner == name {
				panic(fmt.Sprintf("prom: metric %q registered twice", name))
			}
			panic(fmt.Sprintf("prom: metric %q: the name %q is taken by metric %q", name, s, owner))
		}
	}
	for _, s := range samples {
		r.names[s] = name
	}
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
