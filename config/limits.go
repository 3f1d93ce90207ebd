package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// The limits on a config file. The YAML parser's memory grows with the
// square of the nesting depth and of the entries of one indented
// collection (a 200 KB file of 100,000 nested "[" took it past 15 GB), so
// a file past any limit is refused before the parser builds anything. A
// real detour.yaml is a few KiB, under 10 levels deep and a few thousand
// values long.
const (
	// MaxFileSize is the largest config file read, in bytes: 1 MiB.
	MaxFileSize = 1 << 20
	// MaxDepth is the deepest nesting of lists and mappings, indented
	// (block) and bracketed (flow: [ ] and { }) ones counted together,
	// the document's top level included.
	MaxDepth = 64
	// MaxNodes caps the words and YAML punctuation marks ("-", ":", ",",
	// brackets, "#", ...) of one file, comments included.
	MaxNodes = 50_000
	// MaxEntries caps the entries of one indented mapping or list.
	MaxEntries = 1000
)

// ErrLimit means a config file is past one of the input limits (MaxFileSize,
// MaxDepth, MaxNodes, MaxEntries) and was refused before it was parsed.
var ErrLimit = errors.New("config past an input limit")

// limits are the bounds the checks enforce; a field of 0 or less means none.
type limits struct {
	size, depth, nodes, entries int
}

// fileLimits are the limits of every file Load and Parse read.
var fileLimits = limits{size: MaxFileSize, depth: MaxDepth, nodes: MaxNodes, entries: MaxEntries}

// readLimited reads at most MaxFileSize+1 bytes of the file at path: enough
// for Parse to say it is too large, without reading a huge file (or an
// endless device) whole.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// tokenize checks data against lim in two steps and returns its tokens for
// the parser. First a scan of the bytes, which allocates nothing, bounds
// the size, the count of words and punctuation (so the tokens are few) and
// the nesting that brackets and "- - -" show without context. Then the YAML
// library's own tokens (cheap to make: the parser's cost is in the tree)
// give the nesting exactly for brackets and closely for indentation, and
// the entries of each indented collection. The *Error (File unset) wraps
// ErrLimit and points at where the limit is passed.
func tokenize(data []byte, lim limits) (token.Tokens, *Error) {
	if _, e := scanBytes(data, lim); e != nil {
		return nil, e
	}
	tokens := lexer.Tokenize(string(data))
	if _, e := walkTokens(tokens, lim); e != nil {
		return nil, e
	}
	return tokens, nil
}

// scanStats is what a check measured up to where it stopped.
type scanStats struct {
	// depth is the deepest nesting seen; flow the deepest of brackets
	// alone.
	depth, flow int
	// nodes counts words and punctuation marks.
	nodes int
	// entries is the most entries seen in one indented collection.
	entries int
}

// indicators are the bytes that may make a token of their own.
const indicators = "-?:,[]{}#&*!|>'\"%@`"

// limitError returns the problem of a limit passed at line and column.
func limitError(line, col int, msg string) *Error {
	return &Error{Line: line, Column: col, Msg: msg, Err: ErrLimit}
}

// The messages of the limits, each naming it and saying what to do.
func sizeMsg(n int) string {
	size := fmt.Sprintf("%d bytes", n)
	if n >= 1<<20 && n%(1<<20) == 0 {
		size += fmt.Sprintf(" (%d MiB)", n>>20)
	}
	return fmt.Sprintf("the file is larger than %s, the most a config may be, and passes it here: "+
		"a detour config is a few KiB; check that this is the config file, and remove what detour does not read", size)
}

func nodesMsg(n int) string {
	return fmt.Sprintf("the file holds more than %d words and punctuation marks, the most a config may hold, "+
		"and passes that here: a detour config needs a few thousand at most; remove what detour does not read", n)
}

func depthMsg(d, n int) string {
	return fmt.Sprintf("lists and mappings nest %d levels deep here, past the most a config may nest (%d levels, "+
		"indented or in [ ] and { } brackets): a detour config needs fewer than 10; look for a bracket that is never closed", d, n)
}

