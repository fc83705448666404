package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// An AgentRun whose template would let a container reach the sidecar's
// credential is refused at apply by the shipped admission policy, with the
// field named; the controller's own check (templateHazards) names the same
// fields, so the two cannot drift apart unnoticed.
func TestTemplateRefusedAtAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	spec := func(f func(*corev1.PodSpec)) func(*twv1.AgentRun) {
		return func(r *twv1.AgentRun) { f(&r.Spec.Template.Spec) }
	}
	cases := []struct {
		name   string
		mutate func(*twv1.AgentRun)
		field  string
	}{
		{"mount the token volume", spec(func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: render.TokenVolume, MountPath: "/t"}}
		}), "spec.template.spec.containers[agent].volumeMounts"},
		{"a volume with the reserved prefix", spec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "turnwatch-state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), "spec.template.spec.volumes[turnwatch-state].name"},
		{"share the process namespace", spec(func(s *corev1.PodSpec) { s.ShareProcessNamespace = ptr.To(true) }),
			"spec.template.spec.shareProcessNamespace"},
		{"host PID", spec(func(s *corev1.PodSpec) { s.HostPID = true }), "spec.template.spec.hostPID"},
		{"host IPC", spec(func(s *corev1.PodSpec) { s.HostIPC = true }), "spec.template.spec.hostIPC"},
		{"the sidecar's uid, pod-wide", spec(func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}
		}), "spec.template.spec.securityContext.runAsUser"},
		{"the sidecar's uid, agent", spec(func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}
		}), "spec.template.spec.containers[agent].securityContext.runAsUser"},
		{"the sidecar's uid, init container", spec(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "clone", Image: "git", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}}}
		}), "spec.template.spec.initContainers[clone].securityContext.runAsUser"},
		{"the template's own token", spec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}), "spec.template.spec.volumes[tok].projected.sources.serviceAccountToken"},
		{"the node's filesystem", spec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "kubelet", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet"}}}}
		}), "spec.template.spec.volumes[kubelet].hostPath"},
		{"privileged", spec(func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}), "spec.template.spec.containers[agent].securityContext.privileged"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := newRun(ns, fmt.Sprintf("bad-%d", i), c.mutate)
			hazards := render.TemplateHazards(&run.Spec.Template.Spec)
			if len(hazards) != 1 || !strings.HasPrefix(hazards[0], c.field) {
				t.Errorf("the controller's check says %q, want %s", hazards, c.field)
			}
			// The policy takes a moment to load after installPolicy.
			eventually(t, "refused at admission", func() error {
				err := k8s.Create(context.Background(), run.DeepCopy())
				if err == nil {
					_ = k8s.Delete(context.Background(), run.DeepCopy())
					return errors.New("admitted")
				}
				if !apierrors.IsInvalid(err) {
					return fmt.Errorf("want Invalid, got %v", err)
				}
				return containsAll(err.Error(), "turnwatch-agentrun-template", c.field)
			})
		})
	}
	t.Run("a restricted template with a service account of its own", func(t *testing.T) {
		run := newRun(ns, "good", func(r *twv1.AgentRun) {
			r.Spec.Template.Spec.ServiceAccountName = "agent-sa"
			r.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true)}
			r.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			r.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
		})
		if err := k8s.Create(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		// Changing the template later is judged as a create is; a patch
		// that leaves it alone is not.
		err := k8s.Patch(context.Background(), run.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"hostPID":true}}}}`)))
		if !apierrors.IsInvalid(err) || containsAll(err.Error(), "spec.template.spec.hostPID") != nil {
			t.Errorf("template changed to hostPID: %v, want Invalid naming the field", err)
		}
		if err := k8s.Patch(context.Background(), run.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"team":"a"}}}`))); err != nil {
			t.Errorf("a label patch: %v", err)
		}
	})
}

