package render

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	pspolicy "k8s.io/pod-security-admission/policy"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// An AgentRun is no stronger than a Pod its author could create
// (docs/policies.md#pod-security): its turn's Pod meets the Pod Security
// Standard baseline whatever its namespace enforces, and restricted where a
// policy asks (spec.podSecurity). The admission policies
// turnwatch-agentrun-template (baseline) and turnwatch-agentrun-pod-security,
// turnwatch-agentrun-cluster-pod-security (restricted) refuse at apply what
// PodSecurityProblems refuses at render, naming the same fields; the
// Kubernetes evaluator itself (k8s.io/pod-security-admission) then judges
// the rendered Pod, sidecar included, as a last wall.
//
// The one way out of baseline is the cluster administrator's: the
// namespace label twv1.LabelHostNetwork lets the runs of that namespace use
// the node's network (hostNetwork, and host ports, which a Pod on the
// node's network has anyway).

// PodSecurity is the standard a run's turn Pods meet, and what says so.
type PodSecurity struct {
	// Level is baseline or restricted; "" is baseline.
	Level twv1.PodSecurityLevel
	// Source names the policy that asks restricted ("TurnPolicy/NAME").
	Source string
	// HostNetwork is the administrator's consent to the node's network.
	HostNetwork bool
}

// restricted says whether the level is restricted.
func (p PodSecurity) restricted() bool { return p.Level == twv1.PodSecurityRestricted }

// String names the level and what asks it, for a refusal.
func (p PodSecurity) String() string {
	if p.restricted() {
		return fmt.Sprintf("Pod Security restricted (asked by %s)", p.Source)
	}
	return "Pod Security baseline"
}

// PodSecurityOf is the standard of the runs of a namespace with labels
// nsLabels to which policies apply (lowest precedence first): restricted if
// any policy asks it, named by the one of highest precedence that does.
func PodSecurityOf(policies []turnpolicy.AppliedPolicy, nsLabels map[string]string) PodSecurity {
	ps := PodSecurity{Level: twv1.PodSecurityBaseline, HostNetwork: nsLabels[twv1.LabelHostNetwork] == twv1.HostNetworkAllowed}
	for _, p := range policies {
		if p.Spec.PodSecurity == twv1.PodSecurityRestricted {
			ps.Level, ps.Source = twv1.PodSecurityRestricted, p.Source
		}
	}
	return ps
}

// Values the Pod Security Standards admit (k8s.io/pod-security-admission
// v0.37, policy/check_*.go; TestPodSecurityMatchesEvaluator holds the
// checks to the evaluator). The admission policies carry the same lists.
var (
	// BaselineCapabilities may be added at baseline; restricted admits
	// NET_BIND_SERVICE alone.
	BaselineCapabilities = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
		"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
	// SafeSysctls are namespaced and isolated from other Pods.
	SafeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
		"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}
	// SeLinuxTypes are the container types; user and role are never set.
	SeLinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)

// Legacy annotations the kubelet still reads.
const (
	AppArmorAnnotationPrefix = corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix
	SeccompPodAnnotation     = "seccomp.security.alpha.kubernetes.io/pod"
	SeccompAnnotationPrefix  = "container.seccomp.security.alpha.kubernetes.io/"
)

// podTarget is a Pod template as the checks read it.
type podTarget struct {
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
	// hostNetwork is the administrator's consent.
	hostNetwork bool
	// containers are every container with its field path.
	containers []namedContainer
}

type namedContainer struct {
	path string
	c    *corev1.Container
}

const templateSpecPath = "spec.template.spec"

