package config

import (
	"testing"

	"github.com/detourhq/detour/router"
)

// The ceilings on what clients grow reach the gateway section with their
// units, take their defaults when left out, and cannot be turned off.
func TestParse_GatewayCeilings(t *testing.T) {
	c := mustParse(t, `gateway:
  idempotency_max_records: 500
  idempotency_max_bytes: 16MiB
  cache_max_answers: 50
  cache_max_bytes: 2MiB
  buffered_max_bytes: 128MiB
`)
	g := c.Gateway.WithDefaults()
	if g.IdempotencyMaxRecords != 500 || g.IdempotencyMaxBytes != 16<<20 || g.CacheMaxAnswers != 50 ||
		g.CacheMaxBytes != 2<<20 || g.BufferedMaxBytes != 128<<20 {
		t.Fatalf("ceilings %+v", g)
	}
	d := Gateway{}.WithDefaults()
	if d.IdempotencyMaxRecords != DefaultIdempotencyMaxRecords || d.IdempotencyMaxBytes != DefaultIdempotencyMaxBytes ||
		d.CacheMaxAnswers != router.DefaultKeptAnswers || d.CacheMaxBytes != router.DefaultKeptAnswerBytes ||
		d.BufferedMaxBytes != DefaultBufferedMaxBytes {
		t.Fatalf("defaults %+v", d)
	}
	wantProblems(t, "gateway:\n  idempotency_max_records: 0\n",
		`detour.yaml:2:28: gateway.idempotency_max_records: must be more than 0 (what clients send always has a ceiling); leave the field out for the default (10000)`)
	wantProblems(t, "gateway:\n  cache_max_answers: -3\n",
		`detour.yaml:2:22: gateway.cache_max_answers: must be more than 0 (what clients send always has a ceiling); leave the field out for the default (1000)`)
	wantProblems(t, "gateway:\n  buffered_max_bytes: lots\n",
		`detour.yaml:2:23: gateway.buffered_max_bytes: "lots" is not a size: write bytes, or a number and a unit (B, KB, KiB, MB, MiB, GB, GiB), like 8MiB`)
}
