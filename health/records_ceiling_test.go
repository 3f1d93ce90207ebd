package health_test

import (
	"testing"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/recordstest"
)

// The memory store keeps the ceilings every store must keep.
func TestMemoryRecords_Ceilings(t *testing.T) {
	m := &health.MemoryRecords{}
	recordstest.Ceilings(t, m, m)
}
