package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/detourhq/detour/simulate"
)

// The modes of a sim provider: what the control endpoint and --set switch
// it to. Any simulate.Kind is a mode too: that fault on every request.
const (
	modeHealthy     = "healthy"
	modeBadDay      = "bad-day"
	modeDry         = "dry"
	modeRateLimited = "rate-limited"
	modeDown        = "down"
	modeFlaky       = "flaky"
)

// simModes are the named modes with what each does, in the order help
// lists them.
var simModes = [][2]string{
	{modeHealthy, "answer every request"},
	{modeBadDay, "the provider's faults of the measured day (see above)"},
	{modeDry, "a wall: daily quota spent (free pool), else no credit left"},
	{modeRateLimited, "429 rate limit, Retry-After 2s, on every request"},
	{modeDown, "503 overloaded on every request (Anthropic: 529)"},
	{modeFlaky, "503 overloaded on half of the requests"},
}

// allProviders, in a control path, sets every provider at once.
const allProviders = "all"

// simControl is the state of detour sim's providers: the mode each is in,
// what each served, and the HTTP control endpoint that switches modes.
// Safe for concurrent use.
type simControl struct {
	srv   *simulate.Server
	day   map[string]*simulate.Profile // each provider's faults of the measured day
	pool  map[string]string
	names []string
	seed  uint64

	mu             sync.Mutex // guards mode, served, failed, total
	mode           map[string]string
	served, failed map[string]int
	total          int
}

// newSimControl returns the control of srv, whose providers are provs
// (DayProfile's, drawn from seed); every provider starts on its bad day.
// It counts what srv serves (srv.OnRecord), and passes each record on to
// onRecord when not nil.
func newSimControl(srv *simulate.Server, provs []simulate.Provider, seed uint64, onRecord func(simulate.Record)) *simControl {
	c := &simControl{srv: srv, day: map[string]*simulate.Profile{}, pool: map[string]string{}, seed: seed,
		mode: map[string]string{}, served: map[string]int{}, failed: map[string]int{}}
	srv.OnRecord = func(r simulate.Record) {
		if c.count(r.Provider, r.Kind == simulate.OK || r.Kind == simulate.NoDone)%4096 == 0 {
			srv.ClearStats() // Stats is not read: keep it from growing
		}
		if onRecord != nil {
			onRecord(r)
		}
	}
	for _, p := range provs {
		c.day[p.Name] = p.Profile
		c.mode[p.Name] = modeBadDay
	}
	for _, d := range demoChain {
		c.names = append(c.names, d.provider)
		c.pool[d.provider] = d.pool
	}
	return c
}

// errUnknownProvider is a control request's provider that the sim does not run.
var errUnknownProvider = errors.New("unknown provider")

// set switches provider (or allProviders) to mode and returns one line
// per provider switched, saying what it does now.
func (c *simControl) set(provider, mode string) ([]string, error) {
	names := []string{provider}
	if provider == allProviders {
		names = c.names
	} else if !slices.Contains(c.names, provider) {
		return nil, fmt.Errorf("%w %q: the sim runs %s, or %s for every one", errUnknownProvider, provider,
			strings.Join(c.names, ", "), allProviders)
	}
	var lines []string
	for _, name := range names {
		p, err := c.profile(name, mode)
		if err != nil {
			return nil, err
		}
		if err := c.srv.SetProfile(name, p); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.mode[name] = mode
		c.mu.Unlock()
		lines = append(lines, name+": "+c.describe(name, mode))
	}
	return lines, nil
}

// profile returns the faults of mode for the named provider.
func (c *simControl) profile(name, mode string) (*simulate.Profile, error) {
	always := func(f simulate.Fault) *simulate.Profile { return simulate.Always(f) }
	switch mode {
	case modeHealthy:
		return nil, nil
	case modeBadDay:
		return c.day[name], nil
	case modeDry:
		if c.pool[name] == "free" {
			return always(simulate.Fault{Kind: simulate.DailyQuota}), nil
		}
		return always(simulate.Fault{Kind: simulate.NoCredits}), nil
	case modeRateLimited:
		return always(simulate.Fault{Kind: simulate.RateLimit, RetryAfter: 2 * time.Second}), nil
	case modeDown:
		return always(simulate.Fault{Kind: simulate.Unavailable}), nil
	case modeFlaky:
		return &simulate.Profile{Seed: c.seed, Rules: []simulate.Rule{{Chances: []simulate.Chance{
			{Fault: simulate.Fault{Kind: simulate.Unavailable}, P: 0.5}}}}}, nil
	}
	if slices.Contains(simulate.Kinds(), simulate.Kind(mode)) {
		return always(simulate.Fault{Kind: simulate.Kind(mode)}), nil
	}
	return nil, fmt.Errorf("unknown mode %q: want %s, or a fault kind served on every request (%s)",
		mode, strings.Join(modeNames(), ", "), kindNames())
}

