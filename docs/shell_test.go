package docs

import (
	"errors"
	"strings"
)

// shellWords splits one line of shell as sh would into words, quotes
// removed; a # starting a word ends the line. Operators (| || && ; &) come
// back as words of their own; redirections (> >> < 2> 2>&1) and their file
// are dropped. Variables are left as written ($HOME stays "$HOME").
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed '")
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New(`unclosed "`)
			}
			inWord = true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#' && !inWord:
			flush()
			return words, nil
		case ch == '|' || ch == '&' || ch == ';':
			flush()
			op := string(ch)
			if i+1 < len(line) && line[i+1] == ch && ch != ';' {
				op += string(ch)
				i++
			}
			words = append(words, op)
		case ch == '>' || ch == '<':
			// a redirection: drop it, a leading fd digit and its file
			if inWord && (cur.String() == "1" || cur.String() == "2") {
				cur.Reset()
				inWord = false
			}
			flush()
			for i+1 < len(line) && (line[i+1] == '>' || line[i+1] == '&') {
				i++
			}
			for i+1 < len(line) && line[i+1] == ' ' {
				i++
			}
			for i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '|' && line[i+1] != ';' {
				i++
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// splitCommands cuts words at the shell's operators into commands.
func splitCommands(words []string) [][]string {
	var out [][]string
	var cur []string
	for _, w := range words {
		switch w {
		case "|", "||", "&&", "&", ";":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
