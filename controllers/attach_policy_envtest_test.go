package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// attachOptions are the manager's render options in these tests.
func attachOptions() render.RenderOptions {
	cfg := shared.DefaultConfig()
	return render.RenderOptions{SidecarImage: "turnwatch:attach-test", Guards: cfg.Guards,
		Resources: cfg.Sidecar.Resources, Freshness: cfg.Freshness()}
}

// attachNamespace is a namespace labelled for attach, with what the manager
// keeps there: the sidecar's account and the policy's ConfigMap, holding
// guards.
func attachNamespace(t *testing.T, o render.RenderOptions, guards string) string {
	t.Helper()
	ns := newNamespace(t)
	setAttachLabel(t, ns, twv1.AttachEnabled)
	for _, obj := range agentturn.AttachRBAC(ns, nil)[:1] { // the account
		create(t, obj)
	}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: twv1.AttachParams, Namespace: ns},
		Data: render.AttachParams(o, render.AttachNamespace{Guards: []byte(guards), Limits: []byte(`{"stepBudget":300}`)})})
	return ns
}

// watchedPod is a Pod as a Job would create it, labelled for watch.
func watchedPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "agent", Image: "agent:test"}},
		},
	}
}

// TestAttachInjectsTheTurnSidecar: the admission policy turnwatch-attach,
// on a real API server, gives a Pod labelled for watch in a namespace
// labelled for attach the sidecar a turn's Pod gets: the container (but
// the env its run sets), its mounts and its volumes, defaulted alike by the
// same server. The env has every name a turn's sidecar has; the format,
// the agent container, the guards and the Pod's identity are the same.
func TestAttachInjectsTheTurnSidecar(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	o := attachOptions()
	turnNS := newNamespace(t)
	run := newRun(turnNS, "same", func(r *twv1.AgentRun) { r.Spec.Format = twv1.FormatPi })
	turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: "same-0", Namespace: turnNS}, Spec: twv1.AgentTurnSpec{RunName: "same"}}
	rendered, err := render.RenderPod(run, turn, o)
	if err != nil {
		t.Fatal(err)
	}
	create(t, rendered)
	want := fixtureEnv(rendered.Spec.InitContainers[0])

	ns := attachNamespace(t, o, want[protocol.EnvGuards])
	pod := watchedPod(ns, "job-abc12", map[string]string{twv1.LabelWatch: "pi"})
	eventually(t, "the policy in force", func() error {
		p := pod.DeepCopy()
		if err := k8s.Create(context.Background(), p); err != nil {
			return err
		}
		if len(p.Spec.InitContainers) == 0 {
			_ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0))
			return fmt.Errorf("created without a sidecar")
		}
		pod = p
		return nil
	})
	got, wantC := pod.Spec.InitContainers[0], rendered.Spec.InitContainers[0]
	if pod.Spec.ServiceAccountName != render.AttachServiceAccount {
		t.Errorf("serviceAccountName %q, want %q", pod.Spec.ServiceAccountName, render.AttachServiceAccount)
	}
	gotEnv := fixtureEnv(got)
	got.Env, wantC.Env = nil, nil
	if !equality.Semantic.DeepEqual(got, wantC) {
		t.Errorf("the attached sidecar differs from a turn's:\n got %+v\nwant %+v", got, wantC)
	}
	for name, v := range want {
		g, ok := gotEnv[name]
		switch {
		case !ok:
			t.Errorf("the attached sidecar has no %s", name)
		case sameInBoth[name] && g != v:
			t.Errorf("%s = %q, want %q as in a turn's Pod", name, g, v)
		}
	}
	for _, name := range []string{render.TokenVolume, render.StateVolume} {
		if !equality.Semantic.DeepEqual(volumeOf(pod, name), volumeOf(rendered, name)) {
			t.Errorf("volume %s: got %+v, want %+v", name, volumeOf(pod, name), volumeOf(rendered, name))
		}
	}
	if gotEnv[protocol.EnvGuardLimits] != `{"stepBudget":300}` {
		t.Errorf("%s = %q: not the namespace's limits", protocol.EnvGuardLimits, gotEnv[protocol.EnvGuardLimits])
	}
}

// sameInBoth are the sidecar's env whose values an attached Pod's sidecar
// and a turn's have alike when the namespace's guards are the run's.
var sameInBoth = map[string]bool{protocol.EnvFormat: true, protocol.EnvGuards: true, protocol.EnvAgentContainer: true,
	protocol.EnvProgressPeriod: true, protocol.EnvStateDir: true, protocol.EnvPodName: true, protocol.EnvPodNamespace: true}

// fixtureEnv is c's env by name: a value, or the field a downward API
// reference names.
func fixtureEnv(c corev1.Container) map[string]string {
	m := envOf(c)
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			m[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		}
	}
	return m
}

