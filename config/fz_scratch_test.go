package config

import "testing"

func FuzzTrivialScratch(f *testing.F) {
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, data []byte) { _ = len(data) })
}
