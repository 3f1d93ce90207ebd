package report

import (
	"math"
	"math/bits"
)

// distinctP is the precision of a distinct counter: 2^17 one-byte
// registers (128 KiB), a relative standard error of 1.04/sqrt(2^17) =
// 0.29%.
const distinctP = 17

// DistinctErrorPct is how far an estimated count of distinct keys (the
// keys an "other" row folds, when they were too many to hold) may be from
// the true count, in percent: 3.4 standard errors of the estimate, so that
// all but about 1 in 1,500 estimates fall within it.
const DistinctErrorPct = 1

// distinct estimates how many distinct hashes it was given, in fixed
// memory: a HyperLogLog sketch (Flajolet, Fusy, Gandouet and Meunier,
// 2007) of 64-bit hashes, read with Ertl's improved raw estimator ("New
// cardinality estimation algorithms for HyperLogLog sketches", 2017),
// which keeps the same error from a few keys to billions, without the
// bias of the original estimator between 2.5 and 5 times the registers.
// Its zero value is ready to use and allocates at the first add.
type distinct struct {
	reg []uint8
}

// distinctQ is the most leading zeros a register can record.
const distinctQ = 64 - distinctP

// add counts h, a well-mixed 64-bit hash.
func (d *distinct) add(h uint64) {
	if d.reg == nil {
		d.reg = make([]uint8, 1<<distinctP)
	}
	i := h >> distinctQ
	// The rank: 1 + the leading zeros of the other bits, at most
	// distinctQ+1 (the sentinel bit).
	rank := uint8(bits.LeadingZeros64(h<<distinctP|1<<(distinctP-1)) + 1)
	if rank > d.reg[i] {
		d.reg[i] = rank
	}
}

// estimate returns the estimated number of distinct hashes added
// (Ertl 2017, algorithm 6).
func (d *distinct) estimate() int {
	if d.reg == nil {
		return 0
	}
	var c [distinctQ + 2]int // registers by value
	for _, r := range d.reg {
		c[r]++
	}
	m := float64(len(d.reg))
	z := m * ertlTau(1-float64(c[distinctQ+1])/m)
	for k := distinctQ; k >= 1; k-- {
		z = 0.5 * (z + float64(c[k]))
	}
	z += m * ertlSigma(float64(c[0])/m)
	return int(math.Round(m * m / (2 * math.Ln2) / z))
}

func ertlSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

func ertlTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

// hashString hashes s with FNV-1a and mixes the result (the finalizer of
// SplitMix64), so that its top bits and leading zeros are uniform, as a
// HyperLogLog needs. The same string always gives the same hash: a report
// estimates the same count on every run.
func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// fnvOffset is FNV-1a's offset basis.
const fnvOffset = 14695981039346656037

// mix64 is SplitMix64's finalizer.
func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func hashKey(s string) uint64 { return mix64(hashString(fnvOffset, s)) }

func hashTarget(k targetKey) uint64 {
	// A 0xff between the two, a byte no decoded string holds (invalid
	// UTF-8 is decoded as U+FFFD), so ("a/", "b") and ("a", "/b") differ.
	h := (hashString(fnvOffset, k.provider) ^ 0xff) * 1099511628211
	return mix64(hashString(h, k.model))
}
