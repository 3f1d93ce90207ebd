package deploy

import (
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// object is what the test reads of a Kubernetes object.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas int `yaml:"replicas"`
		// Selector is a Deployment's {matchLabels: ...} or a Service's
		// labels: see selects.
		Selector map[string]any `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// selects reports whether o's selector (a Deployment's matchLabels, a
// Service's labels) selects labels.
func (o object) selects(labels map[string]string) bool {
	sel := o.Spec.Selector
	if m, ok := sel["matchLabels"].(map[string]any); ok {
		sel = m
	}
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

type podSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir              any `yaml:"emptyDir"`
		PersistentVolumeClaim any `yaml:"persistentVolumeClaim"`
	} `yaml:"volumes"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec any `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Limits map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
	TimeoutSeconds   int `yaml:"timeoutSeconds"`
}

// kube reads every object under kubernetes/, by kind and name.
func kube(t *testing.T) map[string]object {
	t.Helper()
	files, _ := filepath.Glob("kubernetes/*.yaml")
	objs := map[string]object{}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			var o object
			decodeYAML(t, doc, &o)
			key := o.Kind + "/" + o.Metadata.Name
			if _, dup := objs[key]; dup {
				t.Errorf("%s: %s twice", f, key)
			}
			objs[key] = o
		}
	}
	for _, want := range []string{"Deployment/detour", "Service/detour", "ConfigMap/detour-config", "Secret/detour-keys", "Deployment/redis", "Service/redis"} {
		if _, ok := objs[want]; !ok {
			t.Fatalf("kubernetes/: no %s", want)
		}
	}
	return objs
}

// detourContainer returns the Deployment's detour container.
func detourContainer(t *testing.T, d object) container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("Deployment/detour: %d containers, want one", len(cs))
	}
	return cs[0]
}

// portNumber resolves a probe's or a Service's port (a number or a name
// of c's ports).
func portNumber(c container, p any) int {
	switch v := p.(type) {
	case uint64:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	case float64:
		return int(v)
	case string:
		for _, cp := range c.Ports {
			if cp.Name == v {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

func TestKubernetes_DeploymentMatchesTheSampleAndTheGateway(t *testing.T) {
	c := sample(t)
	objs := kube(t)
	d := objs["Deployment/detour"]
	ct := detourContainer(t, d)
	port, _ := strconv.Atoi(listenPort(t, c))
	if d.Spec.Replicas < 2 {
		t.Errorf("replicas %d: the Redis store is there for two or more", d.Spec.Replicas)
	}
	if !d.selects(d.Spec.Template.Metadata.Labels) {
		t.Errorf("the selector %v does not select the pods %v", d.Spec.Selector, d.Spec.Template.Metadata.Labels)
	}
	if len(ct.Ports) != 1 || ct.Ports[0].ContainerPort != port {
		t.Errorf("container ports %+v, gateway.listen's port is %d", ct.Ports, port)
	}
	if !slices.Equal(ct.Args, []string{"serve", "--config", configPath}) {
		t.Errorf("args %q, want serve --config %s", ct.Args, configPath)
	}

	// The probes: the paths the gateway serves, on its port.
	for _, p := range []struct {
		name string
		pr   *probe
		path string
	}{{"readinessProbe", ct.ReadinessProbe, "/readyz"}, {"livenessProbe", ct.LivenessProbe, "/healthz"}} {
		if p.pr == nil || p.pr.HTTPGet == nil {
			t.Errorf("no %s.httpGet", p.name)
			continue
		}
		if p.pr.HTTPGet.Path != p.path || portNumber(ct, p.pr.HTTPGet.Port) != port {
			t.Errorf("%s GET %s on port %v, want %s on %d", p.name, p.pr.HTTPGet.Path, p.pr.HTTPGet.Port, p.path, port)
		}
	}

	// The drain: out of the Service's endpoints within drain_delay, killed
	// only after drain_delay + drain_timeout (+ a preStop sleep).
	g := c.Gateway.WithDefaults()
	if r := ct.ReadinessProbe; r != nil {
		// Kubernetes' defaults for what is left out: 10 s, 3, 1 s.
		period, fails, timeout := orDefault(r.PeriodSeconds, 10), orDefault(r.FailureThreshold, 3), orDefault(r.TimeoutSeconds, 1)
		if float64(period*fails+timeout) > g.DrainDelay.Seconds() {
			t.Errorf("readiness notices a drain after up to %ds (period %d x %d failures + timeout %d), past drain_delay %s: "+
				"requests would meet a closed listener", period*fails+timeout, period, fails, timeout, g.DrainDelay)
		}
	}
	preStop := 0
	if ps := ct.Lifecycle.PreStop; ps != nil {
		if ps.Exec != nil {
			t.Error("preStop exec: the distroless image has no shell or sleep to run")
		}
		if ps.Sleep != nil {
			preStop = ps.Sleep.Seconds
		}
	}
	grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || float64(*grace-preStop) <= drainSeconds(c) {
		t.Errorf("terminationGracePeriodSeconds %v (less a preStop of %ds) is not above drain_delay + drain_timeout (%gs): "+
			"the kubelet would kill requests the drain promises to finish", deref(grace), preStop, drainSeconds(c))
	}

	// Keys from the Secret; config from the ConfigMap, mounted as a
	// directory so that an edit reaches the pods; the ledger on a volume.
	if len(ct.EnvFrom) != 1 || ct.EnvFrom[0].SecretRef == nil || ct.EnvFrom[0].SecretRef.Name != "detour-keys" {
		t.Errorf("envFrom %+v, want the Secret detour-keys", ct.EnvFrom)
	}
	env := map[string]string{}
	for _, e := range ct.Env {
		env[e.Name] = e.Value
	}
	if env["DETOUR_LEDGER"] != ledgerPath {
		t.Errorf("DETOUR_LEDGER %q, want %s", env["DETOUR_LEDGER"], ledgerPath)
	}
	volumes := map[string]string{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			volumes[v.Name] = "ConfigMap/" + v.ConfigMap.Name
		case v.EmptyDir != nil || v.PersistentVolumeClaim != nil:
			volumes[v.Name] = "writable"
		}
	}
	mounts := map[string]string{}
	for _, m := range ct.VolumeMounts {
		if m.SubPath != "" {
			t.Errorf("volumeMount %s uses subPath: an edited ConfigMap never reaches a subPath mount", m.Name)
		}
		mounts[m.MountPath] = volumes[m.Name]
	}
	if mounts[path.Dir(configPath)] != "ConfigMap/detour-config" {
		t.Errorf("%s is not the ConfigMap detour-config (%q)", path.Dir(configPath), mounts[path.Dir(configPath)])
	}
	if mounts[path.Dir(ledgerPath)] != "writable" {
		t.Errorf("%s is not on a writable volume: the ledger cannot be written on a read-only root", path.Dir(ledgerPath))
	}

	// Limits.
	sc := ct.SecurityContext
	if !d.Spec.Template.Spec.SecurityContext.RunAsNonRoot || !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("securityContext: want runAsNonRoot, readOnlyRootFilesystem and no privilege escalation")
	}
	if limit, gml := bytesOf(ct.Resources.Limits["memory"]), bytesOf(env["GOMEMLIMIT"]); limit == 0 || (gml != 0 && gml >= limit) {
		t.Errorf("memory limit %q, GOMEMLIMIT %q: want a limit, and GOMEMLIMIT below it", ct.Resources.Limits["memory"], env["GOMEMLIMIT"])
	}
}

// orDefault returns v, or def when v is 0 (left out).
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// bytesOf reads a quantity like 512Mi (Kubernetes) or 450MiB (Go); 0 when
// it is not one.
func bytesOf(s string) int64 {
	m := regexp.MustCompile(`^(\d+)(Ki|Mi|Gi|KiB|MiB|GiB)?$`).FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	switch strings.TrimSuffix(m[2], "B") {
	case "Ki":
		n <<= 10
	case "Mi":
		n <<= 20
	case "Gi":
		n <<= 30
	}
	return n
}

func TestKubernetes_ServicesReachTheirPods(t *testing.T) {
	c := sample(t)
	objs := kube(t)
	d := objs["Deployment/detour"]
	ct := detourContainer(t, d)
	svc := objs["Service/detour"]
	if !svc.selects(d.Spec.Template.Metadata.Labels) {
		t.Errorf("Service/detour selects %v, the pods are %v", svc.Spec.Selector, d.Spec.Template.Metadata.Labels)
	}
	port, _ := strconv.Atoi(listenPort(t, c))
	if len(svc.Spec.Ports) != 1 || portNumber(ct, svc.Spec.Ports[0].TargetPort) != port {
		t.Errorf("Service/detour ports %+v: want one, to the container's %d", svc.Spec.Ports, port)
	}

	// The Redis that health.store names: a Service of that name on that
	// port, selecting the Redis pods and not detour's.
	u, err := url.Parse(c.Store().URL)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := objs["Service/"+u.Hostname()]
	if !ok {
		t.Fatalf("health.store %s: no Service %s", c.Store().URL, u.Hostname())
	}
	rd := objs["Deployment/redis"]
	if !rs.selects(rd.Spec.Template.Metadata.Labels) || rs.selects(d.Spec.Template.Metadata.Labels) {
		t.Errorf("Service/%s selects %v: want the Redis pods %v only", u.Hostname(), rs.Spec.Selector, rd.Spec.Template.Metadata.Labels)
	}
	if len(rs.Spec.Ports) != 1 || strconv.Itoa(rs.Spec.Ports[0].Port) != u.Port() {
		t.Errorf("Service/%s ports %+v, health.store's port is %s", u.Hostname(), rs.Spec.Ports, u.Port())
	}
	if rc := rd.Spec.Template.Spec.Containers; len(rc) != 1 || portNumber(rc[0], rs.Spec.Ports[0].TargetPort) != 6379 {
		t.Errorf("Service/%s does not reach Redis's 6379", u.Hostname())
	}
}
