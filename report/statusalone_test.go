package report

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatusAlone counts the failures read from the status alone, once
// each, whether the report keeps every target apart or folds some (Read's
// several passes must not count a line twice).
func TestStatusAlone(t *testing.T) {
	var b strings.Builder
	for i := range 6 {
		reason := "503 upstream went away; read from the status alone"
		status := "http_503"
		if i%2 == 1 {
			reason, status = "429 rate limited; retry in 2s", "http_429"
		}
		fmt.Fprintf(&b, `{"time":"2025-06-01T10:00:0%d.000Z","route":"default","provider":"p%d","model":"m","status":%q,"kind":"transient","reason":%q}`+"\n",
			i, i, status, reason)
	}
	// An answer and a skip never count, whatever their reason says.
	b.WriteString(`{"time":"2025-06-01T10:00:07.000Z","route":"default","provider":"p0","model":"m","status":"ok","reason":"read from the status alone"}` + "\n")
	b.WriteString(`{"time":"2025-06-01T10:00:08.000Z","route":"default","provider":"p0","model":"m","status":"skipped_parked","reason":"read from the status alone"}` + "\n")
	for _, top := range []int{0, 2} {
		s, err := Read([]Source{{Name: "stdin", R: strings.NewReader(b.String())}}, Options{Top: top})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Report().StatusAlone; got != 3 {
			t.Errorf("top %d: StatusAlone = %d, want 3", top, got)
		}
	}
}