// hasSidecar says whether pod was given the sidecar (a Pod may have init
// containers of its own).
func hasSidecar(pod *corev1.Pod) bool {
	return len(pod.Spec.InitContainers) > 0 && pod.Spec.InitContainers[0].Name == protocol.SidecarContainerName
}

func volumeOf(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// TestAttachOptIn: nothing is injected into a Pod without the watch label,
// nor into a labelled Pod of a namespace without the attach label; a Pod
// that names its own account keeps it; the agent container label and the
// guards annotation reach the sidecar.
func TestAttachOptIn(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	o := attachOptions()
	ns := attachNamespace(t, o, `{"stepBudget":256}`)
	plain := newNamespace(t)
	own := watchedPod(ns, "own-account", map[string]string{twv1.LabelWatch: "claude", twv1.LabelAgentContainer: "main"})
	own.Spec.ServiceAccountName = "default-tools"
	own.Annotations = map[string]string{twv1.AnnotationGuards: `{"stepBudget":64}`}
	own.Spec.Containers = append([]corev1.Container{{Name: "proxy", Image: "proxy:test"}}, corev1.Container{Name: "main", Image: "agent:test",
		VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}}})
	// A Pod's own volumes and init containers stay, the sidecar first.
	own.Spec.Volumes = []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	own.Spec.InitContainers = []corev1.Container{{Name: "clone", Image: "git:test"}}
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-tools", Namespace: ns}})
	tests := []struct {
		pod     *corev1.Pod
		sidecar bool
		check   func(t *testing.T, p *corev1.Pod)
	}{
		{own, true, func(t *testing.T, p *corev1.Pod) {
			env := fixtureEnv(p.Spec.InitContainers[0])
			if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[1].Name != "clone" || len(p.Spec.Volumes) != 3 || p.Spec.Volumes[0].Name != "workspace" {
				t.Errorf("init containers %v, volumes %v: want the sidecar first, then the Pod's; the Pod's volume, then the sidecar's", p.Spec.InitContainers, p.Spec.Volumes)
			}
			if p.Spec.ServiceAccountName != "default-tools" || env[protocol.EnvAgentContainer] != "main" ||
				env[protocol.EnvFormat] != "claude" || env[protocol.EnvGuardsOverride] != `{"stepBudget":64}` {
				t.Errorf("account %q, env %v", p.Spec.ServiceAccountName, env)
			}
		}},
		// After the first: the policy is in force.
		{watchedPod(ns, "unwatched", nil), false, nil},
		{watchedPod(plain, "not-attached", map[string]string{twv1.LabelWatch: "pi"}), false, nil},
	}
	for _, tt := range tests {
		p := tt.pod
		eventually(t, "pod "+p.Name, func() error {
			q := p.DeepCopy()
			if err := k8s.Create(context.Background(), q); err != nil {
				return err
			}
			if injected := hasSidecar(q); injected != tt.sidecar {
				_ = k8s.Delete(context.Background(), q, client.GracePeriodSeconds(0))
				return fmt.Errorf("%s/%s: sidecar %v, want %v", q.Namespace, q.Name, injected, tt.sidecar)
			}
			p = q
			return nil
		})
		if tt.check != nil {
			tt.check(t, p)
		}
	}
}

// TestAttachHoldsAgainstTheEditor: a namespace's editor (the built-in
// edit role) gets the attach account only for what turnwatch-attach made,
// and cannot write the policy's parameters: not the ConfigMap's image or
// limits, nor delete it.
func TestAttachHoldsAgainstTheEditor(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := attachNamespace(t, attachOptions(), `{"stepBudget":256}`)
	editor, err := client.New(editorOf(t, ns), client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	// refused waits for the policies to be in force: a write they let
	// through is undone and tried again.
	refused := func(what string, write func() error, undo func(), parts ...string) {
		t.Helper()
		eventually(t, what, func() error {
			err := write()
			if err == nil {
				undo()
				return fmt.Errorf("%s: allowed", what)
			}
			return containsAll(err.Error(), parts...)
		})
	}
	// Watched: the policy's Pod, whoever creates it (a Job's controller).
	eventually(t, "a watched Pod created by the editor runs as the attach account", func() error {
		p := watchedPod(ns, "watched", map[string]string{twv1.LabelWatch: "codex"})
		if err := editor.Create(ctx, p); err != nil {
			return err
		}
		if p.Spec.ServiceAccountName != render.AttachServiceAccount {
			_ = k8s.Delete(ctx, p, client.GracePeriodSeconds(0))
			return fmt.Errorf("runs as %q", p.Spec.ServiceAccountName)
		}
		return nil
	})
	own := watchedPod(ns, "own", nil)
	own.Spec.ServiceAccountName = render.AttachServiceAccount
	refused("an unwatched Pod that runs as the attach account", func() error { return editor.Create(ctx, own.DeepCopy()) },
		func() { _ = k8s.Delete(ctx, own, client.GracePeriodSeconds(0)) }, "turnwatch-attach is the account of attached Pods")

	cm := &corev1.ConfigMap{}
	if err := editor.Get(ctx, client.ObjectKey{Namespace: ns, Name: twv1.AttachParams}, cm); err != nil {
		t.Fatal(err)
	}
	raised := cm.DeepCopy()
	raised.Data[render.ParamLimits] = `{}`
	refused("the editor raises the limits", func() error { return editor.Update(ctx, raised.DeepCopy()) },
		func() { _ = k8s.Update(ctx, cm.DeepCopy()) }, "turnwatch-attach holds the parameters", "may not update")
	refused("the editor deletes the parameters", func() error { return editor.Delete(ctx, cm.DeepCopy()) },
		func() { t.Fatal("the parameters are gone") }, "may not delete")
	// The namespace controller deletes a namespace's ConfigMaps all at
	// once, a request that names none: held, the namespace never goes.
	if err := k8s.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
		t.Errorf("deleting every ConfigMap of the namespace, as its deletion does: %v", err)
	}
}

