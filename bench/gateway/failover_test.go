package main

import (
	"testing"
	"time"
)

func TestCountArrivals(t *testing.T) {
	ms := func(xs ...float64) []int64 {
		out := make([]int64, len(xs))
		for i, x := range xs {
			out[i] = int64(1e12 + x*float64(time.Millisecond))
		}
		return out
	}
	const park = 200 * time.Millisecond
	for _, tc := range []struct {
		name     string
		arrivals []int64
		want     parkCount
	}{
		{"none", nil, parkCount{}},
		{"only the priming request", ms(0), parkCount{total: 1}},
		{"one probe per park", ms(0, 201, 405, 620),
			parkCount{total: 4, probes: 3, minGap: 201 * time.Millisecond}},
		{"unsorted input", ms(405, 0, 201),
			parkCount{total: 3, probes: 2, minGap: 201 * time.Millisecond}},
		{"timer slack under a millisecond is a probe", ms(0, 199.5),
			parkCount{total: 2, probes: 1, minGap: 199500 * time.Microsecond}},
		{"a request while parked", ms(0, 205, 300, 505),
			parkCount{total: 4, probes: 2, between: 1, minGap: 95 * time.Millisecond}},
		{"two probes at once", ms(0, 205, 205.5, 410),
			parkCount{total: 4, probes: 2, between: 1, minGap: 500 * time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := countArrivals(tc.arrivals, park)
			if got != tc.want {
				t.Errorf("countArrivals = %+v, want %+v", got, tc.want)
			}
		})
	}
}
