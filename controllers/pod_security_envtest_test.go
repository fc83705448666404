package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
)

// The admission policies turnwatch-agentrun-template (baseline) and
// turnwatch-agentrun-pod-security, turnwatch-agentrun-cluster-pod-security
// (restricted, where a policy asks) on a real API server, tried with every
// case of podSecurityCases: each refusal names its field, and what the
// standard admits is admitted.

// caseRun is a run whose template is the case's.
func caseRun(ns string, c podSecurityCase) *twv1.AgentRun {
	return newRun(ns, "probe-"+rand.String(6), func(r *twv1.AgentRun) { r.Spec.Template = *newCaseTemplate(c) })
}

// judgeCase dry-runs the case's run in ns: nil when the API server does
// what the case says, refusing with the policy and the field named.
func judgeCase(ns string, c podSecurityCase, policy string, also ...string) error {
	err := k8s.Create(context.Background(), caseRun(ns, c), client.DryRunAll)
	if c.field == "" {
		if err != nil {
			return fmt.Errorf("refused: %w", err)
		}
		return nil
	}
	if err == nil {
		return errors.New("admitted")
	}
	if !apierrors.IsInvalid(err) {
		return fmt.Errorf("want Invalid, got %w", err)
	}
	return containsAll(err.Error(), append([]string{policy, c.field + ":"}, also...)...)
}

// Baseline, for every run: in a namespace without the administrator's
// label, and (the node's network cases) in one with it.
func TestPodSecurityBaselineAtAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	plain := newNamespace(t)
	consenting := labelledNamespace(t, map[string]string{twv1.LabelHostNetwork: twv1.HostNetworkAllowed})
	// The policy takes a moment to load after installPolicy.
	eventually(t, "the baseline to hold", func() error {
		return judgeCase(plain, podSecurityCases[2], "turnwatch-agentrun-template")
	})
	for _, c := range podSecurityCases {
		if c.level != twv1.PodSecurityBaseline {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			ns := plain
			if c.consent {
				ns = consenting
			}
			if err := judgeCase(ns, c, "turnwatch-agentrun-template", "does not meet Pod Security baseline"); err != nil {
				t.Error(err)
			}
		})
	}
	// Another value of the label, or the label on another namespace, is no
	// consent.
	other := labelledNamespace(t, map[string]string{twv1.LabelHostNetwork: "true"})
	hostNet := podSecurityCase{"host network", twv1.PodSecurityBaseline, false,
		specOf(func(s *corev1.PodSpec) { s.HostNetwork = true }), podPath + ".hostNetwork"}
	if err := judgeCase(other, hostNet, "turnwatch-agentrun-template", "turnwatch.dev/host-network=allowed"); err != nil {
		t.Errorf("label turnwatch.dev/host-network=true: %v", err)
	}
	// The legacy seccomp annotation, which the API server still copies
	// into the field; Kubernetes' evaluator reads only the field.
	legacy := podSecurityCase{"seccomp annotation", twv1.PodSecurityBaseline, false, annotate(render.SeccompPodAnnotation, "unconfined"),
		"spec.template.metadata.annotations[" + render.SeccompPodAnnotation + "]"}
	if err := judgeCase(plain, legacy, "turnwatch-agentrun-template"); err != nil {
		t.Errorf("the seccomp annotation: %v", err)
	}
	if p := render.PodSecurityProblems(&metav1.ObjectMeta{Annotations: map[string]string{render.SeccompAnnotationPrefix + "agent": "unconfined"}}, &corev1.PodSpec{}, render.PodSecurity{}); len(p) != 1 {
		t.Errorf("the controller on a container's seccomp annotation: %q", p)
	}
	// Every problem is named, not only the first.
	two := podSecurityCase{"two", twv1.PodSecurityBaseline, false, func(p *corev1.PodTemplateSpec) {
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN", "NET_RAW"}}}
	}, podPath + ".hostNetwork"}
	if err := judgeCase(plain, two, "turnwatch-agentrun-template", agentPath+".securityContext.capabilities.add: SYS_ADMIN, NET_RAW"); err != nil {
		t.Errorf("two problems: %v", err)
	}
}

