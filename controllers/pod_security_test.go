package controllers

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	pspolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// restrictedTemplate makes a template meet restricted: Pod-wide
// runAsNonRoot and RuntimeDefault seccomp, every container without
// privilege escalation and with every capability dropped.
func restrictedTemplate(s *corev1.PodSpec) {
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	s.SecurityContext.RunAsNonRoot = ptr.To(true)
	s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if cs[i].SecurityContext == nil {
				cs[i].SecurityContext = &corev1.SecurityContext{}
			}
			cs[i].SecurityContext.AllowPrivilegeEscalation = ptr.To(false)
			cs[i].SecurityContext.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		}
	}
}

// realEvaluation is what Kubernetes' own Pod Security evaluator refuses in
// a Pod at a level (its latest version), as the admission plugin would.
func realEvaluation(t *testing.T, meta *metav1.ObjectMeta, spec *corev1.PodSpec, level psapi.Level) []string {
	t.Helper()
	ev, err := pspolicy.NewEvaluator(pspolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ev.EvaluatePod(psapi.LevelVersion{Level: level, Version: psapi.LatestVersion()}, meta, spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

type podSecurityCase struct {
	name    string
	level   twv1.PodSecurityLevel
	consent bool // the namespace allows the node's network
	mutate  func(*corev1.PodTemplateSpec)
	field   string // the one field refused; "" for none
}

func specOf(f func(*corev1.PodSpec)) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) { f(&p.Spec) }
}

func agentSC(f func(*corev1.SecurityContext)) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		c := &p.Spec.Containers[0]
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		f(c.SecurityContext)
	}
}

func podSC(f func(*corev1.PodSecurityContext)) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		f(p.Spec.SecurityContext)
	}
}

func annotate(k, v string) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) { p.Annotations = map[string]string{k: v} }
}

const (
	agentPath = "spec.template.spec.containers[agent]"
	podPath   = "spec.template.spec"
)

