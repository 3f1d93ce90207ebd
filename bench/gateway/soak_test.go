package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The slope is the least-squares fit in KiB per minute, whatever the
// sampling; a flat series swinging 4 MiB every sample (the garbage
// collector's cycles) over 5 minutes fits well under the soak's limit.
func TestSlopeKiBPerMin(t *testing.T) {
	var rising, noisy []rssSample
	for i := range 60 {
		at := time.Duration(i) * 5 * time.Second
		rising = append(rising, rssSample{at: at, rss: 50<<20 + int64(at.Minutes()*300*1024)})
		noisy = append(noisy, rssSample{at: at, rss: 50<<20 + int64(i%2)*4<<20})
	}
	if got := slopeKiBPerMin(rising); math.Abs(got-300) > 1 {
		t.Errorf("a series rising 300 KiB/min fits %.1f", got)
	}
	if got := slopeKiBPerMin(noisy); math.Abs(got) > 64 {
		t.Errorf("a flat series swinging 4 MiB fits %.1f KiB/min", got)
	}
	if got := slopeKiBPerMin(rising[:1]); got != 0 {
		t.Errorf("one sample fits %.1f", got)
	}
}

// The soak fails on any failed request and on a slope past the limit,
// and passes otherwise.
func TestSoakReportVerdict(t *testing.T) {
	o := soakOptions{duration: time.Minute, every: time.Second, maxSlope: 256}
	flat := make([]rssSample, 20)
	rising := make([]rssSample, 20)
	for i := range flat {
		at := time.Duration(i) * 3 * time.Second
		flat[i] = rssSample{at: at, rss: 40 << 20}
		rising[i] = rssSample{at: at, rss: 40<<20 + int64(i)<<20}
	}
	if r := soakReport(o, flat, &soakRun{}, nil); r.err != nil || !strings.Contains(r.text, "PASS") {
		t.Errorf("a flat soak without errors: %v\n%s", r.err, r.text)
	}
	if r := soakReport(o, rising, &soakRun{}, nil); r.err == nil || !strings.Contains(r.err.Error(), "KiB/min") {
		t.Errorf("a soak growing 20 MiB/min: %v", r.err)
	}
	run := &soakRun{}
	run.fail("cache", "status 503")
	if r := soakReport(o, flat, run, nil); r.err == nil || !strings.Contains(r.err.Error(), "cache: status 503") {
		t.Errorf("a soak with a failed request: %v", r.err)
	}
}
