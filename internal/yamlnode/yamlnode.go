// Package yamlnode holds what the two YAML readers (the config and eval's
// task suites) say alike about a node, so their messages agree.
//
//	d.failf(n, "expected a mapping, got %s", yamlnode.Describe(n))
package yamlnode

import "github.com/goccy/go-yaml/ast"

// Describe names the kind of value n holds, for messages: "nothing", "a
// mapping", "a list", "a number", "true/false" or "text".
func Describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "true/false"
	}
	return "text"
}

// Walk calls fn on n and every node below it, in document order.
func Walk(n ast.Node, fn func(ast.Node)) {
	if n != nil {
		ast.Walk(visitor(fn), n)
	}
}

// visitor adapts a function to ast.Visitor.
type visitor func(ast.Node)

// Visit implements ast.Visitor.
func (f visitor) Visit(n ast.Node) ast.Visitor {
	if n == nil {
		return nil
	}
	f(n)
	return f
}

// Anchors returns the anchors (&name) defined anywhere under root, by name.
func Anchors(root ast.Node) map[string]ast.Node {
	m := map[string]ast.Node{}
	Walk(root, func(n ast.Node) {
		if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
			m[a.Name.GetToken().Value] = a.Value
		}
	})
	return m
}

// Resolve looks through tags, anchors, aliases (by anchors) and a mapping
// key's wrapper to the node that holds the value, following at most
// maxDepth links; nil means no value (an unknown alias, or too deep).
func Resolve(n ast.Node, anchors map[string]ast.Node, maxDepth int) ast.Node {
	for range maxDepth {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			n = anchors[v.Value.GetToken().Value]
		case *ast.MappingKeyNode:
			n = v.Value
		default:
			return n
		}
	}
	return nil
}
