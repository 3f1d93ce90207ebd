package docs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/detourhq/detour/batch"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/grade"
	"github.com/detourhq/detour/ledger"
)

// TestExamples_Check reads every fenced block of README.md and docs/*.md the
// way detour or its user would, so that the pages cannot drift from the code.
// A block says what it is by its language, and an HTML comment on the line
// above it may say how to check it (<!-- check: KIND -->):
//
//	yaml     a whole config file, through config.Parse (unknown fields,
//	         presets, validation: what detour check refuses fails here);
//	         check: suite   an eval task suite, through grade.Parse
//	json     valid JSON; check: ledger   one ledger line, decoded into
//	         ledger.Record with unknown fields refused
//	jsonl    every line valid JSON; check: batch-input   a detour batch
//	         input file, each line through batch.ParseLine
//	go       Go source: a whole file (package clause) or statements of a
//	         function body, parsed by go/parser; every pkg.Name it uses of
//	         one of detour's packages must be an exported name there
//	         (go_test.go); a whole program is built
//	sh       each command line: detour's (or go run ./cmd/detour) with its
//	         subcommand and every flag, given to the real command tree
//	         with --help appended (an unknown command or flag, or a value
//	         of the wrong type, fails); make TARGET names a Makefile
//	         target; go test names packages and tests or benchmarks that
//	         exist; go run and paths name what exists (commands_test.go)
//	text     output, shown as printed; a line "$ CMD" in it is checked as
//	         a command of an sh block
//
// "check: none: WHY" skips a block and says why. Any other language fails:
// a new kind of example needs a check here first.
func TestExamples_Check(t *testing.T) {
	cmds := newCommandChecker(t)
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			where := fmt.Sprintf("%s:%d", p.path, b.line)
			kind, why, _ := strings.Cut(b.check, ":")
			kind = strings.TrimSpace(kind)
			if kind == "none" {
				if strings.TrimSpace(why) == "" {
					t.Errorf("%s: check: none needs a reason after a colon", where)
				}
				continue
			}
			if err := checkBlock(b, kind, cmds); err != nil {
				t.Errorf("%s: %s block (check %q): %v", where, b.lang, kind, err)
			}
		}
	}
}

func checkBlock(b block, kind string, cmds *commandChecker) error {
	switch b.lang + "/" + kind {
	case "yaml/", "yaml/config":
		_, err := config.Parse("example.yaml", []byte(b.text))
		return err
	case "yaml/suite":
		_, err := grade.Parse("suite.yaml", []byte(b.text))
		return err
	case "json/":
		if !json.Valid([]byte(b.text)) {
			return json.Unmarshal([]byte(b.text), new(any))
		}
		return nil
	case "json/ledger":
		dec := json.NewDecoder(strings.NewReader(b.text))
		dec.DisallowUnknownFields()
		var r ledger.Record
		return dec.Decode(&r)
	case "jsonl/":
		for i, l := range nonEmptyLines(b.text) {
			if err := json.Unmarshal([]byte(l), new(any)); err != nil {
				return fmt.Errorf("line %d: %w", i+1, err)
			}
		}
		return nil
	case "jsonl/batch-input":
		var f batch.Format
		for i, l := range nonEmptyLines(b.text) {
			_, got, err := batch.ParseLine([]byte(l), i+1, f)
			if err != nil {
				return err
			}
			f = got
		}
		return nil
	case "go/":
		return checkGo(b.text, cmds.pkgs)
	case "sh/", "bash/":
		return cmds.checkScript(b.text)
	case "text/":
		var errs []string
		for _, l := range strings.Split(b.text, "\n") {
			if cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "$ "); ok {
				if err := cmds.checkScript(cmd); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
		if errs != nil {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
	if b.lang == "" {
		return fmt.Errorf("no language: name it (yaml, json, jsonl, go, sh, text) so that it is checked")
	}
	return fmt.Errorf("no check for this kind: add one to docs_test.go, or mark it <!-- check: none: WHY -->")
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestExamples_InlineCommands checks the commands written in the prose as
// inline code: `detour CMD --flag`, `go test ... ./pkg`, `make TARGET`, the
// same way as those of sh blocks. The prose names most of the commands that
// reproduce a measured figure.
func TestExamples_InlineCommands(t *testing.T) {
	cmds := newCommandChecker(t)
	for _, p := range pages(t) {
		for _, para := range p.paragraphs() {
			for _, span := range codeSpans(para.text) {
				if !cmds.looksLikeCommand(span) {
					continue
				}
				if err := cmds.checkScript(span); err != nil {
					t.Errorf("%s:%d: `%s`: %v", p.path, para.n, span, err)
				}
			}
		}
	}
}
