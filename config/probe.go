package config

import (
	"time"

	"github.com/goccy/go-yaml/ast"
)

// probeFields are the fields of the probe: section.
var probeFields = []string{"every", "timeout", "generate_every"}

// probeMethods are the words of a route's probe: how `detour probe` may
// check its targets.
var probeMethods = []string{"metadata", "generate"}

// The defaults and bounds of the probe: section.
const (
	// DefaultProbeTimeout bounds one check.
	DefaultProbeTimeout = 10 * time.Second
	// DefaultGenerateEvery is the least time between two one-token
	// generations probing one target.
	DefaultGenerateEvery = time.Hour
	// MinProbeEvery is the shortest probe.every: probes are off the billing
	// path, not free of the provider's rate limits.
	MinProbeEvery = 30 * time.Second
	// MinGenerateEvery is the shortest probe.generate_every.
	MinGenerateEvery = 10 * time.Minute
)

// Probe is the probe: section: how `detour probe --watch` and `detour
// serve` check parked targets off the billing path. Its zero value means
// serve runs no probes and the defaults below.
type Probe struct {
	// Every is how often `detour serve` probes in the background (and
	// `detour probe --watch` without a duration); 0: serve does not.
	Every time.Duration
	// Timeout bounds one check; 0 means DefaultProbeTimeout.
	Timeout time.Duration
	// GenerateEvery is the least time between two one-token generations
	// probing one target (routes with probe: generate); 0 means
	// DefaultGenerateEvery.
	GenerateEvery time.Duration
}

// WithDefaults returns p with its zero Timeout and GenerateEvery filled in.
func (p Probe) WithDefaults() Probe {
	if p.Timeout <= 0 {
		p.Timeout = DefaultProbeTimeout
	}
	if p.GenerateEvery <= 0 {
		p.GenerateEvery = DefaultGenerateEvery
	}
	return p
}

// probe decodes the probe: section.
func (d *decoder) probe(n ast.Node) {
	const path = "probe"
	pairs, _ := d.mapping(n, path, "field")
	var p Probe
	for _, f := range pairs {
		fp := child(path, f.key)
		d.mark(fp, f)
		switch f.key {
		case "every":
			p.Every, _ = d.duration(f.val, fp)
		case "timeout":
			p.Timeout, _ = d.duration(f.val, fp)
		case "generate_every":
			p.GenerateEvery, _ = d.duration(f.val, fp)
		default:
			d.unknown(f, path, probeFields)
		}
	}
	d.c.Probe = p
}

// probe checks the probe: section's bounds.
func (v *validator) probe(p Probe) {
	if p.Every < 0 || p.Every > 0 && p.Every < MinProbeEvery {
		v.fail("probe.every", false, nil, "%s is too often: probes are free of cost but not of the provider's rate limits; "+
			"write %s or more, or 0 for no background probes", p.Every, MinProbeEvery)
	}
	if p.Timeout < 0 || p.Timeout > 2*time.Minute {
		v.fail("probe.timeout", false, nil, "%s is not a wait for one model list: write a duration up to 2m (default %s)",
			p.Timeout, DefaultProbeTimeout)
	}
	if p.GenerateEvery < 0 || p.GenerateEvery > 0 && p.GenerateEvery < MinGenerateEvery {
		v.fail("probe.generate_every", false, nil, "%s is too often: a generation probe is billed; write %s or more (default %s)",
			p.GenerateEvery, MinGenerateEvery, DefaultGenerateEvery)
	}
}
