package ledger

import (
	"github.com/detourhq/detour/internal/jsonw"
)

// appendLine appends r as a File writes it: the JSON that encoding/json's
// Encoder writes for r with HTML escaping off, and its newline. Written
// by hand because every request writes at least one: through reflection
// it cost several microseconds and two allocations a line.
// FuzzAppendLineMatchesEncoder holds it to encoding/json.
func appendLine(b []byte, r *Record) ([]byte, error) {
	b = append(b, `{"time":"`...)
	b = r.Time.UTC().AppendFormat(b, TimeLayout)
	b = append(b, `","request_id":`...)
	b = jsonw.String(b, r.RequestID)
	b = append(b, `,"route":`...)
	b = jsonw.String(b, r.Route)
	b = append(b, `,"provider":`...)
	b = jsonw.String(b, r.Provider)
	b = append(b, `,"model":`...)
	b = jsonw.String(b, r.Model)
	b = append(b, `,"hop":`...)
	b = jsonw.Int(b, r.Hop)
	b = append(b, `,"attempt":`...)
	b = jsonw.Int(b, r.Attempt)
	if r.Failover {
		b = append(b, `,"failover":true`...)
	} else {
		b = append(b, `,"failover":false`...)
	}
	b = append(b, `,"status":`...)
	b = jsonw.String(b, r.Status)
	b = append(b, `,"kind":`...)
	b = jsonw.String(b, r.Kind)
	if r.Scope != "" {
		b = append(b, `,"scope":`...)
		b = jsonw.String(b, r.Scope)
	}
	b = append(b, `,"action":`...)
	b = jsonw.String(b, r.Action)
	if r.Phase != "" {
		b = append(b, `,"phase":`...)
		b = jsonw.String(b, r.Phase)
	}
	b = append(b, `,"tokens_in":`...)
	b = jsonw.Int(b, r.TokensIn)
	b = append(b, `,"tokens_out":`...)
	b = jsonw.Int(b, r.TokensOut)
	if r.TokensCacheRead != 0 {
		b = append(b, `,"tokens_cache_read":`...)
		b = jsonw.Int(b, r.TokensCacheRead)
	}
	if r.TokensCacheWrite != 0 {
		b = append(b, `,"tokens_cache_write":`...)
		b = jsonw.Int(b, r.TokensCacheWrite)
	}
	// A float NaN or infinite is no JSON: the line fails, as encoding/json's.
	var err error
	float := func(key string, v float64) {
		if err == nil {
			b = append(b, key...)
			b, err = jsonw.Float(b, v)
		}
	}
	float(`,"seconds":`, r.Seconds)
	float(`,"wait_seconds":`, r.WaitSeconds)
	if r.RetryAfterS != 0 {
		float(`,"retry_after_s":`, r.RetryAfterS)
	}
	float(`,"cost":`, r.Cost)
	if err != nil {
		return b, err
	}
	b = append(b, `,"reason":`...)
	b = jsonw.String(b, r.Reason)
	if r.ProviderRequestID != "" {
		b = append(b, `,"upstream_request_id":`...)
		b = jsonw.String(b, r.ProviderRequestID)
	}
	if r.Pick != "" {
		b = append(b, `,"pick":`...)
		b = jsonw.String(b, r.Pick)
	}
	if len(r.Dropped) > 0 {
		b = append(b, `,"dropped":`...)
		b = jsonw.Strings(b, r.Dropped)
	}
	if r.Degraded {
		b = append(b, `,"degraded":true`...)
	}
	return append(b, "}\n"...), nil
}
