package router

import (
	"strings"

	"github.com/detourhq/detour/llm"
)

// contract reads what t can do with req before any send: a target of the
// request's own dialect gets it whole (llm.Raw); one of another dialect
// must carry each of its needs (llm.Carrier), or may drop the safe ones
// (llm.Request.Required). missing are the needs t cannot honour (the
// target is skipped); dropped the ones it goes without (the answer is
// then degraded and says so).
func contract(t *Target, req *llm.Request) (missing, dropped []string) {
	if len(req.Needs) == 0 || req.Raw != nil && req.Raw.Dialect == t.Dialect {
		return nil, nil
	}
	c, _ := t.Client.(llm.Carrier)
	for _, n := range req.Needs {
		switch {
		case c != nil && c.Carries(n):
		case req.Required(n):
			missing = append(missing, n)
		default:
			dropped = append(dropped, n)
		}
	}
	return missing, dropped
}

// contractReason is the skip reason of a target that cannot honour
// missing.
func contractReason(t *Target, missing []string) string {
	d := t.Dialect
	if d == "" {
		d = "its own"
	}
	return "cannot carry " + strings.Join(missing, ", ") + " (" + d + " dialect)"
}