// podSecurityCases attack each rule of the standards the way a template
// author would, and try what each admits; every refusal names its field.
var podSecurityCases = []podSecurityCase{
	{"plain", twv1.PodSecurityBaseline, false, func(*corev1.PodTemplateSpec) {}, ""},
	{"root is baseline", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) { s.RunAsUser = ptr.To[int64](0) }), ""},
	{"host network", twv1.PodSecurityBaseline, false, specOf(func(s *corev1.PodSpec) { s.HostNetwork = true }), podPath + ".hostNetwork"},
	{"host network, the administrator consents", twv1.PodSecurityBaseline, true, specOf(func(s *corev1.PodSpec) { s.HostNetwork = true }), ""},
	{"host network, consent, restricted", twv1.PodSecurityRestricted, true, specOf(func(s *corev1.PodSpec) { s.HostNetwork = true }), ""},
	{"host port", twv1.PodSecurityBaseline, false, specOf(func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
	}), agentPath + ".ports.hostPort"},
	{"host port on the consented node network", twv1.PodSecurityBaseline, true, specOf(func(s *corev1.PodSpec) {
		s.HostNetwork = true
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
	}), ""},
	{"a container port", twv1.PodSecurityBaseline, false, specOf(func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	}), ""},
	{"SYS_ADMIN", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
	}), agentPath + ".securityContext.capabilities.add"},
	{"NET_ADMIN in an init container", twv1.PodSecurityBaseline, false, specOf(func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "clone", Image: "git", SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}}}
	}), "spec.template.spec.initContainers[clone].securityContext.capabilities.add"},
	{"NET_RAW", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW"}}
	}), agentPath + ".securityContext.capabilities.add"},
	{"CHOWN is baseline", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"CHOWN"}}
	}), ""},
	{"seccomp Unconfined, Pod-wide", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) {
		s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}), podPath + ".securityContext.seccompProfile.type"},
	{"seccomp Unconfined, agent", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}), agentPath + ".securityContext.seccompProfile.type"},
	{"AppArmor Unconfined, Pod-wide", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) {
		s.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	}), podPath + ".securityContext.appArmorProfile.type"},
	{"AppArmor Unconfined, agent", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	}), agentPath + ".securityContext.appArmorProfile.type"},
	{"AppArmor unconfined, annotation", twv1.PodSecurityBaseline, false, annotate("container.apparmor.security.beta.kubernetes.io/agent", "unconfined"),
		"spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/agent]"},
	{"AppArmor runtime/default, annotation", twv1.PodSecurityBaseline, false, annotate("container.apparmor.security.beta.kubernetes.io/agent", "runtime/default"), ""},
	{"SELinux type", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
	}), agentPath + ".securityContext.seLinuxOptions.type"},
	{"SELinux user, Pod-wide", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) {
		s.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"}
	}), podPath + ".securityContext.seLinuxOptions.user"},
	{"SELinux role", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.SELinuxOptions = &corev1.SELinuxOptions{Role: "system_r"}
	}), agentPath + ".securityContext.seLinuxOptions.role"},
	{"SELinux container_t", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"}
	}), ""},
	{"procMount Unmasked", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.ProcMount = ptr.To(corev1.UnmaskedProcMount)
	}), agentPath + ".securityContext.procMount"},
	{"procMount Unmasked in a user namespace", twv1.PodSecurityBaseline, false, func(p *corev1.PodTemplateSpec) {
		p.Spec.HostUsers = ptr.To(false)
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
	}, ""},
	{"unsafe sysctl", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) {
		s.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}
	}), podPath + ".securityContext.sysctls[kernel.msgmax].name"},
	{"safe sysctl", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) {
		s.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_keepalive_time", Value: "60"}}
	}), ""},
	{"Windows hostProcess, Pod-wide", twv1.PodSecurityBaseline, false, podSC(func(s *corev1.PodSecurityContext) {
		s.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
	}), podPath + ".securityContext.windowsOptions.hostProcess"},
	{"Windows hostProcess, agent", twv1.PodSecurityBaseline, false, agentSC(func(s *corev1.SecurityContext) {
		s.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
	}), agentPath + ".securityContext.windowsOptions.hostProcess"},
	{"a probe of another host", twv1.PodSecurityBaseline, false, specOf(func(s *corev1.PodSpec) {
		s.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/"}}}
	}), agentPath + ".readinessProbe.httpGet.host"},
	{"a preStop hook to another host", twv1.PodSecurityBaseline, false, specOf(func(s *corev1.PodSpec) {
		s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1", Path: "/"}}}
	}), agentPath + ".lifecycle.preStop.httpGet.host"},

	// restricted: the base template is made restricted first.
	{"restricted, plain", twv1.PodSecurityRestricted, false, func(*corev1.PodTemplateSpec) {}, ""},
	{"restricted, a hostPath-free NFS volume", twv1.PodSecurityRestricted, false, specOf(func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "share", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}}}
	}), podPath + ".volumes[share]"},
	{"restricted, privilege escalation", twv1.PodSecurityRestricted, false, agentSC(func(s *corev1.SecurityContext) {
		s.AllowPrivilegeEscalation = ptr.To(true)
	}), agentPath + ".securityContext.allowPrivilegeEscalation"},
	{"restricted, runAsNonRoot false in the agent", twv1.PodSecurityRestricted, false, agentSC(func(s *corev1.SecurityContext) {
		s.RunAsNonRoot = ptr.To(false)
	}), agentPath + ".securityContext.runAsNonRoot"},
	{"restricted, runAsNonRoot unset", twv1.PodSecurityRestricted, false, podSC(func(s *corev1.PodSecurityContext) {
		s.RunAsNonRoot = nil
	}), agentPath + ".securityContext.runAsNonRoot"},
	{"restricted, root", twv1.PodSecurityRestricted, false, agentSC(func(s *corev1.SecurityContext) {
		s.RunAsUser = ptr.To[int64](0)
	}), agentPath + ".securityContext.runAsUser"},
	{"restricted, root in a user namespace", twv1.PodSecurityRestricted, false, func(p *corev1.PodTemplateSpec) {
		p.Spec.HostUsers = ptr.To(false)
		p.Spec.SecurityContext.RunAsNonRoot = nil
		p.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To[int64](0)
	}, ""},
	{"restricted, no seccomp profile", twv1.PodSecurityRestricted, false, podSC(func(s *corev1.PodSecurityContext) {
		s.SeccompProfile = nil
	}), agentPath + ".securityContext.seccompProfile.type"},
	{"restricted, capabilities kept", twv1.PodSecurityRestricted, false, agentSC(func(s *corev1.SecurityContext) {
		s.Capabilities = nil
	}), agentPath + ".securityContext.capabilities.drop"},
	{"restricted, CHOWN added", twv1.PodSecurityRestricted, false, agentSC(func(s *corev1.SecurityContext) {
		s.Capabilities.Add = []corev1.Capability{"CHOWN"}
	}), agentPath + ".securityContext.capabilities.add"},
	{"restricted, NET_BIND_SERVICE added", twv1.PodSecurityRestricted, false, agentSC(func(s *corev1.SecurityContext) {
		s.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
	}), ""},
	{"restricted, procMount Unmasked in a user namespace", twv1.PodSecurityRestricted, false, func(p *corev1.PodTemplateSpec) {
		p.Spec.HostUsers = ptr.To(false)
		p.Spec.Containers[0].SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
	}, agentPath + ".securityContext.procMount"},
}

