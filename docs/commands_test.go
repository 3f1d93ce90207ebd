package docs

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/detourhq/detour/cli"
)

// commandChecker checks command lines against what exists: detour's command
// tree, the Makefile's targets, the module's packages and their tests.
type commandChecker struct {
	subcommands map[string]bool // detour's top-level commands
	targets     map[string]bool // the Makefile's
	pkgs        pkgIndex
	helped      map[string]error // detour argument lists already run
}

func newCommandChecker(t *testing.T) *commandChecker {
	t.Helper()
	c := &commandChecker{subcommands: map[string]bool{}, targets: map[string]bool{}, helped: map[string]error{}}
	var out bytes.Buffer
	if code := cli.Main(context.Background(), []string{"--help"}, cli.Env{Stdout: &out, Stderr: &out}); code != 0 {
		t.Fatalf("detour --help: exit %d\n%s", code, out.String())
	}
	_, after, _ := strings.Cut(out.String(), "Available Commands:\n")
	for _, l := range strings.Split(after, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			break
		}
		c.subcommands[f[0]] = true
	}
	if len(c.subcommands) < 5 {
		t.Fatalf("detour --help lists %d commands:\n%s", len(c.subcommands), out.String())
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_-]+):`).FindAllStringSubmatch(string(mk), -1) {
		c.targets[m[1]] = true
	}
	if c.pkgs, err = newPkgIndex(); err != nil {
		t.Fatal(err)
	}
	return c
}

// looksLikeCommand reports whether an inline code span is a command line
// the checker reads: detour with one of its commands, make, go test or
// go run.
func (c *commandChecker) looksLikeCommand(span string) bool {
	f := strings.Fields(span)
	if len(f) < 2 {
		return false
	}
	switch f[0] {
	case "detour":
		// detour and a word: a command, which must exist (detour/cache,
		// detour.yaml and the like are no command line)
		return commandWordRE.MatchString(f[1])
	case "make":
		return true
	case "go":
		return f[1] == "test" || f[1] == "run" || f[1] == "install" || f[1] == "build"
	}
	return false
}

// checkScript checks every command of a shell script: its lines (a line
// ending in \ goes on), each split at |, &&, || and ;.
func (c *commandChecker) checkScript(script string) error {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var errs []string
	for _, line := range strings.Split(script, "\n") {
		words, err := shellWords(line)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q: %v", line, err))
			continue
		}
		for _, cmd := range splitCommands(words) {
			if err := c.checkCommand(cmd); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", strings.Join(cmd, " "), err))
			}
		}
	}
	if errs != nil {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

var commandWordRE = regexp.MustCompile(`^[a-z][a-z-]*$`)

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func (c *commandChecker) checkCommand(cmd []string) error {
	for len(cmd) > 0 && assignRE.MatchString(cmd[0]) { // VAR=value cmd
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return nil
	}
	switch {
	case cmd[0] == "detour":
		return c.checkDetour(cmd[1:])
	case cmd[0] == "make":
		for _, a := range cmd[1:] {
			if assignRE.MatchString(a) || strings.HasPrefix(a, "-") {
				continue
			}
			if !c.targets[a] {
				return fmt.Errorf("the Makefile has no target %q", a)
			}
		}
	case cmd[0] == "go" && len(cmd) > 2 && cmd[1] == "run" && strings.TrimSuffix(cmd[2], "/") == "./cmd/detour":
		return c.checkDetour(cmd[3:])
	case cmd[0] == "go" && len(cmd) > 1 && cmd[1] == "test":
		return c.checkGoTest(cmd[2:])
	case cmd[0] == "go" && len(cmd) > 1:
		for _, a := range cmd[2:] {
			if strings.HasPrefix(a, "./") && !exists(strings.TrimSuffix(a, "/...")) {
				return fmt.Errorf("no %s in the repository", a)
			}
		}
	case strings.HasPrefix(cmd[0], "./"):
		if !exists(cmd[0]) {
			return fmt.Errorf("no %s in the repository", cmd[0])
		}
	}
	return nil
}

// checkDetour runs detour's own command tree on args with --help appended:
// cobra finds the command and parses every flag (an unknown one, or a value
// of the wrong type, is an error) and then prints help instead of running.
func (c *commandChecker) checkDetour(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !strings.HasPrefix(args[0], "-") && !c.subcommands[args[0]] {
		return fmt.Errorf("detour has no command %q", args[0])
	}
	key := strings.Join(args, "\x00")
	if err, ok := c.helped[key]; ok {
		return err
	}
	var out bytes.Buffer
	code := cli.Main(context.Background(), append(append([]string(nil), args...), "--help"), cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
		Getenv: func(string) string { return "" },
	})
	var err error
	if code != 0 {
		err = fmt.Errorf("detour refuses it (exit %d): %s", code, strings.TrimSpace(out.String()))
	}
	c.helped[key] = err
	return err
}

// checkGoTest checks a go test command line: each ./package exists, and
// each -run or -bench pattern (but '^$' and '.') matches a test, example,
// fuzz target or benchmark of those packages.
func (c *commandChecker) checkGoTest(args []string) error {
	var pkgs []string
	patterns := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-run" || a == "-bench":
			if i+1 < len(args) {
				patterns[a] = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "-run=") || strings.HasPrefix(a, "-bench="):
			k, v, _ := strings.Cut(a, "=")
			patterns[k] = v
		case strings.HasPrefix(a, "-tags"), a == "-benchtime", a == "-count", a == "-timeout", a == "-fuzztime", a == "-fuzz", a == "-cpu":
			if !strings.Contains(a, "=") {
				i++
			}
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		}
	}
	var funcs []string
	for _, p := range pkgs {
		dir := strings.TrimSuffix(strings.TrimSuffix(p, "/..."), "/")
		if !exists(dir) {
			return fmt.Errorf("no package %s", p)
		}
		if strings.HasSuffix(p, "/...") {
			return nil // a tree: patterns are not looked up
		}
		files, _ := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
		fset := token.NewFileSet()
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
					funcs = append(funcs, fn.Name.Name)
				}
			}
		}
	}
	for flag, pat := range patterns {
		if pat == "^$" || pat == "." || pat == "" {
			continue
		}
		first, _, _ := strings.Cut(pat, "/")
		re, err := regexp.Compile(first)
		if err != nil {
			return fmt.Errorf("%s %q: %v", flag, pat, err)
		}
		found := false
		for _, fn := range funcs {
			isBench := strings.HasPrefix(fn, "Benchmark")
			if (flag == "-bench") == isBench && re.MatchString(fn) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s %q matches nothing in %s", flag, pat, strings.Join(pkgs, " "))
		}
	}
	return nil
}
