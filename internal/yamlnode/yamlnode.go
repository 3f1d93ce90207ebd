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
