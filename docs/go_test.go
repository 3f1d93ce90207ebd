package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// docPackages are the packages of this module the pages name as pkg.Name.
// wire/openai, wire/anthropic and wire/gemini are left out: in the pages,
// openai.X and genai.X are the official SDKs' names.
var docPackages = []string{
	"detour", "llm", "router", "config", "policy", "health", "ledger", "classify",
	"simulate", "toolrun", "batch", "eval", "grade", "report", "probe", "fit",
	"gateway", "telemetry", "sse", "clock", "prom",
}

// pkgIndex holds the exported names of docPackages: for each package, its
// top-level names, and for each type its fields and methods.
type pkgIndex map[string]*pkgNames

type pkgNames struct {
	dir     string
	names   map[string]bool
	members map[string]map[string]bool // type -> field or method names
}

func newPkgIndex() (pkgIndex, error) {
	idx := pkgIndex{}
	for _, name := range docPackages {
		dir := filepath.Join(root, name)
		n := &pkgNames{dir: dir, names: map[string]bool{}, members: map[string]map[string]bool{}}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("package %s: no Go files in %s", name, dir)
		}
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			n.add(file)
		}
		idx[name] = n
	}
	return idx, nil
}

func (n *pkgNames) member(typ string) map[string]bool {
	m := n.members[typ]
	if m == nil {
		m = map[string]bool{}
		n.members[typ] = m
	}
	return m
}

func (n *pkgNames) add(f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				n.names[d.Name.Name] = true
				continue
			}
			if len(d.Recv.List) == 1 {
				n.member(recvType(d.Recv.List[0].Type))[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					n.names[s.Name.Name] = true
					m := n.member(s.Name.Name)
					switch t := s.Type.(type) {
					case *ast.StructType:
						for _, f := range t.Fields.List {
							for _, id := range f.Names {
								m[id.Name] = true
							}
							if len(f.Names) == 0 { // embedded: its name
								m[recvType(f.Type)] = true
							}
						}
					case *ast.InterfaceType:
						for _, f := range t.Methods.List {
							for _, id := range f.Names {
								m[id.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						n.names[id.Name] = true
					}
				}
			}
		}
	}
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// has reports whether pkg.name exists, and, when member is not "",
// pkg.name.member (a field or method of type name).
func (idx pkgIndex) has(pkg, name, member string) error {
	n := idx[pkg]
	if n == nil {
		return nil
	}
	if !n.names[name] {
		return fmt.Errorf("%s.%s: package %s has no exported %s", pkg, name, pkg, name)
	}
	if member != "" && n.members[name] != nil && !n.members[name][member] {
		return fmt.Errorf("%s.%s.%s: %s.%s has no field or method %s", pkg, name, member, pkg, name, member)
	}
	return nil
}

var inlineNameRE = regexp.MustCompile(`(?:^|[^\w./-])([a-z]+)\.([A-Z]\w*)(?:\.([A-Z]\w*)|\{(\w+):)?`)

// checkNames checks every pkg.Name (pkg.Type.Member, pkg.Type{Field:) in an
// inline code span.
func (idx pkgIndex) checkNames(span string) []error {
	var errs []error
	for _, m := range inlineNameRE.FindAllStringSubmatch(span, -1) {
		member := m[3]
		if member == "" {
			member = m[4]
		}
		if err := idx.has(m[1], m[2], member); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkGo parses a Go block, as a file when it has a package clause, else as
// the statements of a function body, and checks the names it takes from
// detour's packages: pkg.Name, and the field names of a pkg.Type{...}
// literal. It does not type-check: a fragment uses variables it does not
// declare (ctx, work). Whole programs belong in examples/, where go vet and
// go test build them; a block may not be one.
func checkGo(src string, idx pkgIndex) error {
	fset := token.NewFileSet()
	var file *ast.File
	var err error
	if strings.HasPrefix(strings.TrimSpace(src), "package ") {
		file, err = parser.ParseFile(fset, "example.go", src, parser.SkipObjectResolution)
		if err == nil && file.Name.Name == "main" {
			return fmt.Errorf("a whole program: put it under examples/ (built by go vet ./...) and link it")
		}
	} else {
		file, err = parser.ParseFile(fset, "example.go", "package p\nfunc _() {\n"+src+"\n}\n", parser.SkipObjectResolution)
	}
	if err != nil {
		return err
	}
	var errs []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if err := idx.has(id.Name, n.Sel.Name, ""); err != nil {
					errs = append(errs, err.Error())
				}
			}
		case *ast.CompositeLit:
			sel, ok := n.Type.(*ast.SelectorExpr)
			if !ok {
				break
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				break
			}
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						if err := idx.has(id.Name, sel.Sel.Name, k.Name); err != nil {
							errs = append(errs, err.Error())
						}
					}
				}
			}
		}
		return true
	})
	if errs != nil {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// exists reports whether path (relative to the module root) exists.
func exists(path string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(path)))
	return err == nil
}