func newPodTarget(meta *metav1.ObjectMeta, spec *corev1.PodSpec, hostNetwork bool) podTarget {
	t := podTarget{meta: meta, spec: spec, hostNetwork: hostNetwork}
	for i := range spec.InitContainers {
		t.containers = append(t.containers, namedContainer{fmt.Sprintf("%s.initContainers[%s]", templateSpecPath, spec.InitContainers[i].Name), &spec.InitContainers[i]})
	}
	for i := range spec.Containers {
		t.containers = append(t.containers, namedContainer{fmt.Sprintf("%s.containers[%s]", templateSpecPath, spec.Containers[i].Name), &spec.Containers[i]})
	}
	for i := range spec.EphemeralContainers {
		c := (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		t.containers = append(t.containers, namedContainer{fmt.Sprintf("%s.ephemeralContainers[%s]", templateSpecPath, c.Name), c})
	}
	return t
}

// userNamespace: the Pod runs in a user namespace (hostUsers: false),
// where the standards admit root and any procMount.
func (t podTarget) userNamespace() bool { return t.spec.HostUsers != nil && !*t.spec.HostUsers }

// podCheck is one rule of a standard: what it refuses, each with its field.
type podCheck struct {
	level twv1.PodSecurityLevel
	check func(podTarget) []string
}

// podChecks are the rules, baseline first. hostPID, hostIPC, privileged
// and hostPath volumes are baseline's too: templateHazards refuses them.
var podChecks = []podCheck{
	{twv1.PodSecurityBaseline, checkHostNetwork},
	{twv1.PodSecurityBaseline, checkHostPorts},
	{twv1.PodSecurityBaseline, checkHostProcess},
	{twv1.PodSecurityBaseline, checkCapabilities},
	{twv1.PodSecurityBaseline, checkSeccomp},
	{twv1.PodSecurityBaseline, checkAppArmor},
	{twv1.PodSecurityBaseline, checkSELinux},
	{twv1.PodSecurityBaseline, checkProcMount},
	{twv1.PodSecurityBaseline, checkSysctls},
	{twv1.PodSecurityBaseline, checkProbeHosts},
	{twv1.PodSecurityRestricted, checkVolumeTypes},
	{twv1.PodSecurityRestricted, checkPrivilegeEscalation},
	{twv1.PodSecurityRestricted, checkRunAsNonRoot},
	{twv1.PodSecurityRestricted, checkRunAsRoot},
	{twv1.PodSecurityRestricted, checkSeccompSet},
	{twv1.PodSecurityRestricted, checkCapabilitiesRestricted},
	{twv1.PodSecurityRestricted, checkProcMountRestricted},
}

// PodSecurityProblems lists, each with its field path, what in a run's Pod
// template the standard ps refuses.
func PodSecurityProblems(meta *metav1.ObjectMeta, spec *corev1.PodSpec, ps PodSecurity) []string {
	t := newPodTarget(meta, spec, ps.HostNetwork)
	var out []string
	for _, c := range podChecks {
		if c.level == twv1.PodSecurityBaseline || ps.restricted() {
			out = append(out, c.check(t)...)
		}
	}
	return out
}

func checkHostNetwork(t podTarget) []string {
	if !t.spec.HostNetwork || t.hostNetwork {
		return nil
	}
	return []string{fmt.Sprintf("%s.hostNetwork: the node's network (its loopback, every port) is shared with every Pod on it; only a namespace the cluster administrator labelled %s=%s may use it",
		templateSpecPath, twv1.LabelHostNetwork, twv1.HostNetworkAllowed)}
}

func checkHostPorts(t podTarget) []string {
	if t.hostNetwork {
		return nil // on the node's network every port is the node's
	}
	var out []string
	for _, n := range t.containers {
		var ports []string
		for _, p := range n.c.Ports {
			if p.HostPort != 0 {
				ports = append(ports, fmt.Sprint(p.HostPort))
			}
		}
		if len(ports) > 0 {
			out = append(out, fmt.Sprintf("%s.ports.hostPort: %s opens a port of the node", n.path, strings.Join(ports, ", ")))
		}
	}
	return out
}

func checkHostProcess(t podTarget) []string {
	var out []string
	if sc := t.spec.SecurityContext; sc != nil && sc.WindowsOptions != nil && ptrTrue(sc.WindowsOptions.HostProcess) {
		out = append(out, templateSpecPath+".securityContext.windowsOptions.hostProcess: a host process runs on the node itself")
	}
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil && sc.WindowsOptions != nil && ptrTrue(sc.WindowsOptions.HostProcess) {
			out = append(out, n.path+".securityContext.windowsOptions.hostProcess: a host process runs on the node itself")
		}
	}
	return out
}

func checkCapabilities(t podTarget) []string {
	var out []string
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil && sc.Capabilities != nil {
			if bad := notIn(sc.Capabilities.Add, BaselineCapabilities); len(bad) > 0 {
				out = append(out, fmt.Sprintf("%s.securityContext.capabilities.add: %s beyond the baseline's (%s)", n.path, strings.Join(bad, ", "), joinStrings(BaselineCapabilities)))
			}
		}
	}
	return out
}

// validProfile says whether a seccomp or AppArmor profile type keeps the
// runtime's filter: RuntimeDefault or Localhost.
func validProfile[T ~string](typ T) bool { return typ == "RuntimeDefault" || typ == "Localhost" }

func checkSeccomp(t podTarget) []string {
	var out []string
	if sc := t.spec.SecurityContext; sc != nil && sc.SeccompProfile != nil && !validProfile(sc.SeccompProfile.Type) {
		out = append(out, fmt.Sprintf("%s.securityContext.seccompProfile.type: %s turns the system call filter off", templateSpecPath, sc.SeccompProfile.Type))
	}
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil && sc.SeccompProfile != nil && !validProfile(sc.SeccompProfile.Type) {
			out = append(out, fmt.Sprintf("%s.securityContext.seccompProfile.type: %s turns the system call filter off", n.path, sc.SeccompProfile.Type))
		}
	}
	for _, k := range sortedKeys(t.meta.Annotations) {
		v := t.meta.Annotations[k]
		if (k == SeccompPodAnnotation || strings.HasPrefix(k, SeccompAnnotationPrefix)) &&
			v != "runtime/default" && v != "docker/default" && !strings.HasPrefix(v, "localhost/") {
			out = append(out, fmt.Sprintf("spec.template.metadata.annotations[%s]: %s turns the system call filter off", k, v))
		}
	}
	return out
}

