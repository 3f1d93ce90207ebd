package config

import (
	"fmt"
	"os"
	"testing"
	"time"
)

var scratchN int

func FuzzParseOnlyScratch(f *testing.F) {
	if data, err := os.ReadFile("../examples/detour.yaml"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		scratchN++
		name := fmt.Sprintf("/tmp/fz/%d-%d", os.Getpid(), scratchN)
		os.WriteFile(name, data, 0o644)
		start := time.Now()
		Parse("f.yaml", data)
		os.WriteFile(name+".dur", []byte(time.Since(start).String()), 0o644)
	})
}
