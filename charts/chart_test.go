// Package charts_test checks the Helm chart against the files it must agree
// with: the generated CRDs and RBAC, the sidecar's Role and admission policy,
// and the engine's defaults. It renders the chart with the helm pinned in
// hack/tools/go.mod, so it needs no helm on the PATH.
package charts_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

const (
	repoRoot    = ".."
	chartDir    = "charts/turnwatch"
	release     = "turnwatch"
	namespace   = "turnwatch-system"
	kubeVersion = "1.37.2"
)

// object is one rendered Kubernetes object.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) meta(field string) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

func (o object) key() string {
	return o.kind() + " " + strings.TrimPrefix(o.meta("namespace")+"/"+o.meta("name"), "/")
}

// helmCommand is the pinned helm: `go tool -modfile=hack/tools/go.mod helm`.
// `go tool -n` builds it (once, into the build cache) and names the binary,
// which the tests then run directly: the go command costs seconds a call.
var helmCommand = sync.OnceValue(func() []string {
	trackInputs()
	goTool := []string{"go", "tool", "-modfile=hack/tools/go.mod"}
	cmd := exec.Command(goTool[0], append(goTool[1:], "-n", "helm")...)
	cmd.Dir = repoRoot
	if out, err := cmd.Output(); err == nil {
		if bin := strings.TrimSpace(string(out)); bin != "" && !strings.ContainsAny(bin, " \n") {
			if _, err := os.Stat(bin); err == nil {
				return []string{bin}
			}
		}
	}
	return append(goTool, "helm")
})

// trackInputs opens every file helm reads, so that go test's result cache
// keys on them: it sees the files a test opens, not those its child
// processes read, and would otherwise replay a stale pass after a chart edit.
func trackInputs() {
	_ = filepath.WalkDir(filepath.Join(repoRoot, chartDir), func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			if f, err := os.Open(path); err == nil {
				f.Close()
			}
		}
		return nil
	})
	for _, f := range []string{"hack/tools/go.mod", "hack/tools/go.sum"} {
		_, _ = os.ReadFile(filepath.Join(repoRoot, f))
	}
}

