package cli

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// serve gives back the pages only its start touched before it says where
// it listens: by then fewer of its file's pages are resident than it
// dropped, and it answers as before.
func TestServe_DropsStartUpPages(t *testing.T) {
	_, vars := fixture(t)
	gatewaySection(t, vars)
	base, stderr, proc := serveProcess(t, vars, "--log-level", "debug")
	said := regexp.MustCompile(`start-up pages dropped"? bytes=(\d+)`)
	eventually(t, "serve to say it dropped its start-up pages", func() bool { return said.MatchString(stderr.String()) })
	m := said.FindStringSubmatch(stderr.String())
	dropped, _ := strconv.ParseInt(m[1], 10, 64)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(proc.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var file int64 = -1
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			file, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	if dropped < 1<<20 || file < 0 || file<<10 >= dropped {
		t.Fatalf("dropped %d bytes; RssFile now %d kB", dropped, file)
	}
	if code := chat(base); code != 200 {
		t.Fatalf("after the drop: %d", code)
	}
	t.Logf("dropped %d KiB; RssFile %d kB", dropped>>10, file)
}