// TestAttachNamespaceReady: the manager readies a namespace once it is
// labelled for attach (the attached sidecars' account and RoleBinding, the
// policy's parameters from its own options and the namespace's policies),
// follows its policies' limits, and takes the parameters away with the
// label; a Pod created there in between gets the manager's sidecar.
func TestAttachNamespaceReady(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	setAttachLabel(t, ns, twv1.AttachEnabled)
	params := func() (map[string]string, error) {
		cm := &corev1.ConfigMap{}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: twv1.AttachParams}, cm)
		return cm.Data, err
	}
	eventually(t, "the namespace ready", func() error {
		for _, obj := range agentturn.AttachRBAC(ns, nil) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		d, err := params()
		if err == nil && d[render.ParamImage] != "turnwatch-sidecar:test" {
			return fmt.Errorf("params %v", d)
		}
		return err
	})
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "caps", Namespace: ns},
		Spec: twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](100)}}})
	eventually(t, "the limits followed", func() error {
		d, err := params()
		if err != nil {
			return err
		}
		return containsAll(d[render.ParamLimits]+d[render.ParamGuards], `{"stepBudget":100}`, `"stepBudget":100`)
	})
	// A gateway: its upstream, key and requirement, and a placeholder key
	// that stays the namespace's when the policy changes.
	gw := &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: ns}, Spec: twv1.TurnPolicySpec{
		Model: &twv1.ModelPolicy{Gateway: attachedGateway.DeepCopy(), RequireGateway: true}}}
	create(t, gw)
	var token string
	eventually(t, "the gateway in the parameters", func() error {
		d, err := params()
		if err != nil {
			return err
		}
		token = d[render.ParamModelToken]
		if d[render.ParamModelUpstream] != attachedGateway.Upstream || d[render.ParamModelKeySecret] != "model-key" ||
			d[render.ParamModelRequired] != "TurnPolicy/gw" || !strings.HasPrefix(token, "turnwatch-placeholder-") {
			return fmt.Errorf("params %v", d)
		}
		return nil
	})
	eventually(t, "the policy's upstream changed", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Spec.Model.Gateway.Upstream = "https://other.example"
		return k8s.Update(ctx, gw)
	})
	eventually(t, "the new upstream, the same token", func() error {
		d, err := params()
		if err == nil && (d[render.ParamModelUpstream] != "https://other.example" || d[render.ParamModelToken] != token) {
			return fmt.Errorf("params %v, token was %q", d, token)
		}
		return err
	})
	if err := k8s.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an attached Pod", func() error {
		p := watchedPod(ns, "attached", map[string]string{twv1.LabelWatch: "pi"})
		if err := k8s.Create(ctx, p); err != nil {
			return err
		}
		if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Image != "turnwatch-sidecar:test" {
			_ = k8s.Delete(ctx, p, client.GracePeriodSeconds(0))
			return fmt.Errorf("init containers %v", p.Spec.InitContainers)
		}
		return nil
	})
	setAttachLabel(t, ns, "")
	eventually(t, "the parameters gone with the label", func() error {
		if _, err := params(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
}

// setAttachLabel sets (or with "", removes) ns's attach label.
func setAttachLabel(t *testing.T, ns, value string) {
	t.Helper()
	obj := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	if value == "" {
		delete(obj.Labels, twv1.LabelAttach)
	} else {
		obj.Labels[twv1.LabelAttach] = value
	}
	if err := k8s.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}
