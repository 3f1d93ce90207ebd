// Package deploy holds the files that run detour the usual ways (a
// container image, compose, Kubernetes, systemd, a Grafana dashboard) and
// the tests that keep them true to the code: the manifests parse, their
// ports, paths, key variables and probe paths are those of deploy/detour.yaml
// and of the gateway, the Dockerfile builds as `make build` does, and the
// dashboard asks only for metrics a running `detour serve` exports. No
// container engine is needed: what only an engine could check (that the
// image builds, that compose starts) is left to the reader of README.md.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/detourhq/detour/cli"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
)

// update rewrites kubernetes/configmap.yaml from detour.yaml.
var update = flag.Bool("update", false, "write kubernetes/configmap.yaml again from detour.yaml")

// childEnv, set in a re-executed test binary, holds the JSON array of
// arguments it runs detour with: the binary becomes a `detour` process
// (cli.Main, as cmd/detour runs it).
const childEnv = "DETOUR_DEPLOY_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			os.Exit(99)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, argv, cli.Env{})
		stop()
		os.Exit(code)
	}
	flag.Parse()
	os.Exit(m.Run())
}

// The paths every deployment agrees on: where the config and the ledger
// live, and where the binary is installed.
const (
	configPath = "/etc/detour/detour.yaml"
	ledgerPath = "/var/lib/detour/ledger.jsonl"
	binaryPath = "/usr/local/bin/detour"
)

// read returns the file at path (relative to deploy/).
func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sample loads deploy/detour.yaml with detour's own loader.
func sample(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Load("detour.yaml")
	if err != nil {
		t.Fatalf("detour.yaml: %v", err)
	}
	return c
}

// listenPort is the port of the sample's gateway.listen.
func listenPort(t *testing.T, c *config.Config) string {
	t.Helper()
	_, port, ok := strings.Cut(c.Gateway.WithDefaults().Listen, ":")
	if !ok || port == "" {
		t.Fatalf("gateway.listen %q names no port", c.Gateway.Listen)
	}
	return port
}

// drainSeconds is how long a SIGTERM takes at most before serve exits:
// gateway.drain_delay, then drain_timeout.
func drainSeconds(c *config.Config) float64 {
	g := c.Gateway.WithDefaults()
	return max(g.DrainDelay, 0).Seconds() + g.DrainTimeout.Seconds()
}

// keyVars returns the variables the sample names for keys, sorted: every
// provider's key_env, then the gateway's client, admin and metrics keys and
// the Redis password's variable. Serve refuses to start without the
// gateway's (required); a provider without its key is skipped.
func keyVars(c *config.Config) (all, required []string) {
	for _, name := range c.ProviderNames() {
		if p, _ := c.Provider(name); p.KeyEnv != "" {
			all = append(all, p.KeyEnv)
		}
	}
	for _, k := range c.Gateway.Keys {
		if k.KeyEnv != "" {
			required = append(required, k.KeyEnv)
		}
	}
	for _, v := range []string{c.Gateway.AdminKeyEnv, c.Gateway.MetricsKeyEnv, c.Health.StorePasswordEnv} {
		if v != "" {
			required = append(required, v)
		}
	}
	all = append(all, required...)
	slices.Sort(all)
	slices.Sort(required)
	return slices.Compact(all), slices.Compact(required)
}

// testKeys returns a value for each of vars, as serve accepts them: long
// enough, each its own.
func testKeys(vars []string) map[string]string {
	m := map[string]string{}
	for _, v := range vars {
		m[v] = "test-" + strings.ToLower(strings.ReplaceAll(v, "_", "-")) + "-0123456789abcdef"
	}
	return m
}

// yamlDocs decodes every document of a YAML stream into maps, failing on
// a document that does not parse.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := parser.ParseBytes(read(t, path), 0)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]any
	for i, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		var m map[string]any
		if err := yaml.NodeToValue(doc.Body, &m); err != nil {
			t.Fatalf("%s: document %d: %v", path, i+1, err)
		}
		out = append(out, m)
	}
	return out
}

