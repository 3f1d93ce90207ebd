package recordstest

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

// Reserve checks Records.Reserve on a and b, two handles on one store (two
// processes, two replicas; or one store twice): a reservation that fits is
// added, one that does not is refused with the sum as it is and nothing
// written, the limit itself fits, an Add gives room back, a new counter
// expires after its ttl; and 100 reservers of $0.02 racing from both
// handles for a limit of $0.50 get 25 reservations between them, never a
// sum past the limit, also while the winners settle (an Add of what they
// did not spend) and a second wave races for the room given back. It uses
// "spend:" keys and real time (a 5 ms expiry).
func Reserve(t *testing.T, a, b health.Records) {
	t.Helper()
	const k = "spend:check"
	reserve := func(s health.Records, amount, limit float64, wantSum float64, wantOK bool) {
		t.Helper()
		sum, ok, err := s.Reserve(k, amount, limit, time.Hour)
		if err != nil || ok != wantOK || !near(sum, wantSum) {
			t.Fatalf("Reserve(%g, limit %g) = %g %v %v, want %g %v", amount, limit, sum, ok, err, wantSum, wantOK)
		}
	}
	reserve(a, 0.3, 0.5, 0.3, true)
	reserve(b, 0.3, 0.5, 0.3, false) // refused: the sum as it is
	if v, ok, _ := b.Get(k); !ok || string(v) != "0.3" {
		t.Fatalf("a refused reservation wrote: %q %v", v, ok)
	}
	reserve(b, 0.2, 0.5, 0.5, true) // up to the limit itself
	reserve(a, 1e-6, 0.5, 0.5, false)
	if sum, err := a.Add(k, -0.2, time.Hour); err != nil || !near(sum, 0.3) {
		t.Fatalf("an Add giving $0.20 back: %g %v", sum, err)
	}
	reserve(b, 0.2, 0.5, 0.5, true)

	// A new counter keeps its ttl; once expired it starts again at zero.
	if _, ok, err := a.Reserve("spend:lapsing", 0.4, 0.5, 5*time.Millisecond); !ok || err != nil {
		t.Fatalf("a new counter: %v %v", ok, err)
	}
	time.Sleep(20 * time.Millisecond)
	if sum, ok, err := b.Reserve("spend:lapsing", 0.5, 0.5, time.Hour); !ok || err != nil || !near(sum, 0.5) {
		t.Fatalf("an expired counter: %g %v %v, want it to start again at 0", sum, ok, err)
	}

	// 100 reservers race for $0.50 in $0.02 steps: 25 win.
	const race, limit, worst = "spend:race", 0.5, 0.02
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			sum, ok, err := s.Reserve(race, worst, limit, time.Hour)
			if err != nil || sum > limit+health.ReserveSlack {
				t.Errorf("Reserve: %g %v %v", sum, ok, err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 25 {
		t.Fatalf("%d of 100 reservations of $%g under $%g were taken, want 25", won.Load(), worst, limit)
	}
	// The 25 settle at half their worst case while 100 more race for the
	// room they give back: never past the limit, and the sum is what was
	// spent and reserved.
	var again atomic.Int32
	for i := range 125 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if i < 25 {
				if _, err := s.Add(race, -worst/2, time.Hour); err != nil {
					t.Error(err)
				}
				return
			}
			sum, ok, err := s.Reserve(race, worst, limit, time.Hour)
			if err != nil || sum > limit+health.ReserveSlack {
				t.Errorf("Reserve: %g %v %v", sum, ok, err)
			}
			if ok {
				again.Add(1)
			}
		})
	}
	wg.Wait()
	v, _, err := a.Get(race)
	must(t, err)
	if n := again.Load(); n > 12 || !near(parse(t, v), 25*worst/2+float64(n)*worst) {
		t.Fatalf("the sum is %s after %d more reservations, want $0.25 spent plus $%g each, at most 12", v, n, worst)
	}
}

// near says whether two sums of dollars are equal but for floating
// point's error.
func near(x, y float64) bool { return math.Abs(x-y) <= health.ReserveSlack }

func parse(t *testing.T, v []byte) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		t.Fatalf("the counter holds %q: %v", v, err)
	}
	return f
}
