package prom_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/detourhq/detour/prom"
)

func TestRegisterProcess_PlausibleValues(t *testing.T) {
	reg := prom.NewRegistry()
	reg.RegisterProcess()
	mfs := parse(t, reg)
	for name, want := range map[string]struct {
		typ  dto.MetricType
		help string
	}{
		"process_cpu_seconds_total":     {dto.MetricType_COUNTER, "Total user and system CPU time spent in seconds."},
		"process_open_fds":              {dto.MetricType_GAUGE, "Number of open file descriptors."},
		"process_max_fds":               {dto.MetricType_GAUGE, "Maximum number of open file descriptors."},
		"process_virtual_memory_bytes":  {dto.MetricType_GAUGE, "Virtual memory size in bytes."},
		"process_resident_memory_bytes": {dto.MetricType_GAUGE, "Resident memory size in bytes."},
		"process_start_time_seconds":    {dto.MetricType_GAUGE, "Start time of the process since unix epoch in seconds."},
	} {
		if mf := mfs[name]; mf == nil || mf.GetType() != want.typ || mf.GetHelp() != want.help {
			t.Errorf("%s: %v, want client_golang's %v %q", name, mf, want.typ, want.help)
		}
	}
	rss, vsize := value(t, mfs, "process_resident_memory_bytes"), value(t, mfs, "process_virtual_memory_bytes")
	if rss < 1<<20 || vsize < rss {
		t.Errorf("resident %v, virtual %v: want at least 1 MiB resident, no more than virtual", rss, vsize)
	}
	start := time.Unix(int64(value(t, mfs, "process_start_time_seconds")), 0)
	if time.Since(start) > 24*time.Hour || time.Until(start) > 2*time.Second {
		t.Errorf("started at %v, now is %v", start, time.Now())
	}
	open, limit := value(t, mfs, "process_open_fds"), value(t, mfs, "process_max_fds")
	if open < 3 || limit < open {
		t.Errorf("open fds %v, max %v", open, limit)
	}

	// More files open, more CPU spent: the next scrape sees both.
	var files []*os.File
	for range 5 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cpu := value(t, mfs, "process_cpu_seconds_total")
	spin(t, 100*time.Millisecond)
	mfs = parse(t, reg)
	if got := value(t, mfs, "process_open_fds"); got < open+5 {
		t.Errorf("open fds %v after opening 5 more than %v", got, open)
	}
	if got := value(t, mfs, "process_cpu_seconds_total"); got < cpu+0.05 {
		t.Errorf("CPU seconds %v after spending 100ms of CPU from %v", got, cpu)
	}
}

// spin spends at least d of CPU time, as the kernel counts it.
func spin(t *testing.T, d time.Duration) {
	t.Helper()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for end := cpu() + d; cpu() < end; {
	}
}
