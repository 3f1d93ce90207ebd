package exchange

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestErrorText(t *testing.T) {
	long := strings.Repeat("é", MaxErrorText+5)
	tests := []struct{ name, body, want string }{
		{"empty", " \r\n ", ""},
		{"plain text first line", "\n\n  upstream connect error  \nreset reason: overflow\n", "upstream connect error"},
		{"HTML title", "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body><h1>other</h1></body></html>",
			"413 Request Entity Too Large"},
		{"upper-case tags, title folded", "<!DOCTYPE HTML>\n<HTML><HEAD><TITLE>ERROR: The request\n  could not be satisfied</TITLE>", "ERROR: The request could not be satisfied"},
		{"h1 when the title is empty", "<html><title> </title><h1>502 <b>Bad</b> Gateway</h1>", "502 Bad Gateway"},
		// Tags become spaces, which are not folded.
		{"text when no title or h1", "<html><body><p>Bad</p><p>Gateway</p></body></html>", "Bad  Gateway"},
		{"unclosed title", "<title>never closed", "never closed"},
		{"invalid UTF-8 in a tag", "<title\xff>", ""},
		{"invalid UTF-8 in the text", "<title>a\xffb</title>", "a\uFFFDb"},
		{"cut", long, strings.Repeat("é", MaxErrorText-1) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorText([]byte(tt.body)); got != tt.want {
				t.Errorf("ErrorText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestElementStripTagsFirstLine(t *testing.T) {
	page := "<HTML><Title lang=en>A <i>b</i></TITLE><h1>c</h1>"
	if got := Element(page, "title"); got != "A <i>b</i>" {
		t.Errorf("Element(title) = %q", got)
	}
	if got := Element(page, "h2"); got != "" {
		t.Errorf("Element(h2) = %q, want empty", got)
	}
	if got := StripTags("a<br>b<p>c", '\n'); got != "a\nb\nc" {
		t.Errorf("StripTags = %q", got)
	}
	if got := FirstLine("\n \t\n x \ny"); got != "x" {
		t.Errorf("FirstLine = %q", got)
	}
	if got := CutText("short"); got != "short" {
		t.Errorf("CutText = %q", got)
	}
}

// FuzzErrorText: never a panic, always valid UTF-8 of at most MaxErrorText
// runes.
func FuzzErrorText(f *testing.F) {
	for _, s := range []string{"", "<title\xff>", "<TITLE>x</title>", "<h1>\xff</h1>", "<<<>>>", "a\nb", "<title>İİİ</title>"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := ErrorText(body)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxErrorText {
			t.Fatalf("ErrorText = %q", got)
		}
	})
}
