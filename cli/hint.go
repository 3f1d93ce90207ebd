package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// selfName is how the user runs this detour again, for the commands it
// prints to run next: "go run ./cmd/detour" when `go run` built it (a
// binary under the go-build cache), the path it was started by when that
// has a directory (./detour), else "detour".
func selfName() string {
	a := filepath.ToSlash(os.Args[0])
	switch {
	case strings.Contains(a, "/go-build"):
		return "go run ./cmd/detour"
	case strings.Contains(a, "/"):
		return shellQuote(os.Args[0])
	}
	return "detour"
}

// shellQuote returns s as one word of a POSIX shell command line: as it is
// when it holds only characters no shell reads specially, else in single
// quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printCommands prints one command a line, each followed by its comment
// (# ...), the comments in one column unless the command is too long for
// it: the commands to run next.
func printCommands(w io.Writer, cmds [][2]string) {
	const widest = 64
	width := 0
	for _, c := range cmds {
		if c[1] != "" && len(c[0]) <= widest {
			width = max(width, len(c[0]))
		}
	}
	for _, c := range cmds {
		if c[1] == "" {
			fmt.Fprintf(w, "  %s\n", c[0])
			continue
		}
		fmt.Fprintf(w, "  %-*s  # %s\n", width, c[0], c[1])
	}
}

// wrapWords breaks s into lines of at most width bytes at spaces (a longer
// word stays whole on its own line), without a final newline.
func wrapWords(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		switch {
		case i == 0:
		case n+1+len(word) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
