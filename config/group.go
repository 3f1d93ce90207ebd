package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/detourhq/detour/router"
)

// ChainGroup is a group of equals in a route's chain (router.Group): its
// members are Chain[Start:End], written in the file as one chain entry
//
//   - group: [groq/llama-3.3-70b-versatile, cerebras/llama-3.3-70b]
//     pick: least_busy
type ChainGroup struct {
	Start, End int
	// Pick is router.PickWeighted (the default), PickLeastBusy or
	// PickMostRoom.
	Pick string
	// Weights are PickWeighted's, by member address; a member not named
	// weighs 1.
	Weights map[string]float64
	// Affinity is how long a prompt prefix goes back to the member that
	// served it: 0 for router.DefaultAffinity, negative for none ("off").
	Affinity time.Duration
}

// groupFields are the keys of a group entry of a chain.
var groupFields = []string{"group", "pick", "weights", "affinity"}

// picks are the values pick: takes.
var picks = []string{router.PickWeighted, router.PickLeastBusy, router.PickMostRoom}

// isMappingNode reports whether n (resolved) is a mapping: a chain entry
// that is a group.
func (d *decoder) isMappingNode(n ast.Node) bool {
	switch d.resolve(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

// chainGroup decodes the group entry n at path (chain[i] of the chain at
// chainPath) into r: its members are appended to r.Chain, each placed at
// its own line for messages about chain[N], and the group to r.Groups.
func (d *decoder) chainGroup(r *Route, n ast.Node, path, chainPath string) {
	g := ChainGroup{Start: len(r.Chain), Pick: router.PickWeighted}
	fields, _ := d.mapping(n, path, "field")
	var weightsAt string
	for _, f := range fields {
		fp := child(path, f.key)
		d.mark(fp, f)
		switch f.key {
		case "group":
			items, _ := d.list(f.val, fp, "[groq/llama-3.3-70b-versatile, cerebras/llama-3.3-70b]")
			for i, it := range items {
				ip := index(fp, i)
				d.c.pos[ip] = startPos(it)
				if s, ok := d.str(it, ip); ok {
					d.c.pos[index(chainPath, len(r.Chain))] = startPos(it)
					r.Chain = append(r.Chain, s)
				}
			}
		case "pick":
			s, ok := d.str(f.val, fp)
			if ok && !slices.Contains(picks, s) {
				d.failf(f.val, fp, "%s is not a pick: write %s", quote(s), strings.Join(picks, ", "))
			} else if ok {
				g.Pick = s
			}
		case "weights":
			weightsAt = fp
			ws, _ := d.mapping(f.val, fp, "member")
			g.Weights = map[string]float64{}
			for _, w := range ws {
				wp := child(fp, w.key)
				d.mark(wp, w)
				if v, ok := d.number(w.val, wp); ok {
					if v < 0 {
						d.failf(w.val, wp, "a weight is 0 or more (0: never first), got %g", v)
					}
					g.Weights[w.key] = v
				}
			}
		case "affinity":
			if s, ok := d.resolve(f.val).(*ast.StringNode); ok && s.Value == "off" {
				g.Affinity = -1
				continue
			}
			if v, ok := d.duration(f.val, fp); ok {
				g.Affinity = v
			}
		default:
			d.failf(f.keyN, fp, "unknown field of a group: a group entry takes %s", strings.Join(groupFields, ", "))
		}
	}
	g.End = len(r.Chain)
	switch {
	case g.End-g.Start < 2:
		d.failf(n, path, "a group needs two members or more: write group: [a/m, b/m] (one target is a plain chain entry)")
		return
	}
	for m := range g.Weights {
		if !slices.Contains(r.Chain[g.Start:g.End], m) {
			d.fail(startPos(n), weightsAt, nil, fmt.Sprintf("weights names %s, which is not a member of the group (%s)",
				quote(m), strings.Join(r.Chain[g.Start:g.End], ", ")))
		}
	}
	if g.Weights != nil && g.Pick != router.PickWeighted {
		d.fail(startPos(n), weightsAt, nil, "weights go with pick: weighted (this group picks "+g.Pick+")")
	}
	r.Groups = append(r.Groups, g)
}

// groupOf returns the index in r.Groups of chain entry i's group, -1 when
// it stands alone.
func (r *Route) groupOf(i int) int {
	for k, g := range r.Groups {
		if i >= g.Start && i < g.End {
			return k
		}
	}
	return -1
}