func entriesMsg(n int) string {
	return fmt.Sprintf("this mapping or list has more than %d entries, the most one may have, and passes it here: "+
		"a detour config needs far fewer; remove what detour does not read", n)
}

// scanBytes bounds data's size, words and punctuation, and the nesting of
// its brackets and of the "- ", "? " and ": " that begin a line, reading
// each byte once without context: a bracket in a quoted string or a
// comment counts too, which a real config never has enough of to matter.
func scanBytes(data []byte, lim limits) (scanStats, *Error) {
	if lim.size > 0 && len(data) > lim.size {
		line := 1 + bytes.Count(data[:lim.size], []byte("\n"))
		col := lim.size - (bytes.LastIndexByte(data[:lim.size], '\n') + 1) + 1
		return scanStats{}, limitError(line, col, sizeMsg(lim.size))
	}
	b := &byteScan{data: data, lim: lim, line: 1, lead: true}
	for i := 0; i < len(data); i++ {
		if c := data[i]; c == '\n' || c == '\r' {
			if c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			b.line, b.bol, b.chain, b.lead = b.line+1, i+1, 0, true
			continue
		}
		if e := b.step(i); e != nil {
			return b.st, e
		}
	}
	return b.st, nil
}

// byteScan is the state of scanBytes.
type byteScan struct {
	data      []byte
	lim       limits
	st        scanStats
	line, bol int // the current line, and where it begins
	// chain counts the indicators that begin the line; lead is true
	// while no other byte came; seqs and maps are the brackets open.
	chain, seqs, maps int
	lead              bool
}

// step reads the byte at i, which is not a line break.
func (b *byteScan) step(i int) *Error {
	c := b.data[i]
	blank := c == ' ' || c == '\t'
	if !blank && (i == b.bol || isBlank(b.data[i-1]) || isIndicator(c) || isIndicator(b.data[i-1])) {
		if b.st.nodes++; b.lim.nodes > 0 && b.st.nodes > b.lim.nodes {
			return limitError(b.line, i-b.bol+1, nodesMsg(b.lim.nodes))
		}
	}
	indicator := b.lead && (c == '-' || c == '?' || c == ':') && (i+1 == len(b.data) || isBlank(b.data[i+1]))
	b.lead = b.lead && (blank || indicator)
	switch {
	case blank:
		return nil
	case indicator:
		b.chain++
	case c == '[':
		b.seqs++
	case c == '{':
		b.maps++
	case c == ']' && b.seqs > 0:
		b.seqs--
		return nil
	case c == '}' && b.maps > 0:
		b.maps--
		return nil
	default:
		return nil
	}
	d := 1 + b.chain + b.seqs + b.maps
	b.st.depth, b.st.flow = max(b.st.depth, d), max(b.st.flow, b.seqs+b.maps)
	if b.lim.depth > 0 && d > b.lim.depth {
		return limitError(b.line, i-b.bol+1, depthMsg(d, b.lim.depth))
	}
	return nil
}

// isIndicator reports whether c may make a token of its own.
func isIndicator(c byte) bool { return strings.IndexByte(indicators, c) >= 0 }

// isBlank reports whether c separates words: space, tab, a line break, or
// NUL (which the YAML library takes for the end).
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0 }

// level is a block (indented) collection open on the current path: the
// column of its entries and how many were seen. nested marks one that
// opened at the column of the collection holding it: a sequence under a
// bare "key:" ("- item" below it at the same column), or, keys set, a
// mapping under a bare "-" ("key: value" below it at the same column).
type level struct {
	col, entries int
	nested, keys bool
}

// walker measures nesting and entries from the YAML library's tokens.
type walker struct {
	lim  limits
	open []level // the block collections open on the current path
	// bare is true when the last value-bearing token was an indicator or a
	// key's ":": a line that follows at the same column nests in it.
	bare       bool
	seqs, maps int // brackets open
	st         scanStats
	err        *Error
}