// decodeYAML decodes the document m (one of yamlDocs) into v.
func decodeYAML(t *testing.T, m map[string]any, v any) {
	t.Helper()
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// envFile reads a VAR=value file (detour.env.example): the names, in order.
func envFile(t *testing.T, path string) []string {
	t.Helper()
	var names []string
	for i, line := range strings.Split(string(read(t, path)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: not VAR=value: %q", path, i+1, line)
		}
		names = append(names, name)
	}
	return names
}

func TestSample_PassesDetoursOwnChecks(t *testing.T) {
	c := sample(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	all, _ := keyVars(c)
	keys := testKeys(all)
	getenv := func(k string) string { return keys[k] }
	// What `detour serve` refuses beyond the file itself: keys unset or
	// too short, a listener beyond loopback without client keys.
	if err := c.CheckServe(getenv); err != nil {
		t.Fatalf("detour serve would refuse the sample: %v", err)
	}
	if _, err := c.Build(config.BuildOptions{Getenv: getenv}); err != nil {
		t.Fatal(err)
	}
	if w := c.Warnings(getenv); len(w) > 0 {
		t.Errorf("detour check warns about the sample:\n%s", strings.Join(w, "\n"))
	}
	if err := config.ListenError(c.Gateway.Listen, c.Gateway); err != nil {
		t.Error(err)
	}
	if config.LoopbackAddr(c.Gateway.WithDefaults().Listen) {
		t.Errorf("gateway.listen %s is loopback: a container or a pod would be unreachable", c.Gateway.Listen)
	}
	// The fleet shares Redis: the host compose.yaml and
	// kubernetes/redis.yaml name.
	if s := c.Store(); s.Kind != health.StoreRedis || !strings.HasPrefix(s.URL, "redis://redis:6379/") {
		t.Errorf("health.store = %+v, want redis://redis:6379/N (the redis of compose.yaml and kubernetes/redis.yaml)", s)
	}
}

// The keys detour.yaml names are the ones the env file (compose, systemd)
// and the Kubernetes Secret hold: no more, no fewer.
func TestSample_KeyVariablesMatchEveryDeployment(t *testing.T) {
	all, _ := keyVars(sample(t))
	if got := envFile(t, "detour.env.example"); !slices.Equal(sorted(got), all) {
		t.Errorf("detour.env.example names %v, detour.yaml %v", sorted(got), all)
	}
	var secret struct {
		Kind     string            `yaml:"kind"`
		Data     map[string]string `yaml:"data"`
		Strings  map[string]string `yaml:"stringData"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	docs := yamlDocs(t, "kubernetes/secret.yaml")
	if len(docs) != 1 {
		t.Fatalf("kubernetes/secret.yaml: %d documents, want 1", len(docs))
	}
	decodeYAML(t, docs[0], &secret)
	var names []string
	for k := range secret.Strings {
		names = append(names, k)
	}
	for k := range secret.Data {
		names = append(names, k)
	}
	if secret.Kind != "Secret" || !slices.Equal(sorted(names), all) {
		t.Errorf("kubernetes/secret.yaml: %s with %v, want a Secret with %v", secret.Kind, sorted(names), all)
	}
	for k, v := range secret.Strings {
		if v != "" {
			t.Errorf("kubernetes/secret.yaml: %s holds a value: a sample ships no key, not even a placeholder", k)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// configMapYAML is kubernetes/configmap.yaml made from detour.yaml.
func configMapYAML(sample []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`# deploy/detour.yaml, for the detour pods (deployment.yaml mounts it at
# /etc/detour/detour.yaml). Made by ` + "`go test ./deploy -update`" + ` from
# deploy/detour.yaml: edit that file, not this one (the test fails while the
# two differ). After ` + "`kubectl apply`" + `, the file in the pods changes within a
# minute or so; then reload each pod: POST /admin/reload with the admin key.
apiVersion: v1
kind: ConfigMap
metadata:
  name: detour-config
  labels:
    app.kubernetes.io/name: detour
data:
  detour.yaml: |
`)
	for _, line := range strings.SplitAfter(string(sample), "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString(strings.TrimLeft(line, " \t"))
			continue
		}
		b.WriteString("    " + line)
	}
	return b.Bytes()
}

func TestConfigMap_CarriesTheSampleWordForWord(t *testing.T) {
	want := configMapYAML(read(t, "detour.yaml"))
	const path = "kubernetes/configmap.yaml"
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, path); !bytes.Equal(got, want) {
		t.Fatalf("%s is not detour.yaml's: run go test ./deploy -update", path)
	}
	var cm struct {
		Kind     string            `yaml:"kind"`
		Data     map[string]string `yaml:"data"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	decodeYAML(t, yamlDocs(t, path)[0], &cm)
	if cm.Data[filepath.Base(configPath)] != string(read(t, "detour.yaml")) {
		t.Errorf("%s: data[%q] does not parse back to detour.yaml", path, filepath.Base(configPath))
	}
}

// Every YAML file under deploy/ parses.
func TestManifests_Parse(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("kubernetes/*.yaml")
	files = append(files, more...)
	if len(files) < 6 {
		t.Fatalf("found %v: want detour.yaml, compose.yaml and kubernetes/*.yaml", files)
	}
	for _, f := range files {
		for i, doc := range yamlDocs(t, f) {
			if f == "detour.yaml" || f == "compose.yaml" {
				continue
			}
			if doc["apiVersion"] == nil || doc["kind"] == nil || doc["metadata"] == nil {
				t.Errorf("%s: document %d has no apiVersion, kind or metadata", f, i+1)
			}
		}
	}
}

// errMissing marks a field a check needs and did not find.
var errMissing = errors.New("missing")

// duration reads a Docker or systemd duration: "45s", "1m30s" or seconds.
func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errMissing
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	var n float64
	if _, err := fmt.Sscanf(s, "%g", &n); err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return time.Duration(n * float64(time.Second)), nil
}