// newCaseTemplate is the template of a case, made restricted for a
// restricted case before the case's change.
func newCaseTemplate(c podSecurityCase) *corev1.PodTemplateSpec {
	p := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "a"}}}}
	if c.level == twv1.PodSecurityRestricted {
		restrictedTemplate(&p.Spec)
	}
	c.mutate(p)
	return p
}

// Each rule refuses what it should with the field named, and admits what
// the standard admits; and Kubernetes' own evaluator agrees on every case,
// so the checks are the standard's, not a guess at it.
func TestPodSecurityProblems(t *testing.T) {
	for _, c := range podSecurityCases {
		t.Run(c.name, func(t *testing.T) {
			p := newCaseTemplate(c)
			ps := render.PodSecurity{Level: c.level, Source: "TurnPolicy/strict", HostNetwork: c.consent}
			got := render.PodSecurityProblems(&p.ObjectMeta, &p.Spec, ps)
			switch {
			case c.field == "" && len(got) > 0:
				t.Errorf("refused: %q", got)
			case c.field != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.field+":")):
				t.Errorf("got %q, want one problem at %s", got, c.field)
			}
			// The evaluator, minus the node's network where consented.
			spec := p.Spec.DeepCopy()
			if c.consent {
				spec.HostNetwork = false
				for i := range spec.Containers {
					for j := range spec.Containers[i].Ports {
						spec.Containers[i].Ports[j].HostPort = 0
					}
				}
			}
			real := realEvaluation(t, &p.ObjectMeta, spec, psapi.Level(c.level))
			if (len(real) > 0) != (c.field != "") {
				t.Errorf("Kubernetes' evaluator says %q, the check %q", real, got)
			}
		})
	}
}

