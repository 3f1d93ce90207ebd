package prom

// procStats are the figures of the process the process_ families show.
type procStats struct {
	cpuSeconds float64 // user and system CPU time
	rss, vsize float64 // bytes
	// openFDs, maxFDs and startUnix (seconds since the epoch) are known
	// when their has field is true.
	openFDs, maxFDs, startUnix  float64
	hasFDs, hasMaxFDs, hasStart bool
}

// processFamilies writes the process_ families, read once per scrape.
type processFamilies struct {
	cpu, maxFDs, openFDs, rss, start, vsize *desc
	// read returns the process's figures, false when it cannot.
	read func() (procStats, bool)
}

// RegisterProcess registers the process metrics client_golang's process
// collector exports, under its names, help texts and types:
//
//	process_cpu_seconds_total      counter: user and system CPU time
//	process_max_fds                gauge: the soft limit on open files
//	process_open_fds               gauge
//	process_resident_memory_bytes  gauge
//	process_start_time_seconds     gauge: since the Unix epoch
//	process_virtual_memory_bytes   gauge
//
// Each scrape reads them afresh from /proc/self. Where there is no /proc
// (any system but Linux) it registers nothing, and a scrape where /proc
// cannot be read leaves them out. It panics if one of the names is taken
// (RegisterProcess called twice on Linux, say).
func (r *Registry) RegisterProcess() {
	if !procSupported {
		return
	}
	p := &processFamilies{
		cpu:     newDesc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", nil, ""),
		maxFDs:  newDesc("process_max_fds", "Maximum number of open file descriptors.", "gauge", nil, ""),
		openFDs: newDesc("process_open_fds", "Number of open file descriptors.", "gauge", nil, ""),
		rss:     newDesc("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", nil, ""),
		start:   newDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge", nil, ""),
		vsize:   newDesc("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", nil, ""),
		read:    readProc,
	}
	r.registerGroup(p, namesOf(p.cpu), namesOf(p.maxFDs), namesOf(p.openFDs), namesOf(p.rss), namesOf(p.start), namesOf(p.vsize))
}

// appendTo reads the process's figures and appends every family known,
// sorted by name as client_golang writes them, or nothing if they cannot
// be read.
func (p *processFamilies) appendTo(b []byte) []byte {
	st, ok := p.read()
	if !ok {
		return b
	}
	b = appendSingle(b, p.cpu, st.cpuSeconds)
	if st.hasMaxFDs {
		b = appendSingle(b, p.maxFDs, st.maxFDs)
	}
	if st.hasFDs {
		b = appendSingle(b, p.openFDs, st.openFDs)
	}
	b = appendSingle(b, p.rss, st.rss)
	if st.hasStart {
		b = appendSingle(b, p.start, st.startUnix)
	}
	return appendSingle(b, p.vsize, st.vsize)
}
