package samefile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// tree makes dir/in.jsonl (with a line in it) and returns dir.
func tree(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("links need privileges here")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte("{\"id\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheck_FindsOneFileUnderEverySpelling(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, dir string) (out string) // makes the output's name
		how  string
		in   string // the input's name; "" is in.jsonl
	}{
		{"the same path", func(t *testing.T, dir string) string { return "in.jsonl" }, "the same path", ""},
		{"dot slash", func(t *testing.T, dir string) string { return "./in.jsonl" }, "the same path", ""},
		{"absolute", func(t *testing.T, dir string) string { return filepath.Join(dir, "in.jsonl") }, "the same path", ""},
		{"hard link", func(t *testing.T, dir string) string {
			must(t, os.Link(filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")))
			return "out.jsonl"
		}, "a hard link", ""},
		{"symbolic link", func(t *testing.T, dir string) string {
			must(t, os.Symlink("in.jsonl", filepath.Join(dir, "out.jsonl")))
			return "out.jsonl"
		}, "a symbolic link", ""},
		{"link to a link", func(t *testing.T, dir string) string {
			must(t, os.Symlink("in.jsonl", filepath.Join(dir, "mid")))
			must(t, os.Symlink(filepath.Join(dir, "mid"), filepath.Join(dir, "out.jsonl")))
			return "out.jsonl"
		}, "a symbolic link", ""},
		{"directory symlink", func(t *testing.T, dir string) string {
			must(t, os.Symlink(".", filepath.Join(dir, "d")))
			return "d/in.jsonl"
		}, "a symbolic link", ""},
		{"dot dot after a directory symlink", func(t *testing.T, dir string) string {
			// l -> sub/deep: l/../in.jsonl is sub/in.jsonl, where lexical
			// cleaning would read in.jsonl. The input here is sub/in.jsonl.
			must(t, os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o700))
			must(t, os.Rename(filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "sub", "in.jsonl")))
			must(t, os.Symlink(filepath.Join("sub", "deep"), filepath.Join(dir, "l")))
			return "l/../in.jsonl"
		}, "a symbolic link", "sub/in.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t)
			t.Chdir(dir)
			out := tt.make(t, dir)
			in := tt.in
			if in == "" {
				in = "in.jsonl"
			}
			err := Check([]File{{What: "-o", Path: out, Fix: "choose another -o"}}, []File{{What: "the input", Path: in}})
			var ce *CollisionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrSameFile) {
				t.Fatalf("Check = %v, want a *CollisionError", err)
			}
			if ce.How != tt.how || !ce.OtherIsInput {
				t.Fatalf("How = %q (input %v), want %q", ce.How, ce.OtherIsInput, tt.how)
			}
			for _, want := range []string{`-o "` + out + `"`, `the input "` + in + `"`, "(" + tt.how + ")",
				"writing -o would destroy the input", "choose another -o"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}
		})
	}
}

func TestCheck_OutputsThatDoNotExistYet(t *testing.T) {
	dir := tree(t)
	t.Chdir(dir)
	must(t, os.Symlink("new.jsonl", "dangling")) // leads where a write would create new.jsonl
	must(t, os.Symlink(".", "d"))
	tests := []struct {
		name    string
		outputs []File
		same    bool
	}{
		{"two spellings of one new file", []File{{What: "--ledger", Path: "new.jsonl"}, {What: "-o", Path: "./d/new.jsonl"}}, true},
		{"a dangling link and its target", []File{{What: "--ledger", Path: "new.jsonl"}, {What: "-o", Path: "dangling"}}, true},
		{"two new files", []File{{What: "--ledger", Path: "a.jsonl"}, {What: "-o", Path: "b.jsonl"}}, false},
		{"in a directory not made yet", []File{{What: "--ledger", Path: "x/y/a.jsonl"}, {What: "-o", Path: "x/y/../y/b.jsonl"}}, false},
		{"none and stdout", []File{{What: "--ledger", Path: ""}, {What: "--html", Path: "-"}, {What: "-o", Path: "-"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.outputs, []File{{What: "the input", Path: "in.jsonl"}})
			var ce *CollisionError
			if got := errors.As(err, &ce); got != tt.same {
				t.Fatalf("Check = %v, want a collision: %v", err, tt.same)
			}
			if tt.same && (ce.OtherIsInput || !strings.Contains(err.Error(), "both would write into it") || ce.Output.What != "-o") {
				t.Fatalf("Check = %v (%+v), want -o against --ledger, both written", err, ce)
			}
		})
	}
}

func TestCheck_DistinctFilesAndDevicesPass(t *testing.T) {
	dir := tree(t)
	t.Chdir(dir)
	must(t, os.WriteFile("other.jsonl", []byte("{}\n"), 0o600))
	// A copy has the same bytes and another inode: not the same file.
	must(t, os.WriteFile("copy.jsonl", []byte("{\"id\":1}\n"), 0o600))
	outs := []File{{What: "-o", Path: "other.jsonl"}, {What: "--html", Path: "copy.jsonl"}}
	if runtime.GOOS != "windows" {
		// Writing a device destroys nothing, even when it is read too.
		outs = append(outs, File{What: "--proposal", Path: os.DevNull})
	}
	if err := Check(outs, []File{{What: "the input", Path: "in.jsonl"}, {What: "the suite", Path: os.DevNull}}); err != nil {
		t.Fatalf("Check = %v, want nil", err)
	}
}

func TestCheck_DefaultFixNamesTheFlag(t *testing.T) {
	dir := tree(t)
	t.Chdir(dir)
	err := Check([]File{{What: "--html", Path: "in.jsonl"}}, []File{{What: "the ledger", Path: "in.jsonl"}})
	if err == nil || !strings.HasSuffix(err.Error(), "; name another file for --html") {
		t.Fatalf("Check = %v", err)
	}
}
