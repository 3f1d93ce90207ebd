package grade

import (
	"strings"
)

// The extraction modes of `extract:`.
const (
	// extractAuto takes the text after the last final-answer marker
	// ("Answer:", "答え:"), or else the whole answer.
	extractAuto = "auto"
	// extractWhole takes the whole answer, trimmed.
	extractWhole = "whole"
	// extractLastLine takes the last non-empty line, trimmed.
	extractLastLine = "last_line"
)

// extractModes are the values `extract:` takes.
var extractModes = []string{extractAuto, extractWhole, extractLastLine}

// markers begin a final-answer line, longest first so "答え" wins over
// "答"; latin ones compare case-insensitively.
var markers = []string{"final answer", "answer", "答え", "回答", "答"}

// extract returns the part of answer a grader reads under mode.
func extract(mode, answer string) string {
	switch mode {
	case extractWhole:
		return strings.TrimSpace(answer)
	case extractLastLine:
		return lastLine(answer)
	}
	return autoExtract(answer)
}

// lastLine returns the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// autoExtract takes the text after the last final-answer marker that
// begins a line (to the line's end, or the next non-empty line when
// nothing follows it), or else the whole answer; then strips markdown
// emphasis and a trailing period.
func autoExtract(answer string) string {
	lines := strings.Split(answer, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		rest, ok := afterMarker(lines[i])
		if !ok {
			continue
		}
		if rest = stripDecoration(rest); rest == "" {
			for _, l := range lines[i+1:] {
				if l = stripDecoration(l); l != "" {
					rest = l
					break
				}
			}
		}
		return rest
	}
	return stripDecoration(answer)
}

// afterMarker reports whether line begins, after markdown ("**", "#",
// "-", ">", spaces), with a final-answer marker and a colon, and returns
// what follows the colon.
func afterMarker(line string) (string, bool) {
	s := strings.TrimLeft(line, " \t*#->_`")
	for _, m := range markers {
		if len(s) < len(m) || !strings.EqualFold(s[:len(m)], m) {
			continue
		}
		rest := strings.TrimLeft(s[len(m):], " \t*_")
		switch {
		case strings.HasPrefix(rest, ":"):
			return rest[1:], true
		case strings.HasPrefix(rest, "："):
			return rest[len("："):], true
		}
		return "", false
	}
	return "", false
}

// stripDecoration trims space, markdown bold, italics and backticks around
// s, and a trailing period.
func stripDecoration(s string) string {
	for {
		before := s
		s = strings.TrimSpace(s)
		s = strings.Trim(s, "*`")
		for len(s) >= 2 && s[0] == '_' && s[len(s)-1] == '_' {
			s = s[1 : len(s)-1]
		}
		s = strings.TrimSpace(s)
		if strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "..") {
			s = s[:len(s)-1]
		} else if strings.HasSuffix(s, "。") {
			s = strings.TrimSuffix(s, "。")
		}
		if s == before {
			return s
		}
	}
}

// fence is a fenced code block of an answer.
type fence struct {
	// lang is the info string's first word, lowercased ("json", "").
	lang string
	// body is the text between the fence lines.
	body string
}

// fences returns the fenced code blocks (``` or ~~~) of s in order. A
// block left open runs to the end of s: an answer cut at its token limit.
func fences(s string) []fence {
	var out []fence
	lines := strings.SplitAfter(s, "\n")
	open := -1
	var marker, lang string
	var body strings.Builder
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if open < 0 {
			indent := len(l) - len(strings.TrimLeft(l, " "))
			if indent > 3 || !(strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
				continue
			}
			marker = t[:3]
			info := strings.TrimLeft(t, marker[:1])
			marker = t[:len(t)-len(info)]
			if f := strings.Fields(info); len(f) > 0 {
				lang = strings.ToLower(f[0])
			} else {
				lang = ""
			}
			open = i
			body.Reset()
			continue
		}
		if strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
			out = append(out, fence{lang: lang, body: body.String()})
			open = -1
			continue
		}
		body.WriteString(l)
	}
	if open >= 0 {
		out = append(out, fence{lang: lang, body: body.String()})
	}
	return out
}

// lastCode returns the body of the last fenced code block of s, or s when
// it has none.
func lastCode(s string) string {
	if fs := fences(s); len(fs) > 0 {
		return fs[len(fs)-1].body
	}
	return s
}
