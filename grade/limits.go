package grade

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"

	"github.com/detourhq/detour/internal/yamlnode"
)

// maxFlowDepth bounds the nesting of [ ] and { } and of "- - -" chains:
// the YAML parser's memory grows with the square of it.
const maxFlowDepth = 64

// maxExpanded bounds the nodes of a suite with every alias expanded, so a
// few anchors referring to each other cannot expand to billions.
const maxExpanded = 1_000_000

// expandedSize counts the nodes of n with aliases expanded, stopping past
// maxExpanded.
func (p *suiteParser) expandedSize(n ast.Node) int {
	memo := map[string]int{}
	var size func(n ast.Node, depth int) int
	size = func(n ast.Node, depth int) int {
		total := 0
		yamlnode.Walk(n, func(m ast.Node) {
			total++
			if a, ok := m.(*ast.AliasNode); ok && a.Value != nil && total <= maxExpanded {
				name := a.Value.GetToken().Value
				s, done := memo[name]
				if !done {
					s = maxExpanded + 1 // a cycle, or too deep, counts as too big
					if depth < 32 {
						memo[name] = s
						s = size(p.anchors[name], depth+1)
					}
					memo[name] = s
				}
				total += s
			}
		})
		return min(total, maxExpanded+1)
	}
	if n == nil {
		return 0
	}
	return size(n, 0)
}

// checkSize refuses data past MaxSuiteSize or nesting deeper than
// maxFlowDepth, before the YAML parser sees it. Brackets inside quotes
// count too; a real suite never has enough to matter.
func checkSize(data []byte) *Error {
	if len(data) > MaxSuiteSize {
		return &Error{Msg: fmt.Sprintf("the file is larger than %d MiB, the most a suite may be; split it", MaxSuiteSize>>20)}
	}
	depth, ln, lead, chain := 0, 1, true, 0
	for i, c := range data {
		switch {
		case c == '\n':
			ln, lead, chain = ln+1, true, 0
			continue
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case lead && c == '-' && (i+1 == len(data) || data[i+1] == ' '):
			chain++
		}
		lead = lead && (c == ' ' || c == '-' || c == '\t')
		if depth+chain > maxFlowDepth {
			return &Error{Line: ln, Msg: fmt.Sprintf("lists and mappings nest more than %d levels deep here; look for a bracket that is never closed", maxFlowDepth)}
		}
	}
	return nil
}