// The level is the strictest any policy asks, named by the policy of
// highest precedence that asks it; the node's network is the namespace
// label's alone.
func TestPodSecurityOf(t *testing.T) {
	pol := func(src string, l twv1.PodSecurityLevel) turnpolicy.AppliedPolicy {
		return turnpolicy.AppliedPolicy{Source: src, Spec: &twv1.TurnPolicySpec{PodSecurity: l}}
	}
	cases := []struct {
		name     string
		policies []turnpolicy.AppliedPolicy
		labels   map[string]string
		want     render.PodSecurity
	}{
		{"none", nil, nil, render.PodSecurity{Level: twv1.PodSecurityBaseline}},
		{"baseline asked", []turnpolicy.AppliedPolicy{pol("TurnPolicy/a", twv1.PodSecurityBaseline)}, nil, render.PodSecurity{Level: twv1.PodSecurityBaseline}},
		{"one asks restricted", []turnpolicy.AppliedPolicy{pol("ClusterTurnPolicy/c", twv1.PodSecurityRestricted), pol("TurnPolicy/a", "")}, nil,
			render.PodSecurity{Level: twv1.PodSecurityRestricted, Source: "ClusterTurnPolicy/c"}},
		{"the higher precedence names it", []turnpolicy.AppliedPolicy{pol("ClusterTurnPolicy/c", twv1.PodSecurityRestricted), pol("TurnPolicy/a", twv1.PodSecurityRestricted)}, nil,
			render.PodSecurity{Level: twv1.PodSecurityRestricted, Source: "TurnPolicy/a"}},
		{"a lower level does not undo it", []turnpolicy.AppliedPolicy{pol("ClusterTurnPolicy/c", twv1.PodSecurityRestricted), pol("TurnPolicy/a", twv1.PodSecurityBaseline)}, nil,
			render.PodSecurity{Level: twv1.PodSecurityRestricted, Source: "ClusterTurnPolicy/c"}},
		{"consent", nil, map[string]string{twv1.LabelHostNetwork: twv1.HostNetworkAllowed}, render.PodSecurity{Level: twv1.PodSecurityBaseline, HostNetwork: true}},
		{"another value is no consent", nil, map[string]string{twv1.LabelHostNetwork: "true"}, render.PodSecurity{Level: twv1.PodSecurityBaseline}},
	}
	for _, c := range cases {
		if got := render.PodSecurityOf(c.policies, c.labels); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// readSampleRun reads an AgentRun sample.
func readSampleRun(t *testing.T, path string) *twv1.AgentRun {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run := &twv1.AgentRun{}
	if err := yaml.UnmarshalStrict(b, run); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return run
}

// runSamples are the AgentRun samples: config/samples and the demo's.
func runSamples(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, glob := range []string{"cli_*.yaml", "turnwatch_*.yaml", filepath.Join("demo", "*.yaml")} {
		files, err := filepath.Glob(filepath.Join("..", "config", "samples", glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f) != "kustomization.yaml" {
				out = append(out, f)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("%d samples, want the 6 of config/samples and the 5 of the demo", len(out))
	}
	return out
}

// The rendered Pod of every sample, sidecar and drill included, meets the
// baseline standard as Kubernetes' own evaluator judges it (the demo's on
// the node's network, which its namespace consents to); made restricted
// and rendered under a policy asking restricted, it meets restricted; and a
// sample as written is refused at restricted exactly when the evaluator
// refuses its rendered Pod.
func TestRenderedSamplesMeetPodSecurity(t *testing.T) {
	for _, f := range runSamples(t) {
		for _, model := range []string{"", "drill", "gateway"} {
			name := filepath.Base(f)
			if model != "" {
				name += "/" + model
			}
			t.Run(name, func(t *testing.T) {
				run := readSampleRun(t, f)
				switch model {
				case "drill":
					run.Spec.Drill = &twv1.Drill{Scenario: "healthy"}
				case "gateway":
					run.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://models.example", KeySecretRef: twv1.SecretKeyRef{Name: "k", Key: "key"}}}
				}
				consent := run.Spec.Template.Spec.HostNetwork
				renderAt := func(level twv1.PodSecurityLevel) (*corev1.Pod, error) {
					turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: "r-0", Namespace: "ns"}, Spec: twv1.AgentTurnSpec{RunName: run.Name, Prompt: "p"}}
					return render.RenderPod(run, turn, render.RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards, ModelPort: 41000, ModelToken: "t",
						PodSecurity: render.PodSecurity{Level: level, Source: "TurnPolicy/strict", HostNetwork: consent}})
				}
				judge := func(pod *corev1.Pod, level psapi.Level) []string {
					spec := pod.Spec.DeepCopy()
					spec.HostNetwork = false // consented: the one exception (checked below)
					return realEvaluation(t, &pod.ObjectMeta, spec, level)
				}
				pod, err := renderAt(twv1.PodSecurityBaseline)
				var notDrillable *turnpolicy.DrillRefusedError
				if model == "drill" && errors.As(err, &notDrillable) || model == "gateway" && err != nil && strings.Contains(err.Error(), "cannot be pointed at the model gateway") {
					t.Skip(err) // a demo template of a CLI whose endpoint it does not write
				}
				if err != nil {
					t.Fatal(err)
				}
				if p := judge(pod, psapi.LevelBaseline); len(p) > 0 {
					t.Errorf("the rendered Pod is not baseline: %q", p)
				}
				if pod.Spec.HostNetwork && !consent {
					t.Error("the rendered Pod is on the node's network without consent")
				}

				// As written, at restricted: the check and the evaluator agree.
				_, err = renderAt(twv1.PodSecurityRestricted)
				if real := judge(pod, psapi.LevelRestricted); (err != nil) != (len(real) > 0) {
					t.Errorf("at restricted the controller says %v, Kubernetes' evaluator %q", err, real)
				}

				restrictedTemplate(&run.Spec.Template.Spec)
				pod, err = renderAt(twv1.PodSecurityRestricted)
				if err != nil {
					t.Fatalf("made restricted: %v", err)
				}
				if p := judge(pod, psapi.LevelRestricted); len(p) > 0 {
					t.Errorf("the rendered Pod of the restricted template is not restricted: %q", p)
				}
			})
		}
	}
}

// A template the field checks miss but the evaluator refuses still renders
// no Pod: the last wall bites (a Pod-level Unconfined seccomp that the
// checks are blinded to here by testing evaluatorProblems alone).
func TestEvaluatorProblemsBite(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "a"}},
		SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}}}
	p, err := render.EvaluatorProblems(pod, render.PodSecurity{})
	if err != nil || len(p) != 1 || !strings.Contains(p[0], "seccompProfile") {
		t.Errorf("got %q, %v; want the seccomp profile refused", p, err)
	}
	pod.Spec.SecurityContext = nil
	pod.Spec.HostNetwork = true
	if p, _ := render.EvaluatorProblems(pod, render.PodSecurity{}); len(p) != 1 {
		t.Errorf("host network without consent: %q, want refused", p)
	}
	if p, _ := render.EvaluatorProblems(pod, render.PodSecurity{HostNetwork: true}); len(p) != 0 {
		t.Errorf("host network with consent: %q, want admitted", p)
	}
	if p, _ := render.EvaluatorProblems(pod, render.PodSecurity{Level: twv1.PodSecurityRestricted, HostNetwork: true}); len(p) == 0 {
		t.Error("a plain template at restricted: admitted")
	}
}

