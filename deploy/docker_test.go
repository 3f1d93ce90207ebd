package deploy

import (
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction: its keyword and the rest,
// continuation lines joined.
type instruction struct {
	cmd, args string
	stage     int // 0 for the first FROM's stage
}

// dockerfile reads path's instructions.
func dockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	var out []instruction
	stage := -1
	var cur strings.Builder
	for _, line := range strings.Split(string(read(t, path)), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.Join(strings.Fields(args), " "), stage: stage})
	}
	return out
}

// makeBuild returns the command of the Makefile's build target, with
// $(GO) as go.
func makeBuild(t *testing.T) string {
	t.Helper()
	lines := strings.Split(string(read(t, "../Makefile")), "\n")
	i := slices.Index(lines, "build:")
	if i < 0 || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "\t") || (i+2 < len(lines) && strings.HasPrefix(lines[i+2], "\t")) {
		t.Fatal("../Makefile: no build: target of one command")
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(lines[i+1], "$(GO)", "go")), " ")
}

// withoutMounts drops RUN's --mount=... flags.
func withoutMounts(args string) string {
	f := strings.Fields(args)
	f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--mount=") })
	return strings.Join(f, " ")
}

func TestDockerfile_BuildsWhatMakeBuildBuilds(t *testing.T) {
	want := makeBuild(t)
	if !strings.HasPrefix(want, "CGO_ENABLED=0 go build") {
		t.Fatalf("make build runs %q: the image's base has no libc, the binary must be static", want)
	}
	ins := dockerfile(t, "Dockerfile")
	var froms []string
	workdir := "/"
	built := ""
	for _, in := range ins {
		switch {
		case in.cmd == "FROM":
			froms = append(froms, in.args)
		case in.cmd == "WORKDIR" && in.stage == 0:
			workdir = in.args
		case in.cmd == "RUN" && withoutMounts(in.args) == want:
			built = path.Join(workdir, outputOf(t, want))
		}
	}
	if len(froms) != 2 || !regexp.MustCompile(`^golang:1\.26(\.\d+)? AS build$`).MatchString(froms[0]) {
		t.Fatalf("FROM %q: want two stages, the first golang:1.26 AS build", froms)
	}
	if base := froms[1]; base != "scratch" && !strings.HasPrefix(base, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s: want scratch or distroless static (no shell, no libc)", base)
	}
	if built == "" {
		t.Fatalf("no RUN of %q (make build's command, word for word) in Dockerfile", want)
	}
	final := finalStage(ins)
	copyFrom := "--from=build " + built + " " + binaryPath
	if !slices.ContainsFunc(final, func(in instruction) bool { return in.cmd == "COPY" && in.args == copyFrom }) {
		t.Errorf("no COPY %s in the final stage", copyFrom)
	}
	if e := exec1(final, "ENTRYPOINT"); e != `["`+binaryPath+`"]` {
		t.Errorf("ENTRYPOINT %s, want [%q]", e, binaryPath)
	}
	if c := exec1(final, "CMD"); c != `["serve"]` {
		t.Errorf("CMD %s, want [\"serve\"]", c)
	}
}

// outputOf returns the -o argument of a go build command.
func outputOf(t *testing.T, cmd string) string {
	t.Helper()
	f := strings.Fields(cmd)
	i := slices.Index(f, "-o")
	if i < 0 || i+1 >= len(f) {
		t.Fatalf("%q names no -o output", cmd)
	}
	return f[i+1]
}

// finalStage returns the instructions of the last stage.
func finalStage(ins []instruction) []instruction {
	last := ins[len(ins)-1].stage
	return slices.DeleteFunc(slices.Clone(ins), func(in instruction) bool { return in.stage != last })
}

// exec1 returns the arguments of the last cmd instruction in ins.
func exec1(ins []instruction, cmd string) string {
	v := ""
	for _, in := range ins {
		if in.cmd == cmd {
			v = in.args
		}
	}
	return v
}