func checkAppArmor(t podTarget) []string {
	var out []string
	if sc := t.spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !validProfile(sc.AppArmorProfile.Type) {
		out = append(out, fmt.Sprintf("%s.securityContext.appArmorProfile.type: %s turns AppArmor off", templateSpecPath, sc.AppArmorProfile.Type))
	}
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !validProfile(sc.AppArmorProfile.Type) {
			out = append(out, fmt.Sprintf("%s.securityContext.appArmorProfile.type: %s turns AppArmor off", n.path, sc.AppArmorProfile.Type))
		}
	}
	for _, k := range sortedKeys(t.meta.Annotations) {
		v := t.meta.Annotations[k]
		if strings.HasPrefix(k, AppArmorAnnotationPrefix) && v != "" && v != "runtime/default" && !strings.HasPrefix(v, "localhost/") {
			out = append(out, fmt.Sprintf("spec.template.metadata.annotations[%s]: %s turns AppArmor off", k, v))
		}
	}
	return out
}

func checkSELinux(t podTarget) []string {
	var out []string
	check := func(path string, o *corev1.SELinuxOptions) {
		if o == nil {
			return
		}
		if !slices.Contains(SeLinuxTypes, o.Type) {
			out = append(out, fmt.Sprintf("%s.securityContext.seLinuxOptions.type: %s is not a container type (%s)", path, o.Type, strings.Join(SeLinuxTypes[1:], ", ")))
		}
		if o.User != "" {
			out = append(out, path+".securityContext.seLinuxOptions.user: a Pod sets no SELinux user")
		}
		if o.Role != "" {
			out = append(out, path+".securityContext.seLinuxOptions.role: a Pod sets no SELinux role")
		}
	}
	if sc := t.spec.SecurityContext; sc != nil {
		check(templateSpecPath, sc.SELinuxOptions)
	}
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil {
			check(n.path, sc.SELinuxOptions)
		}
	}
	return out
}

func procMountProblems(t podTarget) []string {
	var out []string
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			out = append(out, fmt.Sprintf("%s.securityContext.procMount: %s unmasks the node's /proc", n.path, *sc.ProcMount))
		}
	}
	return out
}

func checkProcMount(t podTarget) []string {
	if t.userNamespace() {
		return nil // baseline admits it in a user namespace; restricted does not
	}
	return procMountProblems(t)
}

func checkSysctls(t podTarget) []string {
	var out []string
	if sc := t.spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if !slices.Contains(SafeSysctls, s.Name) {
				out = append(out, fmt.Sprintf("%s.securityContext.sysctls[%s].name: not a safe sysctl (%s)", templateSpecPath, s.Name, strings.Join(SafeSysctls, ", ")))
			}
		}
	}
	return out
}

// handlerHost is a probe's or lifecycle handler's host fields.
type handlerHost struct {
	field string
	http  *corev1.HTTPGetAction
	tcp   *corev1.TCPSocketAction
}

// handlerHosts are a container's probes and lifecycle handlers.
func handlerHosts(c *corev1.Container) []handlerHost {
	var out []handlerHost
	for field, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
		if p != nil {
			out = append(out, handlerHost{field, p.HTTPGet, p.TCPSocket})
		}
	}
	if l := c.Lifecycle; l != nil {
		for field, h := range map[string]*corev1.LifecycleHandler{"lifecycle.postStart": l.PostStart, "lifecycle.preStop": l.PreStop} {
			if h != nil {
				out = append(out, handlerHost{field, h.HTTPGet, h.TCPSocket})
			}
		}
	}
	slices.SortFunc(out, func(a, b handlerHost) int { return strings.Compare(a.field, b.field) })
	return out
}

func checkProbeHosts(t podTarget) []string {
	var out []string
	for _, n := range t.containers {
		for _, h := range handlerHosts(n.c) {
			if h.http != nil && h.http.Host != "" {
				out = append(out, fmt.Sprintf("%s.%s.httpGet.host: %s has the kubelet call a host of the template's choosing from the node", n.path, h.field, h.http.Host))
			}
			if h.tcp != nil && h.tcp.Host != "" {
				out = append(out, fmt.Sprintf("%s.%s.tcpSocket.host: %s has the kubelet call a host of the template's choosing from the node", n.path, h.field, h.tcp.Host))
			}
		}
	}
	return out
}