// allCapabilities are the Linux capabilities (capabilities(7)).
var allCapabilities = []corev1.Capability{"AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE",
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE", "LINUX_IMMUTABLE",
	"MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON", "SETFCAP",
	"SETGID", "SETPCAP", "SETUID", "SYSLOG", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT",
	"SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "WAKE_ALARM"}

// The lists of admitted values are Kubernetes': every capability, each
// sysctl of ours and some unsafe ones, each SELinux type, is admitted by
// the checks exactly when the evaluator admits it.
func TestPodSecurityListsMatchEvaluator(t *testing.T) {
	try := func(what string, mutate func(*corev1.PodTemplateSpec)) {
		t.Helper()
		p := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "a"}}}}
		mutate(p)
		ours := render.PodSecurityProblems(&p.ObjectMeta, &p.Spec, render.PodSecurity{})
		real := realEvaluation(t, &p.ObjectMeta, &p.Spec, psapi.LevelBaseline)
		if (len(ours) > 0) != (len(real) > 0) {
			t.Errorf("%s: the checks say %q, Kubernetes' evaluator %q", what, ours, real)
		}
	}
	for _, c := range allCapabilities {
		try("capability "+string(c), agentSC(func(s *corev1.SecurityContext) { s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{c}} }))
	}
	for _, name := range append(slices.Clone(render.SafeSysctls), "kernel.msgmax", "net.core.somaxconn", "net.ipv4.ip_forward", "vm.swappiness", "kernel.shm_rmid_forced.x") {
		try("sysctl "+name, podSC(func(s *corev1.PodSecurityContext) { s.Sysctls = []corev1.Sysctl{{Name: name, Value: "1"}} }))
	}
	for _, typ := range append(slices.Clone(render.SeLinuxTypes), "spc_t", "unconfined_t", "container_logreader_t") {
		try("SELinux type "+typ, agentSC(func(s *corev1.SecurityContext) { s.SELinuxOptions = &corev1.SELinuxOptions{Type: typ} }))
	}
	for _, v := range []string{"runtime/default", "localhost/agent", "unconfined", "", "docker/default"} {
		try("AppArmor annotation "+v, annotate(render.AppArmorAnnotationPrefix+"agent", v))
	}
	for _, typ := range []corev1.SeccompProfileType{"RuntimeDefault", "Localhost", "Unconfined"} {
		try("seccomp "+string(typ), podSC(func(s *corev1.PodSecurityContext) {
			s.SeccompProfile = &corev1.SeccompProfile{Type: typ}
			if typ == "Localhost" {
				s.SeccompProfile.LocalhostProfile = ptr.To("p.json")
			}
		}))
	}
}

// What the Pod Security checks add to rendering a turn's Pod: the field
// checks and Kubernetes' evaluator on the claude sample, against the whole
// renderPod (which includes them). Report the ratio, not the times.
func BenchmarkPodSecurity(b *testing.B) {
	run := &twv1.AgentRun{}
	raw, err := os.ReadFile(filepath.Join("..", "config", "samples", "cli_claude.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, run); err != nil {
		b.Fatal(err)
	}
	turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: "r-0", Namespace: "ns"}, Spec: twv1.AgentTurnSpec{RunName: run.Name, Prompt: "p"}}
	o := render.RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards}
	pod, err := render.RenderPod(run, turn, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("renderPod", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := render.RenderPod(run, turn, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = render.PodSecurityProblems(&run.Spec.Template.ObjectMeta, &run.Spec.Template.Spec, o.PodSecurity)
			if _, err := render.EvaluatorProblems(pod, o.PodSecurity); err != nil {
				b.Fatal(err)
			}
		}
	})
}
