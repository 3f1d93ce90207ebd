package prom_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/detourhq/detour/prom"
)

// value returns the value of mf's only series, whatever its type.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	mf := mfs[name]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s: %v, want one series", name, mf)
	}
	m := mf.GetMetric()[0]
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is a %v", name, mf.GetType())
	return 0
}

// clientGolang are the families client_golang's Go collector exports that
// RegisterGo exports too, with their help text and type there.
var clientGolang = map[string]struct {
	typ  dto.MetricType
	help string
}{
	"go_gc_duration_seconds": {dto.MetricType_SUMMARY, "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."},
	"go_goroutines":          {dto.MetricType_GAUGE, "Number of goroutines that currently exist."},
	"go_threads":             {dto.MetricType_GAUGE, "Number of OS threads created."},
	"go_info":                {dto.MetricType_GAUGE, "Information about the Go environment."},
	"go_memstats_alloc_bytes": {dto.MetricType_GAUGE,
		"Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes."},
	"go_memstats_alloc_bytes_total": {dto.MetricType_COUNTER,
		"Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes."},
	"go_memstats_heap_alloc_bytes": {dto.MetricType_GAUGE,
		"Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes."},
	"go_memstats_heap_inuse_bytes": {dto.MetricType_GAUGE,
		"Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes"},
	"go_memstats_heap_objects": {dto.MetricType_GAUGE, "Number of currently allocated objects. Equals to /gc/heap/objects:objects."},
	"go_memstats_sys_bytes":    {dto.MetricType_GAUGE, "Number of bytes obtained from system. Equals to /memory/classes/total:byte."},
	"go_memstats_gc_sys_bytes": {dto.MetricType_GAUGE,
		"Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes."},
	"go_memstats_next_gc_bytes": {dto.MetricType_GAUGE,
		"Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes."},
	"go_memstats_last_gc_time_seconds": {dto.MetricType_GAUGE, "Number of seconds since 1970 of last garbage collection."},
}

func TestRegisterGo_ClientGolangNamesHelpTypesAndPlausibleValues(t *testing.T) {
	reg := prom.NewRegistry()
	reg.RegisterGo()
	runtime.GC()
	keep := make([][]byte, 1000) // live objects the heap figures must count
	for i := range keep {
		keep[i] = make([]byte, 1024)
	}
	mfs := parse(t, reg)
	runtime.KeepAlive(keep)
	for name, want := range clientGolang {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("%s is missing", name)
			continue
		}
		if mf.GetType() != want.typ || mf.GetHelp() != want.help {
			t.Errorf("%s: %v %q, want client_golang's %v %q", name, mf.GetType(), mf.GetHelp(), want.typ, want.help)
		}
	}
	if len(mfs) != len(clientGolang) {
		t.Errorf("%d families, want %d", len(mfs), len(clientGolang))
	}
	info := mfs["go_info"].GetMetric()[0]
	if v := labels(info)["version"]; v != runtime.Version() || info.GetGauge().GetValue() != 1 {
		t.Errorf("go_info{version=%q} %v, want version %q at 1", v, info.GetGauge().GetValue(), runtime.Version())
	}
	alloc, heapAlloc := value(t, mfs, "go_memstats_alloc_bytes"), value(t, mfs, "go_memstats_heap_alloc_bytes")
	inuse, sys := value(t, mfs, "go_memstats_heap_inuse_bytes"), value(t, mfs, "go_memstats_sys_bytes")
	switch {
	case alloc < 1<<20 || heapAlloc != alloc:
		t.Errorf("alloc %v, heap alloc %v: want the same, at least the 1 MiB kept", alloc, heapAlloc)
	case inuse < alloc || sys < inuse:
		t.Errorf("heap alloc %v <= heap in use %v <= sys %v does not hold", alloc, inuse, sys)
	case value(t, mfs, "go_memstats_alloc_bytes_total") < alloc:
		t.Error("fewer bytes allocated in all than live")
	case value(t, mfs, "go_memstats_heap_objects") < 1000:
		t.Errorf("heap objects %v, want at least the 1000 kept", value(t, mfs, "go_memstats_heap_objects"))
	case value(t, mfs, "go_memstats_gc_sys_bytes") <= 0 || value(t, mfs, "go_memstats_next_gc_bytes") <= 0:
		t.Error("GC figures at 0")
	case value(t, mfs, "go_goroutines") < 2: // the test's and its runner's
		t.Errorf("go_goroutines %v", value(t, mfs, "go_goroutines"))
	case value(t, mfs, "go_threads") < 1:
		t.Errorf("go_threads %v", value(t, mfs, "go_threads"))
	}
	if last := time.Unix(0, int64(value(t, mfs, "go_memstats_last_gc_time_seconds")*1e9)); time.Since(last) > time.Minute || time.Until(last) > time.Second {
		t.Errorf("last GC at %v, want the runtime.GC() of a moment ago", last)
	}
	gc := mfs["go_gc_duration_seconds"].GetMetric()[0].GetSummary()
	var qs, vs []float64
	for _, q := range gc.GetQuantile() {
		qs, vs = append(qs, q.GetQuantile()), append(vs, q.GetValue())
	}
	if !slices.Equal(qs, []float64{0, 0.25, 0.5, 0.75, 1}) || !slices.IsSorted(vs) || vs[4] <= 0 {
		t.Errorf("GC pause quantiles %v = %v: want 0, .25, .5, .75, 1, ascending, a longest pause above 0", qs, vs)
	}
	if gc.GetSampleCount() < 1 || gc.GetSampleSum() < vs[4] {
		t.Errorf("GC pauses: %d, %vs in all, want at least the one of runtime.GC()", gc.GetSampleCount(), gc.GetSampleSum())
	}
}

func TestRegisterGo_ReadsAtEachScrape(t *testing.T) {
	reg := prom.NewRegistry()
	reg.RegisterGo()
	before := value(t, parse(t, reg), "go_goroutines")
	stop := make(chan struct{})
	for range 50 {
		go func() { <-stop }()
	}
	after := value(t, parse(t, reg), "go_goroutines")
	close(stop)
	// Other goroutines (a finished test's, the runtime's) may end between
	// the two scrapes: a few less than 50 more still says the count is
	// read at each scrape, where a stale one would not move at all.
	if after < before+45 {
		t.Errorf("go_goroutines %v, then %v after starting 50", before, after)
	}
}
