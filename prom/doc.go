// Package prom is a small Prometheus client: counters, histograms and gauges
// on a registry, written in the text exposition format 0.0.4.
//
// It covers what detour exports and no more: no global registry, no
// summaries of its own (SummaryFunc writes one computed elsewhere), no
// protobuf or OpenMetrics output. RegisterGo and RegisterProcess add the Go
// runtime and process metrics under client_golang's names, read at each
// scrape. Every type is safe for concurrent use; updating a series is
// lock-free, and so is finding one, without allocating for up to three
// labels.
//
//	reg := prom.NewRegistry()
//	requests := reg.Counter("app_requests_total", "Requests served, by route and code.", "route", "code")
//	latency := reg.Histogram("app_request_seconds", "Request duration.", []float64{.1, .5, 1}, "route")
//	inflight := reg.Gauge("app_inflight_requests", "Requests being served now.")
//	reg.RegisterGo()      // go_goroutines, go_memstats_*, go_gc_duration_seconds, ...
//	reg.RegisterProcess() // process_resident_memory_bytes, process_cpu_seconds_total, ... (Linux)
//	reg.GaugeFunc("app_queue_length", "Jobs waiting, by queue.", []string{"queue"},
//		func(emit func(v float64, labelValues ...string)) {
//			for name, q := range queues {
//				emit(float64(q.Len()), name)
//			}
//		})
//
//	inflight.Inc()
//	requests.With("/v1/chat", "200").Inc()
//	latency.With("/v1/chat").Observe(0.042)
//	inflight.Dec()
//
//	http.Handle("/metrics", reg.Handler())
package prom
