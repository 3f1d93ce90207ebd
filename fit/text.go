package fit

import (
	"strings"
	"unicode/utf8"
)

// counts are what the estimator reads in a text: one pass, no allocation.
type counts struct {
	words, letters int // runs of Latin-script letters, and their letters
	foreign        int // of the words: ones that mark a language other than English
	digitRuns3     int // digit runs counted in groups of up to three digits
	digits         int
	punct          int // ASCII punctuation and symbols
	newlines       int
	cyrillic       int // Greek, Cyrillic, Armenian letters
	indic          int // Devanagari to Sinhala (U+0900-U+0DFF)
	otherScript    int // Hebrew, Arabic, Thai, Georgian, Ethiopic, ... (U+0590-U+1DFF, less Indic)
	cjk            int // Han, kana, CJK punctuation, full-width forms
	hangul         int
	symbols        int // everything else: emoji, typographic punctuation, Latin-1 symbols
}

// class is what kind of character a rune is, for scan.
type class uint8

const (
	cSpace    class = iota // space, tab, carriage return
	cLetter                // ASCII letter
	cAccented              // Latin letter beyond ASCII
	cDigit
	cNewline
	cPunct
	cCyrillic
	cHangul
	cIndic
	cOtherScript
	cCJK
	cSymbol
	cNonASCII // a byte of a rune beyond ASCII: see classOf
)

// ascii is the class of each ASCII byte; cNonASCII for the others.
var ascii = func() (t [256]class) {
	for b := range t {
		switch {
		case b >= utf8.RuneSelf:
			t[b] = cNonASCII
		case b|0x20 >= 'a' && b|0x20 <= 'z':
			t[b] = cLetter
		case b >= '0' && b <= '9':
			t[b] = cDigit
		case b == '\n':
			t[b] = cNewline
		case b == ' ' || b == '\t' || b == '\r':
			t[b] = cSpace
		default:
			t[b] = cPunct
		}
	}
	return t
}()

// classOf is the class of a rune beyond ASCII.
func classOf(r rune) class {
	switch {
	case r >= 0xC0 && r <= 0x36F && r != 0xD7 && r != 0xF7 || r >= 0x1E00 && r <= 0x1EFF:
		return cAccented
	case r >= 0x370 && r <= 0x58F:
		return cCyrillic
	case r >= 0x1100 && r <= 0x11FF || r >= 0x3130 && r <= 0x318F || r >= 0xAC00 && r <= 0xD7AF:
		return cHangul
	case r >= 0x900 && r <= 0xDFF:
		return cIndic
	case r >= 0x590 && r <= 0x1DFF:
		return cOtherScript
	case r >= 0x2E80 && r <= 0x9FFF || r >= 0xF900 && r <= 0xFAFF || r >= 0xFF00 && r <= 0xFFEF || r >= 0x20000 && r <= 0x3FFFF:
		return cCJK
	}
	return cSymbol
}

// scan counts s. A word is a run of Latin letters (ASCII or accented);
// it is foreign when it holds an accented letter or is one of a few
// function words of other languages that use the Latin script (see
// foreignWord), and not glued to a digit (as hex is).
func scan(s string) (c counts) {
	prevDigit := false
	for i := 0; i < len(s); {
		k, n := ascii[s[i]], 1
		if k == cNonASCII {
			var r rune
			r, n = utf8.DecodeRuneInString(s[i:])
			k = classOf(r)
		}
		switch k {
		case cLetter, cAccented:
			start := i
			var accented bool
			i, accented = wordEnd(s, i)
			c.words++
			if accented {
				c.letters += utf8.RuneCountInString(s[start:i])
			} else {
				c.letters += i - start
			}
			glued := prevDigit || i < len(s) && ascii[s[i]] == cDigit
			if accented || !glued && foreignWord(s[start:i]) {
				c.foreign++
			}
			prevDigit = false
		case cDigit:
			start := i
			for i < len(s) && ascii[s[i]] == cDigit {
				i++
			}
			c.digitRuns3 += (i - start + 2) / 3
			c.digits += i - start
			prevDigit = true
		default:
			c.add(k)
			i += n
			prevDigit = false
		}
	}
	return c
}

