package prom

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"
)

// goMemstat is a go_memstats_ family read from runtime/metrics: the sum of
// the samples named in from (none: the time of the last GC, which
// debug.ReadGCStats tells).
type goMemstat struct {
	d    *desc
	from []string
}

// goMemstats are the go_memstats_ families exported, with the names, help
// texts (the typo "total:byte" included) and types of client_golang's Go
// collector (prometheus/go_collector.go, goRuntimeMemStats), read from the
// runtime/metrics samples its help texts name, as client_golang does since
// Go 1.17.
func goMemstats() []goMemstat {
	m := func(name, help, typ string, from ...string) goMemstat {
		return goMemstat{d: newDesc(name, help, typ, nil, ""), from: from}
	}
	const objects, unused = "/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"
	return []goMemstat{
		m("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.",
			"gauge", objects),
		m("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. "+
			"Equals to /gc/heap/allocs:bytes.", "counter", "/gc/heap/allocs:bytes"),
		m("go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.",
			"gauge", "/memory/classes/metadata/other:bytes"),
		m("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. "+
			"Equals to /memory/classes/heap/objects:bytes.", "gauge", objects),
		m("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + "+
			"/memory/classes/heap/unused:bytes", "gauge", objects, unused),
		m("go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.",
			"gauge", "/gc/heap/objects:objects"),
		m("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", "gauge"),
		m("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.",
			"gauge", "/gc/heap/goal:bytes"),
		m("go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.",
			"gauge", "/memory/classes/total:bytes"),
	}
}

// goFamilies writes the Go runtime's metrics, read once per scrape.
type goFamilies struct {
	gcDuration, goroutines, info, threads *desc
	memstats                              []goMemstat // sorted by name
	samples                               []string    // the runtime/metrics names memstats read, each once
}

// RegisterGo registers the Go runtime's metrics, named, described and
// typed as client_golang's Go collector names them, so that existing
// dashboards and alerts work unchanged:
//
//	go_gc_duration_seconds            summary: stop-the-world GC pauses (quantiles 0, 0.25, 0.5, 0.75, 1)
//	go_goroutines, go_threads         gauges
//	go_info{version}                  gauge, 1
//	go_memstats_last_gc_time_seconds  gauge
//	go_memstats_alloc_bytes, _heap_alloc_bytes, _heap_inuse_bytes,
//	  _heap_objects, _sys_bytes, _gc_sys_bytes, _next_gc_bytes  gauges
//	go_memstats_alloc_bytes_total     counter
//
// Each scrape reads them afresh, without stopping the world: the memory
// figures come from runtime/metrics, the pauses from debug.ReadGCStats. It
// panics if one of the names is taken (RegisterGo called twice, say).
func (r *Registry) RegisterGo() {
	g := &goFamilies{
		gcDuration: newDesc("go_gc_duration_seconds",
			"A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", "summary", nil, "quantile"),
		goroutines: newDesc("go_goroutines", "Number of goroutines that currently exist.", "gauge", nil, ""),
		info:       newDesc("go_info", "Information about the Go environment.", "gauge", []string{"version"}, ""),
		threads:    newDesc("go_threads", "Number of OS threads created.", "gauge", nil, ""),
		memstats:   goMemstats(),
	}
	all := []names{namesOf(g.gcDuration), namesOf(g.goroutines), namesOf(g.info), namesOf(g.threads)}
	for _, m := range g.memstats {
		all = append(all, namesOf(m.d))
		for _, name := range m.from {
			if !slices.Contains(g.samples, name) {
				g.samples = append(g.samples, name)
			}
		}
	}
	r.registerGroup(g, all...)
}

// appendTo reads the runtime's figures and appends every family, sorted
// by name as client_golang writes them.
func (g *goFamilies) appendTo(b []byte) []byte {
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	pauses := Summary{Sum: gc.PauseTotal.Seconds(), Count: uint64(gc.NumGC)}
	for i, p := range gc.PauseQuantiles {
		pauses.Quantiles = append(pauses.Quantiles, Quantile{Q: float64(i) / float64(len(gc.PauseQuantiles)-1), V: p.Seconds()})
	}
	b = g.gcDuration.appendHeader(b)
	b = g.gcDuration.appendSummary(b, nil, pauses)
	b = appendSingle(b, g.goroutines, float64(runtime.NumGoroutine()))
	b = g.info.appendHeader(b)
	b = g.info.appendName(b, "", []string{runtime.Version()}, "")
	b = append(b, "1\n"...)

	read := make([]metrics.Sample, len(g.samples))
	for i, name := range g.samples {
		read[i].Name = name
	}
	metrics.Read(read)
	for _, m := range g.memstats {
		v, ok := float64(gc.LastGC.UnixNano())/1e9, true
		if m.from != nil {
			v, ok = sumSamples(read, m.from)
		}
		if ok {
			b = appendSingle(b, m.d, v)
		}
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	return appendSingle(b, g.threads, float64(threads))
}

// sumSamples returns the sum of the samples named in names, and false if
// one is not a number (a name this Go does not know).
func sumSamples(read []metrics.Sample, names []string) (float64, bool) {
	sum := 0.0
	for _, name := range names {
		i := slices.IndexFunc(read, func(s metrics.Sample) bool { return s.Name == name })
		if i < 0 {
			return 0, false
		}
		switch v := read[i].Value; v.Kind() {
		case metrics.KindUint64:
			sum += float64(v.Uint64())
		case metrics.KindFloat64:
			sum += v.Float64()
		default:
			return 0, false
		}
	}
	return sum, true
}

// appendSingle appends the family of d, without labels, with its one
// sample at v.
func appendSingle(b []byte, d *desc, v float64) []byte {
	b = d.appendHeader(b)
	b = d.appendName(b, "", nil, "")
	b = appendFloat(b, v)
	return append(b, '\n')
}
