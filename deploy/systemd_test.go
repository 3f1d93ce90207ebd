package deploy

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
)

const unitPath = "systemd/detour.service"

// unit reads a systemd unit: each key's values in order, by section.
func unit(t *testing.T, p string) map[string]map[string][]string {
	t.Helper()
	u := map[string]map[string][]string{}
	section := ""
	for i, line := range strings.Split(string(read(t, p)), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q is not KEY=value in a section", p, i+1, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// one returns the last value of key (systemd's rule for single values).
func one(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}

func TestSystemd_UnitRunsTheSampleAndReloadsOnSIGHUP(t *testing.T) {
	c := sample(t)
	s := unit(t, unitPath)["Service"]
	if s == nil {
		t.Fatal("no [Service] section")
	}
	if got, want := one(s["ExecStart"]), binaryPath+" serve --config "+configPath; got != want {
		t.Errorf("ExecStart=%s, want %s", got, want)
	}
	// serve reloads on SIGHUP: all or nothing, and what a reload says goes
	// to the journal.
	if got := strings.Fields(one(s["ExecReload"])); !slices.Contains(got, "-HUP") || !slices.Contains(got, "$MAINPID") {
		t.Errorf("ExecReload=%s: want kill -HUP $MAINPID", one(s["ExecReload"]))
	}
	if got := one(s["EnvironmentFile"]); got != path.Join(path.Dir(configPath), "detour.env") {
		t.Errorf("EnvironmentFile=%s, want detour.env beside the config", got)
	}
	env := map[string]string{}
	for _, e := range s["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	state := "/var/lib/" + one(s["StateDirectory"])
	if env["DETOUR_LEDGER"] != ledgerPath || path.Dir(ledgerPath) != state {
		t.Errorf("DETOUR_LEDGER=%s, StateDirectory=%s: want the ledger at %s, in the state directory", env["DETOUR_LEDGER"],
			one(s["StateDirectory"]), ledgerPath)
	}
	// One machine: the store is SQLite in the state directory (the only
	// place the unit may write), overriding the sample's Redis.
	if v, ok := env["DETOUR_HEALTH_STORE"]; ok {
		spec, err := config.ParseStore(v)
		if err != nil || spec.Kind == health.StoreSQLite && path.Dir(spec.Path) != state {
			t.Errorf("DETOUR_HEALTH_STORE=%s: %v; a SQLite file must be in %s", v, err, state)
		}
	}
	stop, err := duration(one(s["TimeoutStopSec"]))
	if err != nil || stop.Seconds() <= drainSeconds(c) {
		t.Errorf("TimeoutStopSec=%s: want more than drain_delay + drain_timeout (%gs): systemd kills at its end",
			one(s["TimeoutStopSec"]), drainSeconds(c))
	}
	if sig := one(s["KillSignal"]); sig != "" && sig != "SIGTERM" && sig != "SIGINT" {
		t.Errorf("KillSignal=%s: serve drains on SIGTERM or SIGINT", sig)
	}
}

func TestSystemd_UnitIsHardened(t *testing.T) {
	s := unit(t, unitPath)["Service"]
	for k, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"PrivateDevices": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
		"ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "RestrictSUIDSGID": "yes",
		"LockPersonality": "yes", "MemoryDenyWriteExecute": "yes", "SystemCallArchitectures": "native",
		"CapabilityBoundingSet": "",
	} {
		if got, ok := s[k]; !ok || one(got) != want {
			t.Errorf("%s=%q, want %q", k, one(got), want)
		}
	}
	if one(s["DynamicUser"]) != "yes" && one(s["User"]) == "" {
		t.Error("runs as root: set DynamicUser=yes or User=")
	}
	if !slices.Contains(s["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter=%q: want @system-service", s["SystemCallFilter"])
	}
	families := strings.Fields(one(s["RestrictAddressFamilies"]))
	for _, f := range []string{"AF_INET", "AF_INET6"} {
		if !slices.Contains(families, f) {
			t.Errorf("RestrictAddressFamilies=%v: detour needs %s", families, f)
		}
	}
	// The config's directory stays read-only to the service, so the
	// removal marker (CONFIG.allow-removals) cannot be deleted by serve and
	// lets nothing through; a meant removal goes through POST
	// /admin/reload?allow_removals=true, as the unit's comment says.
	for _, rw := range s["ReadWritePaths"] {
		for _, p := range strings.Fields(rw) {
			if strings.HasPrefix(path.Dir(configPath)+"/", strings.TrimPrefix(p, "-")+"/") {
				t.Errorf("ReadWritePaths=%s lets detour write its own config", rw)
			}
		}
	}
	if !strings.Contains(string(read(t, unitPath)), "/admin/reload?allow_removals=true") {
		t.Error("the unit does not say how to reload a meant removal")
	}
}

// systemd-analyze verify, where it is installed, reads the unit as systemd
// would: an unknown key or a value it cannot parse is reported.
func TestSystemd_AnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze")
	}
	// The binary must exist and be executable: any will do.
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(read(t, unitPath)), binaryPath, bin)
	dir := t.TempDir()
	p := filepath.Join(dir, filepath.Base(unitPath))
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", p).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
