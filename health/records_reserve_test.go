package health_test

import (
	"testing"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/recordstest"
)

// The memory store reserves as every store must: atomically, under a
// race of reservers.
func TestMemoryRecords_Reserve(t *testing.T) {
	m := &health.MemoryRecords{}
	recordstest.Reserve(t, m, m)
}