// helm runs the pinned helm from the repository root.
func helm(args ...string) ([]byte, error) {
	c := helmCommand()
	cmd := exec.Command(c[0], append(c[1:], args...)...)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// render runs helm template with the given extra flags and parses the output.
func render(t *testing.T, extra ...string) []object {
	t.Helper()
	args := append([]string{"template", release, chartDir, "--namespace", namespace,
		"--kube-version", kubeVersion}, extra...)
	out, err := helm(args...)
	if err != nil {
		t.Fatal(err)
	}
	return parseDocs(t, out)
}

// parseDocs splits a multi-document YAML stream on its "---" lines.
func parseDocs(t *testing.T, data []byte) []object {
	t.Helper()
	var objs []object
	for _, doc := range splitDocs(data) {
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for line := range bytes.Lines(data) {
		if string(bytes.TrimRight(line, " \r\n")) == "---" {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// readYAMLFiles parses every document of the files matching pattern (under the
// repository root).
func readYAMLFiles(t *testing.T, pattern string) []object {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no files match %s: run `make manifests` (or merge the branch that generates them)", pattern)
	}
	var objs []object
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, parseDocs(t, b)...)
	}
	return objs
}

// only returns the objects of one kind, by name.
func only(objs []object, kind string) map[string]object {
	m := map[string]object{}
	for _, o := range objs {
		if o.kind() == kind {
			m[o.meta("name")] = o
		}
	}
	return m
}

// find returns the one object of kind whose name ends with suffix.
func find(t *testing.T, objs []object, kind, namespace, suffix string) object {
	t.Helper()
	var hits []object
	for _, o := range objs {
		if o.kind() == kind && o.meta("namespace") == namespace && strings.HasSuffix(o.meta("name"), suffix) {
			hits = append(hits, o)
		}
	}
	if len(hits) != 1 {
		t.Fatalf("want one %s named *%s in %q, found %d", kind, suffix, namespace, len(hits))
	}
	return hits[0]
}

// diff names the first path where want and got differ ("" when equal).
func diff(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %T", path, got)
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if d := diff(path+"."+k, w[k], g[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want a list, got %T", path, got)
		}
		if len(w) != len(g) {
			return fmt.Sprintf("%s: want %d items, got %d", path, len(w), len(g))
		}
		for i := range w {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("%s: want %v, got %v", path, want, got)
		}
		return ""
	}
}

// TestCRDsMatchGenerated: `helm install` must create exactly the CRDs that
// controller-gen generates into config/crd/bases (the chart's crds/ is a
// copy made by `make chart-crds`).
func TestCRDsMatchGenerated(t *testing.T) {
	want := only(readYAMLFiles(t, "config/crd/bases/*.yaml"), "CustomResourceDefinition")
	got := only(render(t, "--include-crds"), "CustomResourceDefinition")
	if len(want) == 0 {
		t.Fatal("config/crd/bases holds no CustomResourceDefinition")
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("CRD %s is generated but not in the chart: run `make chart-crds`", name)
			continue
		}
		if d := diff(name, map[string]any(w), map[string]any(g)); d != "" {
			t.Errorf("the chart's CRD differs from config/crd/bases (run `make chart-crds`): %s", d)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("the chart carries CRD %s, which config/crd/bases does not generate", name)
		}
	}
}

// TestManagerRoleMatchesGenerated: the manager's ClusterRole holds the rules
// controller-gen generates from the controllers' RBAC markers.
func TestManagerRoleMatchesGenerated(t *testing.T) {
	gen := only(readYAMLFiles(t, "config/rbac/role.yaml"), "ClusterRole")
	if len(gen) != 1 {
		t.Fatalf("config/rbac/role.yaml: want one ClusterRole, found %d", len(gen))
	}
	var want object
	for _, o := range gen {
		want = o
	}
	got := find(t, render(t), "ClusterRole", "", "-manager")
	if d := diff("rules", want["rules"], got["rules"]); d != "" {
		t.Errorf("manager ClusterRole differs from config/rbac/role.yaml (run `make chart-files`): %s", d)
	}
}

// TestSidecarRBAC: the chart installs the sidecar's ClusterRole of
// config/sidecar/clusterrole.yaml, and where it provisions the sidecar's
// identity it binds that ClusterRole to the account every turn's Pod uses,
// with no automounted token, labelled as the manager labels its own.
func TestSidecarRBAC(t *testing.T) {
	want := only(readYAMLFiles(t, "config/sidecar/clusterrole.yaml"), "ClusterRole")["turnwatch-sidecar"]
	if want == nil {
		t.Fatal("config/sidecar/clusterrole.yaml holds no ClusterRole turnwatch-sidecar")
	}
	role := find(t, render(t), "ClusterRole", "", "turnwatch-sidecar")
	if d := diff("rules", want["rules"], role["rules"]); d != "" {
		t.Errorf("sidecar ClusterRole differs from config/sidecar/clusterrole.yaml (run `make chart-files`): %s", d)
	}
	if got := only(render(t), "Role"); len(got) != 1 { // the leader-election Role alone
		t.Errorf("default values: want only the leader-election Role, got %v", slices.Sorted(maps.Keys(got)))
	}

	objs := render(t, "--set", "sidecar.rbac.namespaces={agents,reviewers}")
	for _, ns := range []string{"agents", "reviewers"} {
		sa := find(t, objs, "ServiceAccount", ns, "turnwatch-sidecar")
		if sa["automountServiceAccountToken"] != false {
			t.Errorf("%s: sidecar ServiceAccount must not automount its token", ns)
		}
		rb := find(t, objs, "RoleBinding", ns, "turnwatch-sidecar")
		wantRB := map[string]any{
			"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "turnwatch-sidecar"},
			"subjects": []any{
				map[string]any{"kind": "ServiceAccount", "name": "turnwatch-sidecar", "namespace": ns},
				// The manager reads a log tail here (controllers/manager_identity.go).
				map[string]any{"kind": "ServiceAccount", "name": "turnwatch-manager", "namespace": "turnwatch-system"},
			},
		}
		if d := diff("", wantRB, map[string]any{"roleRef": rb["roleRef"], "subjects": rb["subjects"]}); d != "" {
			t.Errorf("%s: sidecar RoleBinding: %s", ns, d)
		}
		for _, o := range []object{sa, rb} {
			labels, _ := o["metadata"].(map[string]any)["labels"].(map[string]any)
			if labels[agentturn.LabelComponent] != agentturn.ComponentSidecarRBAC {
				t.Errorf("%s: %s lacks %s=%s, the label the manager watches and uninstall selects by", ns, o.key(), agentturn.LabelComponent, agentturn.ComponentSidecarRBAC)
			}
		}
	}
}

// TestAdmissionPolicyMatches: the chart installs config/sidecar's policies
// and bindings (the hand-written ones and the limits policies) unchanged,
// every binding denying, whatever the values.
func TestAdmissionPolicyMatches(t *testing.T) {
	file := readYAMLFiles(t, "config/sidecar/validatingadmissionpolicy*.yaml")
	wantPolicies := only(file, "ValidatingAdmissionPolicy")
	wantBindings := only(file, "ValidatingAdmissionPolicyBinding")
	if len(wantPolicies) < 3 || len(wantBindings) != len(wantPolicies) {
		t.Fatalf("config/sidecar: want a binding for each of the policies, found %d and %d", len(wantPolicies), len(wantBindings))
	}
	for _, values := range [][]string{nil, {"-f", chartDir + "/ci/all-on-values.yaml"}} {
		objs := render(t, values...)
		for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
			want, got := only(file, kind), only(objs, kind)
			if len(got) != len(want) {
				t.Errorf("%v: %d %ss rendered, want %d", values, len(got), kind, len(want))
			}
			for name, w := range want {
				g, ok := got[name]
				if !ok {
					t.Errorf("%v: %s %s not rendered", values, kind, name)
					continue
				}
				if d := diff("spec", w["spec"], g["spec"]); d != "" {
					t.Errorf("%s %s differs from config/sidecar (run `make chart-files`): %s", kind, name, d)
				}
				if kind == "ValidatingAdmissionPolicyBinding" {
					if d := diff("validationActions", []any{"Deny"}, g["spec"].(map[string]any)["validationActions"]); d != "" {
						t.Errorf("binding %s: %s", name, d)
					}
				}
			}
		}
	}
}

