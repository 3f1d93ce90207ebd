package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	sim "github.com/detourhq/detour/simulate"
)

// collectorKey is the header the collector asks of each post: the
// commands' OTEL_EXPORTER_OTLP_HEADERS (in their Env, not the process's).
const collectorKey = "x-collector-key=k-0123"

// collector is an in-process OTLP/HTTP receiver keeping the span names.
func collector(t *testing.T) (url string, names func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Collector-Key") != "k-0123" {
			http.Error(w, "want the key of $OTEL_EXPORTER_OTLP_HEADERS", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "want an OTLP/HTTP protobuf post to /v1/traces", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					got = append(got, s.GetName())
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestAsk_SendsItsSpansBeforeItExits(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	url, names := collector(t)
	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
	vars["OTEL_EXPORTER_OTLP_HEADERS"] = collectorKey
	code, _, errOut := run(t, vars, "", "ask", "hello")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	got := names()
	slices.Sort(got)
	if want := []string{"chat default", "chat m", "chat m"}; !slices.Equal(got, want) {
		t.Errorf("spans %q, want %q: the request and its two attempts", got, want)
	}
}

func TestCheck_SaysWhetherRequestsAreTraced(t *testing.T) {
	_, vars := fixture(t)
	code, out, errOut := run(t, vars, "", "check")
	if code != ExitOK || !strings.Contains(out, "tracing: off (set telemetry.otlp or OTEL_EXPORTER_OTLP_ENDPOINT to export spans)\n") {
		t.Errorf("exit %d, output lacks the tracing line (off):\n%s%s", code, out, errOut)
	}

	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://collector.internal:4318"
	code, out, errOut = run(t, vars, "", "check")
	if code != ExitOK ||
		!strings.Contains(out, "tracing: OTLP/HTTP to http://collector.internal:4318/v1/traces (from $OTEL_EXPORTER_OTLP_ENDPOINT)\n") {
		t.Errorf("exit %d, output lacks the tracing line (on, from the environment):\n%s%s", code, out, errOut)
	}

	// The file's telemetry.otlp wins over the environment.
	appendFile(t, vars["DETOUR_CONFIG"], "telemetry:\n  otlp: https://otel.example.com/otlp\n")
	code, out, errOut = run(t, vars, "", "check", "--json")
	var rep checkReport
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	want := checkTracing{On: true, URL: "https://otel.example.com/otlp/v1/traces", From: "telemetry.otlp",
		Text: "OTLP/HTTP to https://otel.example.com/otlp/v1/traces (from telemetry.otlp)"}
	if rep.Tracing != want {
		t.Errorf("tracing %+v, want %+v", rep.Tracing, want)
	}
}

func TestCheck_RefusesAnEndpointThatIsNoURL(t *testing.T) {
	_, vars := fixture(t)
	vars["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "collector:4318"
	code, _, errOut := run(t, vars, "", "check")
	if code != ExitConfig || !strings.Contains(errOut, "$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		t.Errorf("exit %d, stderr %q: want %d naming the variable", code, errOut, ExitConfig)
	}
	if code, _, _ := run(t, vars, "", "ask", "hi"); code != ExitConfig {
		t.Errorf("ask: exit %d, want %d", code, ExitConfig)
	}
}

func TestServe_TracesFromTheFileAndFlushesOnStop(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	url, names := collector(t)
	appendFile(t, vars["DETOUR_CONFIG"], "telemetry:\n  otlp: "+url+"\n")
	vars["OTEL_EXPORTER_OTLP_HEADERS"] = collectorKey
	gatewaySection(t, vars)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServe(t, ctx, vars)
	req, _ := http.NewRequest(http.MethodPost, s.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	if c := s.stopped(t); c != ExitOK {
		t.Fatalf("exit %d: %s", c, s.errb.String())
	}
	if !strings.Contains(s.errb.String(), "detour serve: tracing: OTLP/HTTP to "+url+"/v1/traces (from telemetry.otlp)") {
		t.Errorf("stderr does not say where spans go:\n%s", s.errb.String())
	}
	got := names()
	slices.Sort(got)
	if want := []string{"chat default", "chat m", "chat m"}; !slices.Equal(got, want) {
		t.Errorf("spans %q, want %q, sent by the time serve exited", got, want)
	}
}