// Whatever service account a turn's template names, only the token bound
// to that turn's Pod writes its status: another turn's sidecar (same
// account, same namespace, pods/status granted) may not forge a verdict.
func TestTurnPodStatusProtected(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	ctx := context.Background()
	// The namespace's administrator gives the template's account the
	// sidecar's rights, as docs/security.md says to.
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent-sa", Namespace: ns}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-sa-sidecar", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentturn.SidecarClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent-sa", Namespace: ns}}})
	startManager(t, ns, managerOpts{})
	named := func(r *twv1.AgentRun) { r.Spec.Template.Spec.ServiceAccountName = "agent-sa" }
	create(t, newRun(ns, "mine", named))
	create(t, newRun(ns, "theirs", named))
	mine, theirs := waitPod(t, ns, "mine-0"), waitPod(t, ns, "theirs-0")

	token := func(pod *corev1.Pod) *kubernetes.Clientset {
		return kubernetes.NewForConfigOrDie(testenv.TokenConfig(restConfig, podToken(t, ns, "agent-sa", pod, 0)))
	}
	forged := []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"Result","message":%q}]}}`,
		protocol.ConditionFinished, `{"steps":1,"costUSD":"0","stopReason":"end","result":true,"lines":1,"unparsed":0}`))
	patch := func(c *kubernetes.Clientset, pod string) error {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, forged, metav1.PatchOptions{}, "status")
		return err
	}
	sidecarOfMine, unbound := token(mine), token(nil)
	eventually(t, "another turn's sidecar refused", func() error {
		err := patch(sidecarOfMine, theirs.Name)
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("want Forbidden, got %v", err)
		}
		return containsAll(err.Error(), "is written only by its own sidecar", "bound to Pod mine-0")
	})
	if err := patch(unbound, mine.Name); !apierrors.IsForbidden(err) || containsAll(err.Error(), "bound to no Pod") != nil {
		t.Errorf("a token bound to no Pod: %v, want Forbidden by the policy", err)
	}
	if err := patch(sidecarOfMine, mine.Name); err != nil {
		t.Errorf("the own sidecar may write its Pod's status: %v", err)
	}
}

// The manager's effective permissions, as the API server answers
// SelfSubjectRulesReview (what `kubectl auth can-i --list` shows) for an
// account bound to config/rbac/role.yaml, are the checked-in list
// config/rbac/effective-permissions.txt: in a namespace without turns, and
// what the sidecar's RoleBinding adds where turns run. A change of the
// markers, of the sidecar's ClusterRole or of that binding shows here as a
// diff to review. TURNWATCH_UPDATE_GOLDEN=1 rewrites the file.
func TestManagerEffectivePermissions(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	manager := managerClient(t, ns)
	// A namespace where no turn ran yet, and one where turns run: there the
	// sidecar's RoleBinding names the manager as its second subject
	// (manager_identity.go), which the list must show too.
	if err := installPolicy(); err != nil { // the turnwatch-sidecar ClusterRole
		t.Fatal(err)
	}
	other, turns := newNamespace(t), newNamespace(t)
	for _, obj := range agentturn.SidecarRBAC(turns, &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "turnwatch-manager", Namespace: ns}) {
		create(t, obj)
	}
	rules := func(namespace string) ([]string, error) {
		review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
		if err := manager.Create(ctx, review); err != nil {
			return nil, err
		}
		return ruleLines(review.Status), nil
	}
	var got string
	eventually(t, "the manager's rules", func() error {
		everywhere, err := rules(other)
		if err != nil {
			return err
		}
		where, err := rules(turns)
		if err != nil {
			return err
		}
		added := slices.DeleteFunc(where, func(l string) bool { return slices.Contains(everywhere, l) })
		if !strings.Contains(strings.Join(everywhere, "\n"), "turnwatch.dev") || len(added) == 0 {
			return errors.New("the RBAC cache has not seen the bindings yet")
		}
		got = formatRules(everywhere, added)
		return nil
	})
	golden := filepath.Join("..", "config", "rbac", "effective-permissions.txt")
	if os.Getenv("TURNWATCH_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (TURNWATCH_UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the manager's effective permissions changed; review, then TURNWATCH_UPDATE_GOLDEN=1:\n--- %s\n%s\n--- the API server says\n%s", golden, want, got)
	}
}

// ruleLines prints a rules review one line per API group and resource
// (or non-resource URL), verbs and names sorted, lines sorted: a stable
// text to diff.
func ruleLines(st authorizationv1.SubjectRulesReviewStatus) []string {
	type key struct{ what, names string }
	verbs := map[key][]string{}
	for _, r := range st.ResourceRules {
		names := strings.Join(slices.Sorted(slices.Values(r.ResourceNames)), ",")
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g == "" {
					g = "core"
				}
				k := key{g + " " + res, names}
				verbs[k] = append(verbs[k], r.Verbs...)
			}
		}
	}
	for _, r := range st.NonResourceRules {
		for _, u := range r.NonResourceURLs {
			k := key{"url " + u, ""}
			verbs[k] = append(verbs[k], r.Verbs...)
		}
	}
	lines := make([]string, 0, len(verbs))
	for k, v := range verbs {
		slices.Sort(v)
		line := fmt.Sprintf("%-58s %s", k.what, strings.Join(slices.Compact(v), ","))
		if k.names != "" {
			line += "  (only " + k.names + ")"
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return lines
}

// formatRules is the golden file: the rules in every namespace, then those
// added where turns run.
func formatRules(everywhere, added []string) string {
	return "# The manager's effective permissions, as the API server answers\n" +
		"# SelfSubjectRulesReview (kubectl auth can-i --list) for an account bound to\n" +
		"# config/rbac/role.yaml. Checked by controllers/security_test.go\n" +
		"# (TestManagerEffectivePermissions).\n" +
		"#\n# In every namespace (the leader-election Role adds its Lease and Events in\n" +
		"# the manager's own namespace only):\n" +
		strings.Join(everywhere, "\n") + "\n" +
		"#\n# Added in a namespace where turns run, by the turnwatch-sidecar RoleBinding\n" +
		"# there, which names the manager as its second subject (controllers/manager_identity.go):\n" +
		strings.Join(added, "\n") + "\n"
}

// The rendered Pod passes the restricted Pod Security Standard whenever the
// template does: the sidecar adds nothing the standard forbids.
func TestRestrictedPodSecurity(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: newNamespace(t) + "-r", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	create(t, ns)
	startManager(t, ns.Name, managerOpts{})
	create(t, newRun(ns.Name, "restricted", func(r *twv1.AgentRun) {
		r.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		r.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}))
	waitPod(t, ns.Name, "restricted-0")

	// The check bites: a template that is not restricted renders a Pod the
	// namespace refuses, and the turn says so.
	create(t, newRun(ns.Name, "loose", func(r *twv1.AgentRun) {
		r.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}
	}))
	consistently(t, "no Pod for the loose template", 2*time.Second, func() error {
		if _, err := getPod(ns.Name, "loose-0"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod loose-0: %v", err)
		}
		return nil
	})
}

// Nobody gets into the sidecar container (exec, attach) or next to it (an
// ephemeral container, which `kubectl debug --target` puts into its
// process namespace); the agent container stays open to exec.
func TestSidecarNoEntry(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "entry"))
	pod := waitPod(t, ns, "entry-0")
	cs := kubernetes.NewForConfigOrDie(restConfig)
	ctx := context.Background()
	connect := func(sub, container string) error {
		return cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod.Name).SubResource(sub).
			Param("container", container).Param("command", "cat").Param("stdout", "true").Do(ctx).Error()
	}
	for _, sub := range []string{"exec", "attach"} {
		eventually(t, sub+" into the sidecar refused", func() error {
			err := connect(sub, protocol.SidecarContainerName)
			if !apierrors.IsForbidden(err) {
				return fmt.Errorf("want Forbidden, got %v", err)
			}
			return containsAll(err.Error(), "turnwatch-sidecar-no-entry", "holds its Pod's credential")
		})
	}
	// Without a kubelet the exec fails further on; what matters is that no
	// turnwatch policy refused it.
	if err := connect("exec", "agent"); err == nil || strings.Contains(err.Error(), "turnwatch-") {
		t.Errorf("exec into the agent: %v, want it past admission", err)
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
		TargetContainerName:      protocol.SidecarContainerName,
	}}
	_, err := cs.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, pod.Name, pod, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || containsAll(err.Error(), "would share a process namespace") != nil {
		t.Errorf("ephemeral container: %v, want Forbidden by turnwatch-sidecar-no-entry", err)
	}
}

// A codex or pi drill (or run with its own model gateway) whose template
// never reads the endpoint env cannot be pointed at the sidecar's model:
// refused at apply, naming why; one whose
// template does (as the samples) is admitted, and so is a run that is no
// drill, and a drill of a CLI that reads the env itself.
func TestDrillNeedsEndpoint(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	drill := func(name string, format twv1.Format, args string) *twv1.AgentRun {
		return newRun(ns, name, func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.Drill = format, &twv1.Drill{Scenario: "identicalLoop"}
			r.Spec.Template.Spec.Containers[0].Args = []string{args}
		})
	}
	for _, c := range []struct {
		run  *twv1.AgentRun
		want string
	}{
		{drill("codex-builtin", twv1.FormatCodex, "codex exec --json hello"), "OPENAI_BASE_URL"},
		{drill("pi-default", twv1.FormatPi, "pi --mode json hello"), "models.json"},
		{newRun(ns, "codex-gateway", func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.Model = twv1.FormatCodex, &twv1.Model{Gateway: testGateway()}
			r.Spec.Template.Spec.Containers[0].Args = []string{"codex exec --json hello"}
		}), "a codex run with a model gateway needs the template to read OPENAI_BASE_URL"},
	} {
		eventually(t, "refused at admission: "+c.run.Name, func() error {
			err := k8s.Create(context.Background(), c.run.DeepCopy())
			if err == nil {
				_ = k8s.Delete(context.Background(), c.run.DeepCopy())
				return errors.New("admitted")
			}
			return containsAll(err.Error(), "turnwatch-agentrun-drill", "spec.template", c.want)
		})
	}
	for _, run := range []*twv1.AgentRun{
		drill("codex-provider", twv1.FormatCodex, `codex exec -c "model_providers.turnwatch.base_url=$OPENAI_BASE_URL" hi`),
		drill("pi-models", twv1.FormatPi, `printf '{"providers":{"anthropic":{"baseUrl":"%s"}}}' "$ANTHROPIC_BASE_URL" > "$HOME/.pi/agent/models.json" && pi`),
		drill("opencode", twv1.FormatOpencode, "opencode run --format json hi"),
		newRun(ns, "not-a-drill", func(r *twv1.AgentRun) {
			r.Spec.Format = twv1.FormatCodex
			r.Spec.Template.Spec.Containers[0].Args = []string{"codex exec --json hello"}
		}),
	} {
		if err := k8s.Create(context.Background(), run); err != nil {
			t.Errorf("%s: %v", run.Name, err)
		}
	}
}
