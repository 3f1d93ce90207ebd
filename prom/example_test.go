package prom_test

import (
	"os"

	"github.com/detourhq/detour/prom"
)

func Example() {
	reg := prom.NewRegistry()
	requests := reg.Counter("app_requests_total", "Requests served, by route and code.", "route", "code")
	latency := reg.Histogram("app_request_seconds", "Request duration.", []float64{.1, 1}, "route")
	queues := map[string]int{"batch": 3}
	reg.GaugeFunc("app_queue_length", "Jobs waiting, by queue.", []string{"queue"},
		func(emit func(v float64, labelValues ...string)) {
			for name, n := range queues {
				emit(float64(n), name)
			}
		})

	requests.With("/v1/chat", "200").Inc()
	latency.With("/v1/chat").Observe(0.042)

	reg.WriteTo(os.Stdout) // or serve reg.Handler() at /metrics
	// Output:
	// # HELP app_requests_total Requests served, by route and code.
	// # TYPE app_requests_total counter
	// app_requests_total{code="200",route="/v1/chat"} 1
	// # HELP app_request_seconds Request duration.
	// # TYPE app_request_seconds histogram
	// app_request_seconds_bucket{route="/v1/chat",le="0.1"} 1
	// app_request_seconds_bucket{route="/v1/chat",le="1"} 1
	// app_request_seconds_bucket{route="/v1/chat",le="+Inf"} 1
	// app_request_seconds_sum{route="/v1/chat"} 0.042
	// app_request_seconds_count{route="/v1/chat"} 1
	// # HELP app_queue_length Jobs waiting, by queue.
	// # TYPE app_queue_length gauge
	// app_queue_length{queue="batch"} 3
}
