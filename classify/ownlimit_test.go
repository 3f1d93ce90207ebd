package classify

import (
	"fmt"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
)

// Only detour's own limits on a flowing answer are kept out of a target's
// health; the limits that mean the target stayed silent are its failure.
func TestFailure_OwnLimit(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&llm.LimitError{Err: llm.ErrMaxBuffer, Size: 8 << 10}, true},
		{&llm.LimitError{Err: llm.ErrMaxDuration, Limit: time.Minute}, true},
		{&llm.LimitError{Err: llm.ErrHeaderTimeout, Limit: time.Second}, false},
		{&llm.LimitError{Err: llm.ErrFirstTokenTimeout, Limit: time.Second}, false},
		{&llm.LimitError{Err: llm.ErrDeadline}, false},
		{llm.ErrStreamStalled, false},
		{&llm.ProviderError{Status: 429}, false},
	} {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			f := Classify(tc.err, time.Unix(0, 0))
			if got := f.OwnLimit(); got != tc.want {
				t.Errorf("%s (status %s): OwnLimit %v, want %v", tc.err, f.Status, got, tc.want)
			}
		})
	}
}