func TestDockerfile_PathsPortAndUserMatchTheSample(t *testing.T) {
	c := sample(t)
	final := finalStage(dockerfile(t, "Dockerfile"))
	env := map[string]string{}
	var copies []string
	for _, in := range final {
		switch in.cmd {
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		case "COPY":
			copies = append(copies, in.args)
		}
	}
	if env["DETOUR_CONFIG"] != configPath || !slices.Contains(copies, "deploy/detour.yaml "+configPath) {
		t.Errorf("the image should hold deploy/detour.yaml at %s and say so in DETOUR_CONFIG; ENV %v, COPY %q", configPath, env, copies)
	}
	if env["DETOUR_LEDGER"] != ledgerPath {
		t.Errorf("DETOUR_LEDGER = %q, want %s", env["DETOUR_LEDGER"], ledgerPath)
	}
	// The ledger's directory exists, owned by the user the image runs as
	// (the distroless base has no shell to make it at run time).
	user := exec1(final, "USER")
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("USER %q: run as a user other than root", user)
	}
	dir := path.Dir(ledgerPath)
	if !slices.ContainsFunc(copies, func(c string) bool {
		return strings.HasPrefix(c, "--from=build --chown="+user+" ") && strings.HasSuffix(c, " "+dir)
	}) {
		t.Errorf("no COPY --chown=%s of an empty directory to %s: the nonroot user could not write its ledger", user, dir)
	}
	if p := exec1(final, "EXPOSE"); p != listenPort(t, c) {
		t.Errorf("EXPOSE %s, gateway.listen's port is %s", p, listenPort(t, c))
	}
	if s := exec1(final, "STOPSIGNAL"); s != "" && s != "SIGTERM" {
		t.Errorf("STOPSIGNAL %s: serve drains on SIGTERM (or SIGINT)", s)
	}
}

// The ignore file leaves out nothing the build reads: go.mod, go.sum,
// every file of every package cmd/detour imports (embedded files too)
// and deploy/detour.yaml.
func TestDockerignore_KeepsWhatTheBuildReads(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list cmd/detour's packages")
	}
	var rules []ignoreRule
	for _, line := range strings.Split(string(read(t, "Dockerfile.dockerignore")), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rules = append(rules, newIgnoreRule(line))
	}
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		"../cmd/detour")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root := strings.TrimSuffix(string(must(exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output())), "\n")
	needed := []string{"go.mod", "go.sum", "deploy/detour.yaml"}
	for _, f := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(f, root+"/"); ok { // the module's own files, not the module cache's
			needed = append(needed, rel)
		}
	}
	if len(needed) < 50 {
		t.Fatalf("go list found %d files of the module: %v", len(needed), needed)
	}
	for _, f := range needed {
		if ignored(rules, f) {
			t.Errorf("Dockerfile.dockerignore leaves out %s, which the build reads", f)
		}
	}
	for _, f := range []string{".git/config", "bin/detour", "gateway.test", "gateway/testdata/x.json"} {
		if !ignored(rules, f) {
			t.Errorf("Dockerfile.dockerignore sends %s to the build", f)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// ignoreRule is one line of a .dockerignore: a pattern (path.Match
// syntax per segment, ** for any number of segments) and whether it keeps
// (!) what it matches.
type ignoreRule struct {
	re   *regexp.Regexp
	keep bool
}

func newIgnoreRule(line string) ignoreRule {
	r := ignoreRule{}
	if rest, ok := strings.CutPrefix(line, "!"); ok {
		r.keep, line = true, rest
	}
	line = strings.Trim(path.Clean(line), "/")
	var b strings.Builder
	b.WriteString("^")
	for i, seg := range strings.Split(line, "/") {
		if i > 0 {
			b.WriteString("/")
		}
		if seg == "**" {
			b.WriteString("(?:.*/)?")
			continue
		}
		for _, c := range seg {
			switch c {
			case '*':
				b.WriteString("[^/]*")
			case '?':
				b.WriteString("[^/]")
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
	}
	s := strings.ReplaceAll(b.String(), "(?:.*/)?/", "(?:.*/)?")
	// A match of a directory leaves out everything under it.
	r.re = regexp.MustCompile(s + "(?:/.*)?$")
	return r
}

// ignored reports whether the rules leave file out (the last match wins).
func ignored(rules []ignoreRule, file string) bool {
	out := false
	for _, r := range rules {
		if r.re.MatchString(file) {
			out = !r.keep
		}
	}
	return out
}