// wordEnd returns where the word of Latin letters at s[i:] ends, and
// whether it has letters beyond ASCII.
func wordEnd(s string, i int) (end int, accented bool) {
	for i < len(s) {
		for i < len(s) && ascii[s[i]] == cLetter {
			i++
		}
		if i == len(s) || ascii[s[i]] != cNonASCII {
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if classOf(r) != cAccented {
			break
		}
		accented = true
		i += n
	}
	return i, accented
}

// add counts one character of class k (not a letter or a digit).
func (c *counts) add(k class) {
	switch k {
	case cNewline:
		c.newlines++
	case cPunct:
		c.punct++
	case cCyrillic:
		c.cyrillic++
	case cHangul:
		c.hangul++
	case cIndic:
		c.indic++
	case cOtherScript:
		c.otherScript++
	case cCJK:
		c.cjk++
	case cSymbol:
		c.symbols++
	}
}

// foreignWord reports whether w, an ASCII word, is a common function word
// of a Latin-script language other than English (Italian, Spanish,
// Portuguese, French, German, Dutch, the Scandinavian languages,
// Indonesian) that is rare in English text and code. Such text costs
// English-trained tokenizers more per word than English does.
func foreignWord(w string) bool {
	if len(w) > 8 {
		return false
	}
	k := key(w)
	for h := slot(k); foreignSet[h] != 0; h++ {
		if foreignSet[h] == k {
			return true
		}
	}
	return false
}

// slot is where key k is looked for first in foreignSet.
func slot(k uint64) uint8 { return uint8((k * 0x9E3779B97F4A7C15) >> 56) }

// key packs an ASCII word of at most 8 letters, in lower case, into a
// number.
func key(w string) uint64 {
	var k uint64
	for i := 0; i < len(w); i++ {
		k = k<<8 | uint64(w[i]|0x20)
	}
	return k
}

// foreignSet holds the keys of the function words foreignWord knows,
// in open addressing (0 is an empty slot; a slot index wraps at 256).
var foreignSet = func() (set [256]uint64) {
	for _, w := range strings.Fields(`
		il lo la le gli di del della che una uno non sono nel alla con
		el los las que por para como pero muy
		est les des et du une dans pour pas qui sur avec ce cette nous vous au aux
		em os uma mais ao da de e
		der die und das ist nicht ein eine mit auf zu den dem von sich auch wir ich es
		het een van en niet zijn och att som og ikke
		yang dan ini itu dengan untuk tidak akan ada`) {
		h := slot(key(w))
		for set[h] != 0 {
			h++
		}
		set[h] = key(w)
	}
	return set
}()

// cost is what c costs by p: the tokens of the text, and the part of them
// in scripts the reference set has one sample of each (Indic and other
// scripts), whose error is p.scriptErr rather than p.textErr.
func (p *profile) cost(c counts) (tokens, script float64) {
	// The share of foreign words decides how the words are priced: none
	// up to 5% (a name, a loan word), all from 15% on.
	w := 0.0
	if c.words > 0 {
		w = (float64(c.foreign)/float64(c.words) - 0.05) / 0.10
		w = min(1, max(0, w))
	}
	words, letters := float64(c.words), float64(c.letters)
	tokens = (1-w)*(p.word*words+p.letter*letters) + w*(p.fword*words+p.fletter*letters) +
		p.digit3*float64(c.digitRuns3) + p.digit*float64(c.digits) +
		p.punct*float64(c.punct) + p.newline*float64(c.newlines) +
		p.cyrillic*float64(c.cyrillic) + p.cjk*float64(c.cjk) + p.hangul*float64(c.hangul) +
		p.symbol*float64(c.symbols)
	script = p.indic*float64(c.indic) + p.otherScript*float64(c.otherScript)
	return tokens, script
}