// clusterConfig returns the rendered config file the manager reads.
func clusterConfig(t *testing.T, objs []object) map[string]any {
	t.Helper()
	cm := find(t, objs, "ConfigMap", namespace, "-config")
	data, _ := cm["data"].(map[string]any)
	text, ok := data["config.yaml"].(string)
	if !ok {
		t.Fatal("the ConfigMap has no config.yaml")
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("config.yaml does not parse: %v\n%s", err, text)
	}
	return cfg
}

func toJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConfigGuards: the guards the chart hands the manager (and so every
// sidecar) parse with the engine's own parser, and by default they are the
// engine's defaults.
func TestConfigGuards(t *testing.T) {
	withCap := monitor.DefaultGuards()
	withCap.MaxCostUSD = "5"
	withCap.WorldTools = []string{"run_tests"}
	tests := []struct {
		name  string
		flags []string
		want  monitor.Guards
	}{
		{name: "defaults", want: monitor.DefaultGuards()},
		{name: "a numeric cap becomes a decimal string, tools a list",
			flags: []string{"--set", "guards.maxCostUSD=5", "--set", "guards.worldTools={run_tests}"}, want: withCap},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clusterConfig(t, render(t, tc.flags...))
			got, err := monitor.ParseGuards(toJSON(t, cfg["guards"]))
			if err != nil {
				t.Fatalf("the engine refuses the chart's guards: %v", err)
			}
			// An empty list and none are the same guard.
			if len(got.WorldTools) == 0 && len(tc.want.WorldTools) == 0 {
				got.WorldTools, tc.want.WorldTools = nil, nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("guards\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestConfigPrices: the rendered price table is the engine's table, merged
// with the values' additions, and the engine parses it.
func TestConfigPrices(t *testing.T) {
	def := monitor.DefaultPrices()
	cfg := clusterConfig(t, render(t,
		"--set", "prices.models.my-model.input=1.00", "--set", "prices.models.my-model.output=4.00",
		"--set", "prices.defaultModel.codex=gpt-5.1-codex"))
	got, err := monitor.ParsePrices(toJSON(t, cfg["prices"]))
	if err != nil {
		t.Fatalf("the engine refuses the chart's price table: %v", err)
	}
	for name, rates := range def.Models {
		if got.Models[name] != rates {
			t.Errorf("model %s: got %+v, want the engine's %+v (run `make chart-files`)", name, got.Models[name], rates)
		}
	}
	if mp, ok := got.Models["my-model"]; !ok || mp.Input.String() != "1.00" || mp.Output.String() != "4.00" {
		t.Errorf("my-model: got %+v (present %v), want input 1.00 output 4.00", mp, ok)
	}
	if got.DefaultModel["codex"] != "gpt-5.1-codex" {
		t.Errorf("defaultModel.codex = %q, want the value's gpt-5.1-codex", got.DefaultModel["codex"])
	}

	// The default render carries the engine's table as is.
	plain := clusterConfig(t, render(t))["prices"].(map[string]any)
	var engine map[string]any
	if err := json.Unmarshal(mustRead(t, "pkg/monitor/prices.json"), &engine); err != nil {
		t.Fatal(err)
	}
	if d := diff("prices", engine, plain); d != "" {
		t.Errorf("default price table differs from pkg/monitor/prices.json (run `make chart-files`): %s", d)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// container returns the manager Deployment's only container.
func managerContainer(t *testing.T, objs []object) (object, map[string]any) {
	t.Helper()
	d := find(t, objs, "Deployment", namespace, "-manager")
	spec := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	cs := spec["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("want one manager container, got %d", len(cs))
	}
	return object(spec), cs[0].(map[string]any)
}

func args(c map[string]any) map[string]string {
	m := map[string]string{}
	for _, a := range c["args"].([]any) {
		k, v, _ := strings.Cut(a.(string), "=")
		m[k] = v
	}
	return m
}

// TestManagerDeployment: the manager reads the rendered ConfigMap, injects
// the sidecar from the same image by default, and its probes, metrics and
// leader election follow the values.
func TestManagerDeployment(t *testing.T) {
	tests := []struct {
		name         string
		flags        []string
		image        string
		sidecarImage string
		leaderElect  string
		metrics      string
	}{
		{name: "defaults", image: "turnwatch:0.1.0", sidecarImage: "turnwatch:0.1.0", leaderElect: "true", metrics: ":8443"},
		{name: "tag and digest",
			flags:        []string{"--set", "image.repository=r.invalid/tw", "--set", "image.tag=v2", "--set", "sidecar.image.digest=sha256:" + strings.Repeat("ab", 32)},
			image:        "r.invalid/tw:v2",
			sidecarImage: "r.invalid/tw@sha256:" + strings.Repeat("ab", 32), leaderElect: "true", metrics: ":8443"},
		{name: "manager digest, sidecar tag",
			flags:        []string{"--set", "image.digest=sha256:" + strings.Repeat("cd", 32), "--set", "sidecar.image.tag=v3"},
			image:        "turnwatch@sha256:" + strings.Repeat("cd", 32),
			sidecarImage: "turnwatch:v3", leaderElect: "true", metrics: ":8443"},
		{name: "manager digest inherited",
			flags:        []string{"--set", "image.digest=sha256:" + strings.Repeat("cd", 32)},
			image:        "turnwatch@sha256:" + strings.Repeat("cd", 32),
			sidecarImage: "turnwatch@sha256:" + strings.Repeat("cd", 32), leaderElect: "true", metrics: ":8443"},
		{name: "no leader election, no metrics",
			flags: []string{"--set", "manager.leaderElection.enabled=false", "--set", "manager.metrics.port=0"},
			image: "turnwatch:0.1.0", sidecarImage: "turnwatch:0.1.0", leaderElect: "false", metrics: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.flags...)
			pod, c := managerContainer(t, objs)
			a := args(c)
			if c["image"] != tc.image {
				t.Errorf("image = %v, want %s", c["image"], tc.image)
			}
			for flag, want := range map[string]string{
				"--sidecar-image": tc.sidecarImage, "--leader-elect": tc.leaderElect,
				"--metrics-bind-address": tc.metrics, "--health-probe-bind-address": ":8081",
			} {
				if a[flag] != want {
					t.Errorf("%s = %q, want %q", flag, a[flag], want)
				}
			}
			// --config names the file of the mounted ConfigMap.
			cm := find(t, objs, "ConfigMap", namespace, "-config")
			vols := pod["volumes"].([]any)
			mounts := c["volumeMounts"].([]any)
			var mountPath string
			for _, m := range mounts {
				m := m.(map[string]any)
				for _, v := range vols {
					v := v.(map[string]any)
					if v["name"] == m["name"] && v["configMap"] != nil && v["configMap"].(map[string]any)["name"] == cm.meta("name") {
						mountPath = m["mountPath"].(string)
					}
				}
			}
			if mountPath == "" || a["--config"] != mountPath+"/config.yaml" {
				t.Errorf("--config = %q, ConfigMap %s mounted at %q", a["--config"], cm.meta("name"), mountPath)
			}
			for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				p, _ := c[probe].(map[string]any)
				get, _ := p["httpGet"].(map[string]any)
				if get["path"] != path || get["port"] != "health" {
					t.Errorf("%s = %v, want GET %s on the health port", probe, p, path)
				}
			}
			hasMetricsService := false
			for _, o := range objs {
				hasMetricsService = hasMetricsService || (o.kind() == "Service" && strings.HasSuffix(o.meta("name"), "-metrics"))
			}
			if hasMetricsService != (tc.metrics != "0") {
				t.Errorf("metrics Service rendered = %v with metrics %q", hasMetricsService, tc.metrics)
			}
		})
	}
}

// TestConfigChangeRollsManager: a guard change changes the Pod template, so
// the manager restarts and reads it.
func TestConfigChangeRollsManager(t *testing.T) {
	checksum := func(flags ...string) any {
		pod := find(t, render(t, flags...), "Deployment", namespace, "-manager")
		return pod["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)["checksum/config"]
	}
	if a, b := checksum(), checksum("--set", "guards.stepBudget=64"); a == b || a == nil {
		t.Errorf("checksum/config did not change with the guards: %v, %v", a, b)
	}
}

// TestBadValuesRefused: mistakes fail at render time with a message that
// names the value, not later in the manager's log.
func TestBadValuesRefused(t *testing.T) {
	tests := []struct {
		name    string
		flags   []string
		wantErr string
	}{
		{"misspelled guard", []string{"--set", "guards.stepbudget=10"}, "stepbudget"},
		{"negative count", []string{"--set", "guards.identicalCalls=-1"}, "identicalCalls"},
		{"bad duration", []string{"--set", "guards.stallTimeout=ten minutes"}, "stallTimeout"},
		{"bad cap", []string{"--set", "guards.maxCostUSD=five"}, "maxCostUSD"},
		{"overspend reroll", []string{"--set", "rerolls.classes={overspend}"}, "classes"},
		{"bad rate", []string{"--set", "prices.models.m.input=cheap"}, "input"},
		{"two managers without election", []string{"--set", "manager.replicas=2", "--set", "manager.leaderElection.enabled=false"}, "leaderElection"},
		{"monitor without service", []string{"--set", "serviceMonitor.enabled=true", "--set", "manager.metrics.service.enabled=false"}, "metrics.service"},
		{"bad namespace", []string{"--set", "sidecar.rbac.namespaces={Agents}"}, "namespaces"},
		{"warn-only admission", []string{"--set", "sidecar.admissionPolicy.validationActions={Warn}"}, "admissionPolicy"},
		{"admission off", []string{"--set", "sidecar.admissionPolicy.enabled=false"}, "admissionPolicy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", release, chartDir, "--namespace", namespace,
				"--kube-version", kubeVersion}, tc.flags...)
			_, err := helm(args...)
			if err == nil {
				t.Fatal("rendered, want a refusal")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error does not name %q:\n%v", tc.wantErr, err)
			}
		})
	}
}

// TestLint: helm lint --strict passes with the default values and with every
// option switched on (ci/all-on-values.yaml).
func TestLint(t *testing.T) {
	for _, values := range []string{"", chartDir + "/ci/all-on-values.yaml"} {
		args := []string{"lint", "--strict", chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
		if values != "" {
			args = append(args, "-f", values)
		}
		if out, err := helm(args...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// writeConfig writes the rendered config.yaml to a file, as the manager's
// mount would, and returns its path.
func writeConfig(t *testing.T, objs []object) string {
	t.Helper()
	cm := find(t, objs, "ConfigMap", namespace, "-config")
	text := cm["data"].(map[string]any)["config.yaml"].(string)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigLoadsInManager: the manager's own (strict) loader reads the
// rendered config; with the default values it gets exactly its built-in
// defaults, so the chart and the manager agree on every knob.
func TestConfigLoadsInManager(t *testing.T) {
	tests := []struct {
		name   string
		flags  []string
		expect func(t *testing.T, cfg shared.Config)
	}{
		{name: "defaults", expect: func(t *testing.T, cfg shared.Config) {
			want := shared.DefaultConfig()
			cfg.Prices, want.Prices = nil, nil
			if cfg.Guards.WorldTools != nil && len(cfg.Guards.WorldTools) == 0 {
				cfg.Guards.WorldTools = nil // [] and none are the same guard
			}
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("the chart's defaults differ from the manager's:\n chart %s\nmanager %s", toJSON(t, cfg), toJSON(t, want))
			}
		}},
		{name: "every option on", flags: []string{"-f", chartDir + "/ci/all-on-values.yaml"},
			expect: func(t *testing.T, cfg shared.Config) {
				if g := cfg.Guards; *g.StepBudget != 64 || *g.MaxCostUSD != "5.00" || len(g.WorldTools) != 2 {
					t.Errorf("guards = %s, want the values' stepBudget 64, maxCostUSD 5.00, two world tools", toJSON(t, g))
				}
				if g := cfg.Guards; *g.NudgeDelivery != "file" || !*g.WarnFirst {
					t.Errorf("guards = %s, want nudgeDelivery file and warnFirst", toJSON(t, g))
				}
				if r := cfg.Rerolls; *r.Max != 2 || len(r.Classes) != 1 || r.Classes[0] != "runaway" {
					t.Errorf("rerolls = %s, want max 2, classes [runaway]", toJSON(t, r))
				}
				if cfg.StartTimeout.Duration != 5*time.Minute || cfg.ExitGrace.Duration != 30*time.Second {
					t.Errorf("startTimeout %v, exitGrace %v, want the values' 5m and 30s", cfg.StartTimeout, cfg.ExitGrace)
				}
				// Helm merges the values' map over the chart's: the cpu limit stays.
				if r := cfg.Sidecar.Resources; r.Limits.Memory().String() != "256Mi" || r.Limits.Cpu().String() != "500m" || r.Requests.Cpu().String() != "20m" {
					t.Errorf("sidecar resources = %s, want the values' (memory limit 256Mi, cpu request 20m) over the chart's cpu limit", toJSON(t, r))
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := shared.LoadConfig(writeConfig(t, render(t, tc.flags...)))
			if err != nil {
				t.Fatalf("the manager refuses the chart's config: %v", err)
			}
			if len(cfg.Prices) == 0 {
				t.Error("the manager got no price table to hand to sidecars")
			}
			if _, err := monitor.ParsePrices(cfg.Prices); err != nil {
				t.Errorf("the sidecar would refuse the price table the manager hands it: %v", err)
			}
			tc.expect(t, cfg)
		})
	}
}

var managerBuild struct {
	once sync.Once
	dir  string
	bin  string
	out  []byte
	err  error
}

// managerBinary builds the manager once per test binary.
func managerBinary(t *testing.T) string {
	t.Helper()
	// The flags and the wiring live in cmd/manager/main.go and controllers/: re-run
	// (instead of replaying a cached pass) when they change.
	_ = mustRead(t, "cmd/manager/main.go")
	if d, err := os.Open(filepath.Join(repoRoot, "controllers")); err == nil {
		d.Close()
	}
	managerBuild.once.Do(func() {
		managerBuild.dir, managerBuild.err = os.MkdirTemp("", "turnwatch-chart-test-")
		if managerBuild.err != nil {
			return
		}
		managerBuild.bin = filepath.Join(managerBuild.dir, "manager")
		build := exec.Command("go", "build", "-o", managerBuild.bin, "./cmd/manager")
		build.Dir = repoRoot
		managerBuild.out, managerBuild.err = build.CombinedOutput()
	})
	if managerBuild.err != nil {
		t.Fatalf("go build: %v\n%s", managerBuild.err, managerBuild.out)
	}
	return managerBuild.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if managerBuild.dir != "" {
		os.RemoveAll(managerBuild.dir)
	}
	os.Exit(code)
}

// TestManagerAcceptsFlags: every flag the chart passes is one the manager
// defines (a renamed flag would otherwise crash the Pod at start).
func TestManagerAcceptsFlags(t *testing.T) {
	bin := managerBinary(t)
	var help bytes.Buffer
	run := exec.Command(bin, "-help")
	run.Stdout, run.Stderr = &help, &help
	_ = run.Run() // flag's -help exits non-zero on some versions; the text is what counts
	defined := map[string]bool{}
	for line := range strings.Lines(help.String()) {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") && strings.HasPrefix(line, "  -") {
			defined[strings.TrimLeft(f[0], "-")] = true
		}
	}
	if !defined["config"] {
		t.Fatalf("could not read the manager's flags from -help:\n%s", help.String())
	}
	for _, flags := range [][]string{nil, {"-f", chartDir + "/ci/all-on-values.yaml"}} {
		_, c := managerContainer(t, render(t, flags...))
		for flag := range args(c) {
			if name := strings.TrimLeft(flag, "-"); !defined[name] {
				t.Errorf("the chart passes %s, which the manager does not define", flag)
			}
		}
	}
}