func checkVolumeTypes(t podTarget) []string {
	var out []string
	for _, v := range t.spec.Volumes {
		s := v.VolumeSource
		if s.ConfigMap != nil || s.CSI != nil || s.DownwardAPI != nil || s.EmptyDir != nil || s.Ephemeral != nil ||
			s.Image != nil || s.PersistentVolumeClaim != nil || s.Projected != nil || s.Secret != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s.volumes[%s]: restricted admits configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected and secret volumes only", templateSpecPath, v.Name))
	}
	return out
}

func checkPrivilegeEscalation(t podTarget) []string {
	var out []string
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, n.path+".securityContext.allowPrivilegeEscalation: restricted needs false")
		}
	}
	return out
}

func checkRunAsNonRoot(t podTarget) []string {
	if t.userNamespace() {
		return nil
	}
	var out []string
	pod := false
	if sc := t.spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		if !*sc.RunAsNonRoot {
			out = append(out, templateSpecPath+".securityContext.runAsNonRoot: restricted needs true")
		}
		pod = *sc.RunAsNonRoot
	}
	for _, n := range t.containers {
		switch sc := n.c.SecurityContext; {
		case sc != nil && sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot:
			out = append(out, n.path+".securityContext.runAsNonRoot: restricted needs true")
		case (sc == nil || sc.RunAsNonRoot == nil) && !pod:
			out = append(out, n.path+".securityContext.runAsNonRoot: restricted needs true, here or in spec.template.spec.securityContext")
		}
	}
	return out
}

func checkRunAsRoot(t podTarget) []string {
	if t.userNamespace() {
		return nil
	}
	var out []string
	if sc := t.spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		out = append(out, templateSpecPath+".securityContext.runAsUser: restricted admits no root (0)")
	}
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			out = append(out, n.path+".securityContext.runAsUser: restricted admits no root (0)")
		}
	}
	return out
}

func checkSeccompSet(t podTarget) []string {
	if sc := t.spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		return nil // checkSeccomp refuses a profile that is no filter
	}
	var out []string
	for _, n := range t.containers {
		if sc := n.c.SecurityContext; sc == nil || sc.SeccompProfile == nil {
			out = append(out, n.path+".securityContext.seccompProfile.type: restricted needs RuntimeDefault or Localhost, here or in spec.template.spec.securityContext")
		}
	}
	return out
}

func checkCapabilitiesRestricted(t podTarget) []string {
	var out []string
	for _, n := range t.containers {
		sc := n.c.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			out = append(out, n.path+".securityContext.capabilities.drop: restricted needs ALL")
		}
		if sc == nil || sc.Capabilities == nil {
			continue
		}
		if bad := notIn(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}); len(bad) > 0 {
			out = append(out, fmt.Sprintf("%s.securityContext.capabilities.add: restricted admits NET_BIND_SERVICE alone, not %s", n.path, strings.Join(bad, ", ")))
		}
	}
	return out
}

func checkProcMountRestricted(t podTarget) []string {
	if !t.userNamespace() {
		return nil // checkProcMount refused it already
	}
	return procMountProblems(t)
}

// notIn are the capabilities of caps not in allowed.
func notIn(caps, allowed []corev1.Capability) []string {
	var out []string
	for _, c := range caps {
		if !slices.Contains(allowed, c) {
			out = append(out, string(c))
		}
	}
	return out
}

func joinStrings[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// podSecurityEvaluator is the Kubernetes Pod Security evaluator, with the
// checks of the module's version.
var podSecurityEvaluator = sync.OnceValues(func() (pspolicy.Evaluator, error) {
	return pspolicy.NewEvaluator(pspolicy.DefaultChecks(), nil)
})

// EvaluatorProblems are what the Kubernetes evaluator refuses in the
// rendered Pod at the standard ps (its latest version), the node's network
// and ports aside where the administrator consented.
func EvaluatorProblems(pod *corev1.Pod, ps PodSecurity) ([]string, error) {
	ev, err := podSecurityEvaluator()
	if err != nil {
		return nil, err
	}
	spec := &pod.Spec
	if ps.HostNetwork {
		spec = pod.Spec.DeepCopy()
		spec.HostNetwork = false
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				for j := range cs[i].Ports {
					cs[i].Ports[j].HostPort = 0
				}
			}
		}
	}
	level := psapi.LevelBaseline
	if ps.restricted() {
		level = psapi.LevelRestricted
	}
	var out []string
	for _, r := range ev.EvaluatePod(psapi.LevelVersion{Level: level, Version: psapi.LatestVersion()}, &pod.ObjectMeta, spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+" ("+r.ForbiddenDetail+")")
		}
	}
	return out, nil
}
