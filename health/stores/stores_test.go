package stores

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

func TestOpen_EachKind(t *testing.T) {
	now := time.Now()
	o := Options{Settings: health.Settings{FailureThreshold: 2}}

	hb, closeStore, err := Open(health.StoreSpec{Kind: health.StoreMemory}, o)
	if err != nil || hb.Settings().FailureThreshold != 2 || hb.StoreStatus().Kind != "memory" {
		t.Fatalf("memory: %v, %+v", err, hb.StoreStatus())
	}
	closeStore()

	path := filepath.Join(t.TempDir(), "health.db")
	hb, closeStore, err = Open(health.StoreSpec{Kind: health.StoreSQLite, Path: path}, o)
	if err != nil {
		t.Fatal(err)
	}
	hb.Park("p/m", now.Add(time.Hour), "test", now)
	closeStore()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no SQLite file: %v", err)
	}
	again, closeAgain, _ := Open(health.StoreSpec{Kind: health.StoreSQLite, Path: path}, o)
	defer closeAgain()
	if st, _ := again.State("p/m", now); st != health.Open {
		t.Fatalf("a park in the SQLite file reads %s in the next Open, want open", st)
	}

	if hb, _, err := Open(health.StoreSpec{Kind: health.StoreSQLite}, o); err != nil || hb.StoreStatus().Kind != "memory" {
		t.Fatalf("sqlite with no path: %v, %+v; want memory", err, hb.StoreStatus())
	}
	if _, _, err := Open(health.StoreSpec{Kind: health.StoreRedis, URL: "redis://%zz"}, o); err == nil {
		t.Fatal("a Redis URL that cannot be read: no error")
	}
}
