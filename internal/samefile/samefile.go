// Package samefile keeps a command from writing over the files it reads:
// before anything is opened for writing, each file the command will write
// is compared by identity (device and inode, after following links) with
// every file it reads and every other file it writes. Two path strings are
// not enough: a hard link, a symbolic link (to the file or to a directory
// on its way) or ./x beside x name one file under two spellings.
//
//	err := samefile.Check(
//		[]samefile.File{{What: "-o", Path: out}},
//		[]samefile.File{{What: "the input", Path: in}})
//	if errors.Is(err, samefile.ErrSameFile) {
//		// refuse the run: nothing was opened yet
//	}
package samefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// maxLinks is how many symbolic links resolve follows in a row before it
// gives up, as Linux does (MAXSYMLINKS).
const maxLinks = 40

// ErrSameFile is what every *CollisionError matches with errors.Is.
var ErrSameFile = errors.New("two files a command uses are one file")

// File is a file a command uses, and how its user names it.
type File struct {
	// What names the file to the user: the flag that sets it ("-o",
	// "--html") or its role ("the input", "the config file").
	What string
	// Path is the file as given. "" (none) and "-" (standard input or
	// output) name no file and are skipped.
	Path string
	// Fix tells how to name another file, for an output the user can
	// change: "choose another -o". Empty means "name another file for "
	// followed by What.
	Fix string
}

// fix is f's Fix, or its default.
func (f File) fix() string {
	if f.Fix != "" {
		return f.Fix
	}
	return "name another file for " + f.What
}

// CollisionError is an output that is the same file as an input, or as
// an output named before it.
type CollisionError struct {
	// Output is the file that would be written.
	Output File
	// Other is the file it is the same as.
	Other File
	// OtherIsInput says whether Other is read (else it is written too).
	OtherIsInput bool
	// How says how the two paths name one file: "the same path", "a
	// symbolic link", or "a hard link" (any other way to one inode: a
	// bind mount, a case-insensitive name).
	How string
}

// Error says which two files are one, how, what writing would do, and
// how to fix it.
func (e *CollisionError) Error() string {
	harm := "both would write into it"
	if e.OtherIsInput {
		harm = "writing " + e.Output.What + " would destroy " + e.Other.What
	}
	return fmt.Sprintf("%s %q and %s %q are one file (%s): %s; %s",
		e.Output.What, e.Output.Path, e.Other.What, e.Other.Path, e.How, harm, e.Output.fix())
}

// Unwrap returns ErrSameFile.
func (e *CollisionError) Unwrap() error { return ErrSameFile }

// Check returns a *CollisionError for the first output (in order) that is
// the same file as an input, or as an output listed before it; nil when
// every output is a file of its own. It opens nothing. A file that does
// not exist yet is compared by where its path leads once every link on
// the way is followed; a file that exists but is no regular file (a
// terminal, /dev/null, a pipe) is never a collision: writing it destroys
// nothing. Files that cannot be examined (no permission) are compared by
// path: opening them will say what is wrong.
func Check(outputs, inputs []File) error {
	for i, out := range outputs {
		if skip(out) {
			continue
		}
		for _, in := range inputs {
			if how, same := sameFile(out.Path, in.Path, skip(in)); same {
				return &CollisionError{Output: out, Other: in, OtherIsInput: true, How: how}
			}
		}
		for _, prev := range outputs[:i] {
			if how, same := sameFile(out.Path, prev.Path, skip(prev)); same {
				return &CollisionError{Output: out, Other: prev, How: how}
			}
		}
	}
	return nil
}

// skip reports whether f names no file.
func skip(f File) bool { return f.Path == "" || f.Path == "-" }

// sameFile reports whether paths a and b are one file, and how they come
// to be; never when skipB.
func sameFile(a, b string, skipB bool) (how string, same bool) {
	if skipB {
		return "", false
	}
	ra, rb := resolve(a), resolve(b)
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	switch {
	case errA == nil && errB == nil:
		if !os.SameFile(sa, sb) || !sa.Mode().IsRegular() {
			return "", false
		}
	case ra != rb:
		return "", false
	}
	switch {
	case abs(a) == abs(b):
		return "the same path", true
	case ra == rb:
		return "a symbolic link", true
	}
	return "a hard link", true
}

// abs is p made absolute and cleaned, as far as the working directory is
// known.
func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// resolve returns where p leads: absolute, every symbolic link followed,
// in the directories on the way and at the end, as far as they exist. A
// link that leads nowhere yet leads to where a write would create the
// file.
func resolve(p string) string {
	if !filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			p = wd + string(filepath.Separator) + p // not Join: ".." after a link is the link's parent
		}
	}
	for range maxLinks {
		dir, base := filepath.Split(p)
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			dir = d
		} else {
			dir = filepath.Clean(dir)
		}
		p = filepath.Join(dir, base)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return p
		}
		target, err := os.Readlink(p)
		if err != nil {
			return p
		}
		if !filepath.IsAbs(target) {
			target = dir + string(filepath.Separator) + target
		}
		p = target
	}
	return p
}