// Restricted where a TurnPolicy or a ClusterTurnPolicy asks it, and only
// there; the refusal names the policy.
func TestPodSecurityRestrictedAtAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	loose := podSecurityCase{"a baseline template", twv1.PodSecurityRestricted, false, func(p *corev1.PodTemplateSpec) {
		p.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "a"}}}
	}, agentPath + ".securityContext.allowPrivilegeEscalation"}
	// A run made before the policy, baseline only.
	before := caseRun(ns, loose)
	create(t, before)
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: ns}, Spec: twv1.TurnPolicySpec{PodSecurity: twv1.PodSecurityRestricted}})
	eventually(t, "restricted to hold in "+ns, func() error {
		return judgeCase(ns, loose, "turnwatch-agentrun-pod-security", "Pod Security restricted (asked by TurnPolicy/strict)")
	})
	for _, c := range podSecurityCases {
		if c.level != twv1.PodSecurityRestricted || c.consent {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			if err := judgeCase(ns, c, "turnwatch-agentrun-pod-security", "TurnPolicy/strict"); err != nil {
				t.Error(err)
			}
		})
	}
	// The run made before the policy still takes the manager's label and
	// finalizer patches; a change of its template is judged.
	if err := k8s.Patch(ctx, before.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`))); err != nil {
		t.Errorf("a label patch of a run made before the policy: %v", err)
	}
	err := k8s.Patch(ctx, before.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{"metadata":{"labels":{"x":"y"}}}}}`)))
	if containsAll(fmt.Sprint(err), "turnwatch-agentrun-pod-security", loose.field) != nil {
		t.Errorf("a template change of a run made before the policy: %v, want refused naming %s", err, loose.field)
	}
	// A baseline policy, or none, asks nothing more.
	other := newNamespace(t)
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: other}, Spec: twv1.TurnPolicySpec{PodSecurity: twv1.PodSecurityBaseline}})
	loose.field = ""
	if err := judgeCase(other, loose, ""); err != nil {
		t.Errorf("a namespace whose policy asks baseline: %v", err)
	}

	// A ClusterTurnPolicy: in the namespaces it selects, and only there.
	id := rand.String(8)
	const own = "podsecurity.turnwatch.dev/test"
	selected, unselected := labelledNamespace(t, map[string]string{own: id}), labelledNamespace(t, map[string]string{own: "no"})
	pol := &twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "restricted-" + id}}
	pol.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{own: id}}
	pol.Spec.PodSecurity = twv1.PodSecurityRestricted
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	loose.field = agentPath + ".securityContext.allowPrivilegeEscalation"
	eventually(t, "the cluster policy to hold", func() error {
		return judgeCase(selected, loose, "turnwatch-agentrun-cluster-pod-security", "ClusterTurnPolicy/"+pol.Name)
	})
	loose.field = ""
	if err := judgeCase(unselected, loose, ""); err != nil {
		t.Errorf("a namespace the cluster policy does not select: %v", err)
	}
}

// The controller holds the same line when it renders (a run admitted
// before the policy, or where the admission policies are not installed):
// the turn fails as infra naming the fields, and no Pod is made. Here the
// administrator takes the node's network back from a namespace after a
// run was admitted, and a policy asks restricted after another was.
func TestPodSecurityAtRender(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := labelledNamespace(t, map[string]string{twv1.LabelHostNetwork: twv1.HostNetworkAllowed})
	noRerolls := func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)} }
	eventually(t, "the node's network admitted with consent", func() error {
		return k8s.Create(ctx, newRun(ns, "host", noRerolls, func(r *twv1.AgentRun) { r.Spec.Template.Spec.HostNetwork = true }))
	})
	create(t, newRun(ns, "loose", noRerolls))
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: ns}, Spec: twv1.TurnPolicySpec{PodSecurity: twv1.PodSecurityRestricted}})
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	delete(nsObj.Labels, twv1.LabelHostNetwork)
	if err := k8s.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	startManager(t, ns, managerOpts{})
	for run, want := range map[string][]string{
		"host":  {"does not meet Pod Security restricted (asked by TurnPolicy/strict)", podPath + ".hostNetwork:", agentPath + ".securityContext.allowPrivilegeEscalation:"},
		"loose": {"does not meet Pod Security restricted (asked by TurnPolicy/strict)", agentPath + ".securityContext.runAsNonRoot:", agentPath + ".securityContext.capabilities.drop:"},
	} {
		turn := turnSettled(t, ns, run+"-0")
		if turn.Status.Outcome != twv1.TurnFailed || turn.Status.Error == nil || turn.Status.Error.Type != twv1.ClassInfra {
			t.Errorf("turn %s: %s %+v, want Failed as infra", turn.Name, turn.Status.Outcome, turn.Status.Error)
			continue
		}
		if err := containsAll(turn.Status.Error.Message, want...); err != nil {
			t.Errorf("turn %s: %v", turn.Name, err)
		}
		if _, err := getPod(ns, run+"-0"); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s-0: %v, want none", run, err)
		}
	}
}