// walkTokens checks the nesting and the entries of tokens against lim.
// Bracket nesting is exact. Indented nesting is read as the parser reads
// it: a token that begins a line enters the collection of its column, an
// indicator ("-", "?") with a node after it on the same line opens a level
// at that node's column, and a line at the column of a bare "key:" or "-"
// above it nests in it.
func walkTokens(tokens token.Tokens, lim limits) (scanStats, *Error) {
	w := &walker{lim: lim}
	line, indicator, skip := 0, false, false
	for _, tk := range tokens {
		if w.err != nil {
			break
		}
		if skip { // the name of an anchor or alias, a block scalar's text
			skip = false
			continue
		}
		if tk.Type == token.CommentType || tk.Position == nil {
			continue
		}
		p := tk.Position
		flow := w.seqs+w.maps > 0
		switch {
		case tk.Type == token.DocumentHeaderType || tk.Type == token.DocumentEndType:
			w.open, w.bare, line, indicator = w.open[:0], false, p.Line, false
			continue
		case !flow && p.Line != line:
			line = p.Line
			if tk.Type != token.MappingValueType { // a ":" that begins a line is the value of the key above
				w.enter(p, tk.Type == token.SequenceEntryType)
			}
		case !flow && indicator:
			w.enter(p, false)
		}
		indicator, skip = w.read(tk)
	}
	return w.st, w.err
}

// read takes in what tk, at its place, says of the nesting. indicator is
// true for "-" and "?"; skip for a token whose next one is part of it (an
// anchor's or alias's name, a block scalar's text).
func (w *walker) read(tk *token.Token) (indicator, skip bool) {
	switch tk.Type {
	case token.SequenceEntryType, token.MappingKeyType:
		w.bare = true
		return true, false
	case token.MappingValueType:
		w.bare = true
	case token.SequenceStartType:
		w.seqs++
		w.bare = false
		w.deeper(tk.Position)
	case token.MappingStartType:
		w.maps++
		w.bare = false
		w.deeper(tk.Position)
	case token.SequenceEndType:
		w.seqs = max(w.seqs-1, 0)
	case token.MappingEndType:
		w.maps = max(w.maps-1, 0)
	case token.AnchorType:
		return false, true
	case token.TagType, token.DirectiveType:
	case token.AliasType, token.LiteralType, token.FoldedType:
		w.bare = false
		return false, true
	default:
		w.bare = false
	}
	return false, false
}

// enter opens (or continues) the block collection whose entries start at
// p's column: deeper columns close, an equal one gets one more entry. A
// line at the column of a bare indicator or key above it opens a level
// (the YAML library nests it there). Such a level closes at the first line
// of its column that does not follow a bare line and is of the other kind:
// a sequence's at a line that does not begin with "-" (dash), a mapping's
// (one opened under a bare "-") at a line that does.
func (w *walker) enter(p *token.Position, dash bool) {
	col := p.Column
	for n := len(w.open); n > 0; n = len(w.open) {
		top := w.open[n-1]
		if top.col < col || top.col == col && (!top.nested || w.bare || dash != top.keys) {
			break
		}
		w.open = w.open[:n-1]
	}
	if n := len(w.open); n > 0 && w.open[n-1].col == col && !w.bare {
		top := &w.open[n-1]
		top.entries++
		w.st.entries = max(w.st.entries, top.entries)
		if w.lim.entries > 0 && top.entries > w.lim.entries && w.err == nil {
			w.err = limitError(p.Line, p.Column, entriesMsg(w.lim.entries))
		}
		return
	}
	n := len(w.open)
	nested := n > 0 && w.open[n-1].col == col
	w.open = append(w.open, level{col: col, entries: 1, nested: nested, keys: nested && !dash})
	w.st.entries = max(w.st.entries, 1)
	w.deeper(p)
}

// deeper checks the nesting after a level or a bracket opened at p.
func (w *walker) deeper(p *token.Position) {
	d := len(w.open) + w.seqs + w.maps
	w.st.depth, w.st.flow = max(w.st.depth, d), max(w.st.flow, w.seqs+w.maps)
	if w.lim.depth > 0 && d > w.lim.depth && w.err == nil {
		w.err = limitError(p.Line, p.Column, depthMsg(d, w.lim.depth))
	}
}

// SizeText writes n bytes as "8 MiB", "512 KiB" or "1000 bytes", for
// messages and reports.
func SizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
