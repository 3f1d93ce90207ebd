package deploy

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// composeFile is what the test reads of compose.yaml.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command         []string          `yaml:"command"`
	EnvFile         string            `yaml:"env_file"`
	Environment     map[string]string `yaml:"environment"`
	Ports           []string          `yaml:"ports"`
	Volumes         []string          `yaml:"volumes"`
	DependsOn       []string          `yaml:"depends_on"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
	ReadOnly        bool              `yaml:"read_only"`
}

func compose(t *testing.T) composeFile {
	t.Helper()
	docs := yamlDocs(t, "compose.yaml") // anchors and << merged
	if len(docs) != 1 {
		t.Fatalf("compose.yaml: %d documents", len(docs))
	}
	var f composeFile
	decodeYAML(t, docs[0], &f)
	return f
}

// detourServices returns the services that run the detour image, by name.
func (f composeFile) detourServices() []string {
	var names []string
	for name, s := range f.Services {
		if s.Build.Dockerfile != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func TestCompose_ReplicasShareOneRedis(t *testing.T) {
	c := sample(t)
	f := compose(t)
	names := f.detourServices()
	if len(names) < 2 || len(names) > 3 {
		t.Fatalf("compose.yaml runs %d detour replicas (%v), want two or three", len(names), names)
	}
	u, err := url.Parse(c.Store().URL)
	if err != nil {
		t.Fatal(err)
	}
	redis, ok := f.Services[u.Hostname()]
	if !ok || !strings.HasPrefix(redis.Image, "redis:") {
		t.Fatalf("health.store %s: no redis service %q in compose.yaml", c.Store().URL, u.Hostname())
	}
	if u.Port() != "6379" {
		t.Errorf("health.store port %s: the redis image listens on 6379", u.Port())
	}
	for _, name := range names {
		if !slices.Contains(f.Services[name].DependsOn, u.Hostname()) {
			t.Errorf("%s does not depend on %s", name, u.Hostname())
		}
		if env := f.Services[name].Environment["DETOUR_HEALTH_STORE"]; env != "" {
			t.Errorf("%s sets DETOUR_HEALTH_STORE=%s: the replicas must share detour.yaml's Redis", name, env)
		}
	}
}

func TestCompose_PortsPathsAndKeysMatchTheSample(t *testing.T) {
	c := sample(t)
	f := compose(t)
	port := listenPort(t, c)
	hostPorts := map[string]string{}
	ledgers := map[string]string{}
	for _, name := range f.detourServices() {
		s := f.Services[name]
		if df := filepath.Join(s.Build.Context, s.Build.Dockerfile); df != "../deploy/Dockerfile" {
			t.Errorf("%s builds %s, want deploy/Dockerfile from the repository's root", name, df)
		}
		if len(s.Ports) != 1 {
			t.Fatalf("%s: ports %v, want one", name, s.Ports)
		}
		host, container, _ := strings.Cut(s.Ports[0], ":")
		if container != port {
			t.Errorf("%s: ports %s, detour listens on %s", name, s.Ports[0], port)
		}
		if other, dup := hostPorts[host]; dup {
			t.Errorf("%s and %s both publish host port %s", name, other, host)
		}
		hostPorts[host] = name
		if s.Environment["DETOUR_CONFIG"] != configPath || s.Environment["DETOUR_LEDGER"] != ledgerPath {
			t.Errorf("%s: DETOUR_CONFIG %q, DETOUR_LEDGER %q, want %s and %s", name,
				s.Environment["DETOUR_CONFIG"], s.Environment["DETOUR_LEDGER"], configPath, ledgerPath)
		}
		mounts := map[string]string{}
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			mounts[parts[1]] = parts[0]
		}
		if mounts[configPath] != "./detour.yaml" {
			t.Errorf("%s mounts %q at %s, want ./detour.yaml", name, mounts[configPath], configPath)
		}
		vol := mounts[path.Dir(ledgerPath)]
		if _, ok := f.Volumes[vol]; !ok {
			t.Errorf("%s: %s is not on a named volume (%q): the ledger would be lost, or unwritable on a read-only root",
				name, path.Dir(ledgerPath), vol)
		}
		if other, dup := ledgers[vol]; dup {
			t.Errorf("%s and %s write one ledger volume %s: each replica needs its own", name, other, vol)
		}
		ledgers[vol] = name
		if s.EnvFile != "detour.env" {
			t.Errorf("%s: env_file %q, want detour.env (made from detour.env.example)", name, s.EnvFile)
		}
		if !s.ReadOnly {
			t.Errorf("%s: read_only is off; detour writes only its ledger's volume", name)
		}
		grace, err := duration(s.StopGracePeriod)
		if err != nil || grace.Seconds() <= drainSeconds(c) {
			t.Errorf("%s: stop_grace_period %q, want more than drain_delay + drain_timeout (%gs): Docker kills at its end",
				name, s.StopGracePeriod, drainSeconds(c))
		}
	}
	if _, err := os.Stat("detour.env.example"); err != nil {
		t.Error(err)
	}
}
