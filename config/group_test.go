package config

import (
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/router"
)

const groupProviders = `providers:
  a: {base_url: "http://127.0.0.1:9/v1", key_env: A_KEY, pool: free}
  b: {base_url: "http://127.0.0.1:9/v1", key_env: B_KEY, pool: free}
  c: {base_url: "http://127.0.0.1:9/v1", key_env: C_KEY, pool: payg}
`

// A group entry's members go into the chain in place, the group says
// which and how it picks, and the built route's members share one
// router.Group; targets after it keep their places (and lines).
func TestParse_ChainGroup(t *testing.T) {
	c := mustParse(t, groupProviders+`routes:
  default:
    chain:
      - group: [a/m, b/m]
        pick: weighted
        weights: {a/m: 3}
        affinity: 5m
      - c/m
  busy:
    chain:
      - c/m
      - {group: [a/m, b/m], pick: least_busy, affinity: off}
`)
	r := c.Routes["default"]
	if strings.Join(r.Chain, ",") != "a/m,b/m,c/m" || len(r.Groups) != 1 {
		t.Fatalf("chain %v groups %+v", r.Chain, r.Groups)
	}
	if g := r.Groups[0]; g.Start != 0 || g.End != 2 || g.Pick != router.PickWeighted || g.Weights["a/m"] != 3 || g.Affinity != 5*time.Minute {
		t.Errorf("group %+v", g)
	}
	if g := c.Routes["busy"].Groups[0]; g.Start != 1 || g.End != 3 || g.Pick != router.PickLeastBusy || g.Affinity >= 0 {
		t.Errorf("busy's group %+v: want members 1-2, least_busy, affinity off", g)
	}
	if p := c.where("routes.default.chain[2]", false); p.line != 12 {
		t.Errorf("c/m placed at line %d, want 12 (its own line)", p.line)
	}
	routes, err := c.Build(BuildOptions{Getenv: func(string) string { return "k" }})
	if err != nil {
		t.Fatal(err)
	}
	ch := routes["default"].Chain
	if ch[0].Group == nil || ch[0].Group != ch[1].Group || ch[2].Group != nil || ch[0].Group.Weights["a/m"] != 3 {
		t.Errorf("built chain groups: %p %p %p", ch[0].Group, ch[1].Group, ch[2].Group)
	}
}

func TestParse_ChainGroupProblems(t *testing.T) {
	route := func(entry string) string {
		return groupProviders + "routes:\n  default:\n    chain:\n      - " + entry + "\n"
	}
	wantProblems(t, route("{group: [a/m]}"), "a group needs two members or more")
	wantProblems(t, route("{group: [a/m, b/m], pick: fastest}"), `"fastest" is not a pick: write weighted, least_busy, most_room`)
	wantProblems(t, route("{group: [a/m, b/m], weights: {c/m: 2}}"), `weights names "c/m", which is not a member of the group (a/m, b/m)`)
	wantProblems(t, route("{group: [a/m, b/m], pick: most_room, weights: {a/m: 2}}"), "weights go with pick: weighted")
	wantProblems(t, route("{group: [a/m, b/m], order: random}"), "unknown field of a group")
	wantProblems(t, route("{group: [a/m, b/m], weights: {a/m: -1}}"), "a weight is 0 or more")
}
