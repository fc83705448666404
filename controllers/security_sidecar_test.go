package controllers

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The sidecar is a principal of its own whatever the template asks for
// Pod-wide (issue 9, point 2): its reserved user and group, a read-only root
// filesystem, no privilege escalation, every capability dropped, seccomp
// RuntimeDefault, all set on its container so that no Pod-level setting of
// the template applies to it; and its token is mounted into it alone.
func TestSidecarSecurityContext(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.PodSecurityContext
	}{
		{"no Pod-level settings", nil},
		{"the template asks for root Pod-wide", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false)}},
		// Unconfined is refused (TestPodSecurityProblems); a profile of
		// the agent's own must not reach the sidecar either.
		{"the template sets a seccomp profile of its own Pod-wide", &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{
			Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("agent.json")}}},
		{"the template runs as a distroless nonroot user", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun("ns", "r", func(r *twv1.AgentRun) {
				r.Spec.Template.Spec.SecurityContext = tc.pod
				r.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "clone", Image: "git"}}
			})
			turn := &twv1.AgentTurn{}
			turn.Name, turn.Namespace = "r-0", "ns"
			turn.Spec = twv1.AgentTurnSpec{RunName: "r", Prompt: "p"}
			pod, err := render.RenderPod(run, turn, render.RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards})
			if err != nil {
				t.Fatal(err)
			}
			side := pod.Spec.InitContainers[0]
			if side.Name != protocol.SidecarContainerName {
				t.Fatalf("first init container %q, want the sidecar", side.Name)
			}
			for _, p := range sidecarPrincipalProblems(side.SecurityContext) {
				t.Error(p)
			}
			if ptr.Deref(pod.Spec.AutomountServiceAccountToken, true) {
				t.Error("the Pod automounts a service-account token")
			}
			for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == render.TokenVolume })
				if (i >= 0) != (c.Name == protocol.SidecarContainerName) {
					t.Errorf("container %s mounts the token volume: %v, want only the sidecar", c.Name, i >= 0)
				}
				if i >= 0 && !c.VolumeMounts[i].ReadOnly {
					t.Errorf("the sidecar mounts its token read-write")
				}
			}
			for _, v := range pod.Spec.Volumes {
				if v.Name == render.TokenVolume && (v.Projected == nil || v.Projected.DefaultMode == nil || *v.Projected.DefaultMode&0o222 != 0) {
					t.Errorf("token volume %+v: want projected, no write bits", v.VolumeSource)
				}
			}
		})
	}
}

// sidecarPrincipalProblems lists what the sidecar container's own security
// context fails of point 2 of issue 9.
func sidecarPrincipalProblems(sc *corev1.SecurityContext) []string {
	if sc == nil {
		return []string{"the sidecar has no securityContext of its own"}
	}
	var out []string
	check := func(ok bool, what string) {
		if !ok {
			out = append(out, what)
		}
	}
	check(ptr.Deref(sc.RunAsUser, -1) == protocol.SidecarUID, fmt.Sprintf("runAsUser %v, want the reserved %d", sc.RunAsUser, protocol.SidecarUID))
	check(ptr.Deref(sc.RunAsGroup, -1) == protocol.SidecarUID, fmt.Sprintf("runAsGroup %v, want %d", sc.RunAsGroup, protocol.SidecarUID))
	check(ptr.Deref(sc.RunAsNonRoot, false), "runAsNonRoot not set")
	check(ptr.Deref(sc.ReadOnlyRootFilesystem, false), "readOnlyRootFilesystem not set")
	check(sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation not false")
	check(!ptr.Deref(sc.Privileged, false), "privileged")
	check(sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0,
		fmt.Sprintf("capabilities %+v, want drop [ALL] and none added", sc.Capabilities))
	check(sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
		fmt.Sprintf("seccompProfile %+v, want RuntimeDefault", sc.SeccompProfile))
	return out
}

func TestSidecarPrincipalProblemsBites(t *testing.T) {
	if len(sidecarPrincipalProblems(nil)) != 1 {
		t.Error("no securityContext passes")
	}
	if n := len(sidecarPrincipalProblems(&corev1.SecurityContext{Privileged: ptr.To(true)})); n != 8 {
		t.Errorf("a privileged, otherwise empty securityContext: %d problems, want 8 (every check)", n)
	}
}

// The restricted Pod Security Standard admits the turn's Pod when the
// template is restricted only container by container (no Pod-level seccomp
// or runAsNonRoot): the sidecar carries every setting the standard asks for
// on its own container, it does not lean on the template's Pod-level ones.
func TestRestrictedPodSecurityContainerLevel(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: newNamespace(t) + "-rc", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	create(t, ns)
	startManager(t, ns.Name, managerOpts{})
	create(t, newRun(ns.Name, "per-container", func(r *twv1.AgentRun) {
		r.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}))
	pod := waitPod(t, ns.Name, "per-container-0")
	for _, p := range sidecarPrincipalProblems(pod.Spec.InitContainers[0].SecurityContext) {
		t.Errorf("admitted sidecar: %s", p)
	}
	// The same Pod without the sidecar's own seccomp setting is refused by
	// the namespace, naming the sidecar: the check above is the one that
	// lets it in.
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns.Name}, Spec: *pod.Spec.DeepCopy()}
	bare.Spec.InitContainers[0].SecurityContext.SeccompProfile = nil
	err := k8s.Create(t.Context(), bare)
	if !apierrors.IsForbidden(err) || containsAll(err.Error(), "restricted", "seccompProfile", protocol.SidecarContainerName) != nil {
		t.Errorf("the sidecar without its seccomp profile: %v, want Forbidden by the restricted standard naming it", err)
	}
}
