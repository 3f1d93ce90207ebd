package detour_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/detour"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/simulate"
)

// startSim starts ps on loopback, closed when the test ends.
func startSim(t *testing.T, ps ...simulate.Provider) *simulate.Server {
	t.Helper()
	sim, err := simulate.Start(ps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

// fixture starts the providers free and paid (each with its Latency from
// lat, when set) and a Client on the config of simulated, with opts after
// WithGetenv(keys).
func fixture(t *testing.T, lat simulate.Latency, opts ...detour.Option) (*simulate.Server, *detour.Client) {
	t.Helper()
	sim := startSim(t, simulate.Provider{Name: "free", Latency: lat}, simulate.Provider{Name: "paid", Latency: lat})
	cfg, err := config.Parse("detour.yaml", []byte(yamlFor(sim)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := detour.New(cfg, append([]detour.Option{detour.WithGetenv(keys)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return sim, c
}

// hello is a one-message request.
func hello(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// inFlight is an http.RoundTripper that counts the requests it carries at
// once, and the most it has seen.
type inFlight struct {
	mu       sync.Mutex // guards now and peak
	now      int
	peak     int
	delegate http.RoundTripper
}

func (f *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.now++
	f.peak = max(f.peak, f.now)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	}()
	return f.delegate.RoundTrip(r)
}

// Peak returns the most requests seen in flight at once.
func (f *inFlight) Peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}