// describe says what the named provider does in mode.
func (c *simControl) describe(name, mode string) string {
	switch mode {
	case modeBadDay:
		for _, d := range demoChain {
			if d.provider == name {
				return mode + ": " + d.bad
			}
		}
	case modeDry:
		if c.pool[name] == "free" {
			return mode + ": 429 tokens per day on every request (a wall)"
		}
		return mode + ": no credit left on every request (a wall)"
	}
	for _, m := range simModes {
		if m[0] == mode {
			return mode + ": " + m[1]
		}
	}
	return mode + ": on every request"
}

// modeNames are the named modes.
func modeNames() []string {
	out := make([]string, len(simModes))
	for i, m := range simModes {
		out[i] = m[0]
	}
	return out
}

// kindNames lists simulate's fault kinds but ok, comma-separated.
func kindNames() string {
	var out []string
	for _, k := range simulate.Kinds() {
		if k != simulate.OK {
			out = append(out, string(k))
		}
	}
	return strings.Join(out, ", ")
}

// count notes one request served to provider, failed unless ok, and
// returns the number served by every provider so far.
func (c *simControl) count(provider string, ok bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.served[provider]++
	if !ok {
		c.failed[provider]++
	}
	c.total++
	return c.total
}

// writeStatus writes each provider's pool, requests served and failed, and mode.
func (c *simControl) writeStatus(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "provider\tpool\tbase URL\trequests\tfailed\tmode")
	for _, name := range c.names {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", name, c.pool[name], c.srv.BaseURL(name),
			c.served[name], c.failed[name], c.describe(name, c.mode[name]))
	}
	tw.Flush()
}

// controlPrefix starts the paths of the control endpoint.
const controlPrefix = "/control"

// parseControlPath reads a control path: "/control" (or "/control/")
// names no provider, "/control/PROVIDER/MODE" a switch. ok is false for
// any other path under the prefix.
func parseControlPath(p string) (provider, mode string, ok bool) {
	rest, found := strings.CutPrefix(p, controlPrefix)
	if !found {
		return "", "", false
	}
	if rest == "" || rest == "/" {
		return "", "", true
	}
	rest, found = strings.CutPrefix(rest, "/")
	if !found {
		return "", "", false
	}
	provider, mode, found = strings.Cut(rest, "/")
	if !found || provider == "" || mode == "" || strings.Contains(mode, "/") {
		return "", "", false
	}
	return provider, mode, true
}

// handler serves the control endpoint under controlPrefix, and srv's
// providers everywhere else.
func (c *simControl) handler(log func(string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != controlPrefix && !strings.HasPrefix(r.URL.Path, controlPrefix+"/") {
			c.srv.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		provider, mode, ok := parseControlPath(r.URL.Path)
		switch {
		case !ok:
			http.Error(w, "unknown control URL "+r.URL.Path+": use GET /control, or POST /control/PROVIDER/MODE", http.StatusNotFound)
		case provider == "":
			if r.Method != http.MethodGet {
				w.Header().Set("Allow", http.MethodGet)
				http.Error(w, "GET /control shows the providers; POST /control/PROVIDER/MODE switches one", http.StatusMethodNotAllowed)
				return
			}
			c.writeStatus(w)
		case r.Method != http.MethodPost:
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "use POST to switch a provider: curl -X POST ...", http.StatusMethodNotAllowed)
		default:
			lines, err := c.set(provider, mode)
			switch {
			case errors.Is(err, errUnknownProvider):
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			case err != nil:
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, l := range lines {
				fmt.Fprintln(w, l)
				log("now " + l)
			}
		}
	})
}
