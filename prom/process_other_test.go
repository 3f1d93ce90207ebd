//go:build !linux

package prom_test

import (
	"testing"

	"github.com/detourhq/detour/prom"
)

func TestRegisterProcess_NothingWithoutProc(t *testing.T) {
	reg := prom.NewRegistry()
	reg.RegisterProcess()
	if got := text(t, reg); got != "" {
		t.Errorf("without /proc: %q, want nothing", got)
	}
}
