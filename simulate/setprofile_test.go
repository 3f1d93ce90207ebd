package simulate

import (
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// SetProfile switches a running provider's faults: the requests after it
// draw from the new Profile, scripts still come first, and nil heals it.
func TestServer_SetProfileSwitchesFaultsWhileRunning(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(ServerError)}, Provider{Name: "q"})
		if err := r.srv.SetProfile("p", Always(Fault{Kind: DailyQuota})); err != nil {
			t.Fatal(err)
		}
		got := r.statuses(t, "p", "m", 3) // the script's 500 first
		if err := r.srv.SetProfile("p", nil); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.statuses(t, "p", "m", 2)...)
		got = append(got, r.statuses(t, "q", "m", 1)...)
		if diff := cmp.Diff([]int{500, 429, 429, 200, 200, 200}, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
	})
}

func TestServer_SetProfileRefusesWhatNewServerRefuses(t *testing.T) {
	srv, err := NewServer(Provider{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for name, err := range map[string]error{
		"unknown provider": srv.SetProfile("nobody", nil),
		"unknown kind":     srv.SetProfile("p", Always(Fault{Kind: "dry"})),
		"over 1":           srv.SetProfile("p", &Profile{Rules: []Rule{{Chances: []Chance{{Fault{Kind: OK}, 0.7}, {Fault{Kind: Hang}, 0.7}}}}}),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// OnRecord sees every request as Stats records it, and the same seed after
// a SetProfile draws the same faults again.
func TestServer_OnRecordAndSetProfileStartOver(t *testing.T) {
	day := &Profile{Seed: 7, Rules: []Rule{{Chances: []Chance{{Fault{Kind: RateLimit}, 0.5}}}}}
	r := newRig(t, "memory", Provider{Name: "p", Profile: day})
	var mu sync.Mutex
	var seen []Kind
	r.srv.OnRecord = func(rec Record) {
		mu.Lock()
		seen = append(seen, rec.Kind)
		mu.Unlock()
	}
	first := r.statuses(t, "p", "m", 8)
	if err := r.srv.SetProfile("p", day); err != nil {
		t.Fatal(err)
	}
	if again := r.statuses(t, "p", "m", 8); !cmp.Equal(first, again) {
		t.Errorf("the same profile set again drew %v, first %v", again, first)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(kindsServed(r.srv.Stats(), "p", "m"), seen); diff != "" {
		t.Errorf("OnRecord (-stats +seen):\n%s", diff)
	}
}

// Kinds lists every kind a Fault takes, and a copy: a caller cannot change
// what the Server accepts.
func TestKinds_EveryKindACopy(t *testing.T) {
	ks := Kinds()
	if len(ks) != len(kinds) || ks[0] != OK || !slices.Contains(ks, NoDone) {
		t.Fatalf("Kinds() = %v", ks)
	}
	for _, k := range ks {
		if err := validateFaults("test", []Fault{{Kind: k}}); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	ks[0] = "dry"
	if Kinds()[0] != OK {
		t.Error("Kinds returned the table itself")
	}
}
