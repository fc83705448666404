//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// TestSecurityAttacks plays a hostile agent, and a hostile template author,
// on the real node down every path to the sidecar's credential or its
// verdict (docs/security.md). Each is refused, and the test asserts how.
func TestSecurityAttacks(t *testing.T) {
	needOperator(t)

	t.Run("refused at apply", func(t *testing.T) {
		cases := []struct {
			name   string
			mutate func(spec, agent map[string]any)
			field  string
		}{
			{"mount the sidecar's token volume", func(_, a map[string]any) {
				a["volumeMounts"] = []any{map[string]any{"name": "turnwatch-sidecar-token", "mountPath": "/stolen"}}
			}, "spec.template.spec.containers[agent].volumeMounts"},
			{"share the process namespace", func(s, _ map[string]any) { s["shareProcessNamespace"] = true },
				"spec.template.spec.shareProcessNamespace"},
			{"run as the sidecar's user", func(_, a map[string]any) {
				a["securityContext"] = map[string]any{"runAsUser": protocol.SidecarUID}
			}, "spec.template.spec.containers[agent].securityContext.runAsUser"},
			{"project a token of its own", func(s, a map[string]any) {
				s["volumes"] = []any{map[string]any{"name": "tok", "projected": map[string]any{
					"sources": []any{map[string]any{"serviceAccountToken": map[string]any{"path": "token"}}}}}}
				a["volumeMounts"] = []any{map[string]any{"name": "tok", "mountPath": "/tok"}}
			}, "spec.template.spec.volumes[tok].projected.sources.serviceAccountToken"},
			{"host PID", func(s, _ map[string]any) { s["hostPID"] = true }, "spec.template.spec.hostPID"},
			// An AgentRun is no stronger than a Pod (Pod Security baseline).
			{"add SYS_ADMIN", func(_, a map[string]any) {
				a["securityContext"] = map[string]any{"capabilities": map[string]any{"add": []any{"SYS_ADMIN"}}}
			}, "spec.template.spec.containers[agent].securityContext.capabilities.add"},
			{"turn seccomp off", func(s, _ map[string]any) {
				s["securityContext"] = map[string]any{"seccompProfile": map[string]any{"type": "Unconfined"}}
			}, "spec.template.spec.securityContext.seccompProfile.type"},
			{"the kubelet's directory", func(s, _ map[string]any) {
				s["volumes"] = []any{map[string]any{"name": "kubelet", "hostPath": map[string]any{"path": "/var/lib/kubelet"}}}
			}, "spec.template.spec.volumes[kubelet].hostPath"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				run := agentRun(fmt.Sprintf("hostile-%d", i), runSpec{scenario: "healthy", format: "pi", speed: 4})
				spec := run.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				c.mutate(spec, spec["containers"].([]any)[0].(map[string]any))
				out, err := kubectlApply(t, run)
				if err == nil {
					t.Fatalf("kubectl apply admitted it:\n%s", out)
				}
				if missing, ok := containsAll(out, "turnwatch-agentrun-template", "denied request", c.field); !ok {
					t.Errorf("kubectl apply refused it, but the message lacks %q:\n%s", missing, out)
				}
				t.Logf("kubectl apply: %s", strings.TrimSpace(out))
			})
		}
		// The node's network is the administrator's to give: in a
		// namespace without the label, the runs every other test makes
		// here are refused.
		t.Run("the node's network without the administrator's consent", func(t *testing.T) {
			ns := env.ns + "-no-host-network"
			if _, err := kubectl("create", "namespace", ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = kubectl("delete", "namespace", ns, "--wait=false") })
			run := agentRun("host-network", runSpec{scenario: "healthy", format: "pi", speed: 4})
			run.SetNamespace(ns)
			out, err := kubectlApply(t, run)
			if err == nil {
				t.Fatalf("kubectl apply admitted it:\n%s", out)
			}
			if missing, ok := containsAll(out, "turnwatch-agentrun-template", "denied request", "spec.template.spec.hostNetwork", "turnwatch.dev/host-network=allowed"); !ok {
				t.Errorf("kubectl apply refused it, but the message lacks %q:\n%s", missing, out)
			}
		})
	})

	// A template that names its own account, which the namespace gave the
	// sidecar's rights; and a neighbour on the default account. The hostile
	// agent of the first looks for a credential and forges Finished.
	const sa = "agent-sa"
	if _, err := env.kube.CoreV1().ServiceAccounts(env.ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := env.kube.RbacV1().RoleBindings(env.ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-sidecar"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "turnwatch-sidecar"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: env.ns}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	hostile := agentRun("hostile-agent", runSpec{scenario: "healthy", format: "pi", speed: 1})
	spec := hostile.Object["spec"].(map[string]any)
	spec["rerolls"] = map[string]any{"max": int64(0)}
	tmpl := spec["template"].(map[string]any)["spec"].(map[string]any)
	tmpl["serviceAccountName"] = sa
	agent := tmpl["containers"].([]any)[0].(map[string]any)
	agent["args"] = []any{"attack"}
	agent["env"] = []any{
		map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
		map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
	}
	if _, err := env.dyn.Resource(agentRunGVR).Namespace(env.ns).Create(context.Background(), hostile, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRun(t, "neighbour", runSpec{scenario: "silentRun", format: "pi", speed: 0.5})
	neighbour := waitPodOfRun(t, "neighbour")

	t.Run("the agent finds no credential and cannot forge Finished", func(t *testing.T) {
		run := waitRun(t, "hostile-agent", 3*time.Minute)
		if phase := str(run, "status", "phase"); phase == "Succeeded" {
			t.Fatalf("the hostile agent's run Succeeded: a forged verdict was believed")
		}
		turns := turnsOf("hostile-agent")
		p, ok := podOfTurn("hostile-agent", turns[0])
		if !ok {
			t.Fatal("no Pod")
		}
		if c, ok := podCondition(p, protocol.ConditionFinished); ok && strings.Contains(c.Message, `"result":true`) {
			t.Errorf("Finished with a result on the hostile Pod: %+v", c)
		}
		logs, err := kubectl("-n", env.ns, "logs", p.Name, "-c", "agent")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the hostile agent's log:\n%s", logs)
		// Anonymous: 403 where anonymous requests are on (RBAC refuses
		// system:anonymous), 401 where they are off.
		for _, want := range []string{
			"attack: read /var/run/secrets/kubernetes.io/serviceaccount/token: ENOENT",
			"attack: forge Finished: HTTP 40",
			"(token found: false)",
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("the agent's log lacks %q", want)
			}
		}
		if strings.Contains(logs, ": READ") {
			t.Errorf("the agent read a token")
		}
		if p.Spec.ServiceAccountName != sa {
			t.Errorf("serviceAccountName %q, want the template's %q", p.Spec.ServiceAccountName, sa)
		}
	})

	t.Run("a sidecar's token cannot forge or read another Pod", func(t *testing.T) {
		turns := turnsOf("hostile-agent")
		own, ok := podOfTurn("hostile-agent", turns[0])
		if !ok {
			t.Fatal("no Pod")
		}
		token, err := sidecarToken(own)
		if err != nil {
			t.Skipf("the hostile Pod's token is gone with its containers: %v", err)
		}
		logTokenFile(t, own)
		cfg := rest.AnonymousClientConfig(env.cfg)
		cfg.BearerToken = token
		as := kubernetes.NewForConfigOrDie(cfg)
		ctx := context.Background()
		forged := []byte(`{"status":{"conditions":[{"type":"turnwatch.dev/Finished","status":"True","reason":"Result","message":"{\"steps\":1,\"costUSD\":\"0\",\"stopReason\":\"end\",\"result\":true,\"lines\":1,\"unparsed\":0}"}]}}`)
		_, err = as.CoreV1().Pods(env.ns).Patch(ctx, neighbour, types.StrategicMergePatchType, forged, metav1.PatchOptions{}, "status")
		if !apierrors.IsForbidden(err) {
			t.Errorf("patching the neighbour's status with the sidecar token of %s: %v, want Forbidden", own.Name, err)
		} else if missing, ok := containsAll(err.Error(), "turnwatch-turn-pod-status", "is written only by its own sidecar"); !ok {
			t.Errorf("refused, but not by the turn-pod policy (%q missing): %v", missing, err)
		} else {
			t.Logf("forging the neighbour's Finished: %v", err)
		}
		_, err = as.CoreV1().Pods("default").GetLogs("anything", &corev1.PodLogOptions{}).DoRaw(ctx)
		if !apierrors.IsForbidden(err) {
			t.Errorf("reading a Pod log in another namespace: %v, want Forbidden", err)
		}
		// The limit RBAC cannot draw (docs/security.md): within its
		// namespace, the sidecar's account may read other Pods' logs.
		_, err = as.CoreV1().Pods(env.ns).GetLogs(neighbour, &corev1.PodLogOptions{Container: "agent"}).DoRaw(ctx)
		t.Logf("reading the neighbour's log in the same namespace (known, documented limit): err=%v", err)
	})

	t.Run("nobody gets into the sidecar container", func(t *testing.T) {
		for _, args := range [][]string{
			{"-n", env.ns, "exec", neighbour, "-c", protocol.SidecarContainerName, "--", "/usr/local/bin/turnwatch-sidecar", "--help"},
			{"-n", env.ns, "debug", neighbour, "--image=" + fakeAgentImage, "--image-pull-policy=Never", "--target=" + protocol.SidecarContainerName, "--", "/usr/local/bin/fakeagent", "attack"},
		} {
			out, err := kubectl(args...)
			if err == nil {
				t.Errorf("kubectl %s was let in:\n%s", args[2], out)
				continue
			}
			if missing, ok := containsAll(out, "turnwatch-sidecar-no-entry"); !ok {
				t.Errorf("kubectl %s refused, but not by the policy (%q missing):\n%s", args[2], missing, out)
			}
			t.Logf("kubectl %s: %s", args[2], strings.TrimSpace(out))
		}
	})

	t.Run("a shared process namespace, were it admitted, still hides the token", func(t *testing.T) {
		sharedPIDPod(t)
	})

	t.Run("the rendered Pod is admitted by a restricted namespace", func(t *testing.T) {
		restrictedPod(t)
	})
	_ = env.dyn.Resource(agentRunGVR).Namespace(env.ns).Delete(context.Background(), "neighbour", metav1.DeleteOptions{})
}

// kubectlApply applies obj with the node's kubectl, as a user would, and
// returns kubectl's output.
func kubectlApply(t *testing.T, obj *unstructured.Unstructured) (string, error) {
	t.Helper()
	b, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return kubectl("apply", "-f", f)
}

// restrictedPod: in a namespace enforcing the restricted Pod Security
// Standard, a restricted template's turn Pod (the sidecar injected) is
// admitted. This node has no pod network (REALNODE.md: every Pod needs
// hostNetwork, which the standard forbids), so the Pod is admitted but
// cannot start here; the sidecar's own settings are checked on the object.
func restrictedPod(t *testing.T) {
	ctx := context.Background()
	ns := env.ns + "-restricted"
	_, err := env.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	run := agentRun("restricted", runSpec{scenario: "healthy", format: "pi", speed: 4})
	run.SetNamespace(ns)
	tmpl := run.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	delete(tmpl, "hostNetwork")
	tmpl["securityContext"] = map[string]any{"runAsNonRoot": true, "runAsUser": int64(65532), "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	tmpl["containers"].([]any)[0].(map[string]any)["securityContext"] = map[string]any{
		"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}
	if _, err := env.dyn.Resource(agentRunGVR).Namespace(ns).Create(ctx, run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	err = waitFor(ctx, time.Minute, "the restricted turn's Pod", func() (bool, error) {
		p, err := env.kube.CoreV1().Pods(ns).Get(ctx, "restricted-0", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return true, nil
	})
	if err != nil {
		out, _ := kubectl("-n", ns, "get", "events", "-o", "wide")
		t.Fatalf("%v\n%s", err, out)
	}
	sc := pod.Spec.InitContainers[0].SecurityContext
	if pod.Spec.InitContainers[0].Name != protocol.SidecarContainerName || sc == nil || *sc.RunAsUser != protocol.SidecarUID {
		t.Errorf("sidecar %+v", pod.Spec.InitContainers[0])
	}
	t.Logf("admitted in a restricted namespace: Pod %s/%s, sidecar user %d", ns, pod.Name, *sc.RunAsUser)
}

// logTokenFile reports the owner and mode the kubelet gave the sidecar's
// token file on the host (docs/security.md explains why it is root's).
func logTokenFile(t *testing.T, p *corev1.Pod) {
	path := filepath.Join(nodeDir(), "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~projected", "turnwatch-sidecar-token", "token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Logf("token file: %v", err)
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		t.Logf("the sidecar's token file on the node: mode %v, owner %d:%d", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("the token file is writable: %v", fi.Mode())
	}
}

// sharedPIDPod checks the second wall behind the refused
// shareProcessNamespace: a Pod made directly (no AgentRun, so no policy
// stops it) that shares its process namespace, with a stand-in sidecar
// running as the reserved user and holding a real projected token, and the
// hostile agent as another user. The agent sees the sidecar's process but
// may not enter its root: EACCES.
func sharedPIDPod(t *testing.T) {
	ctx := context.Background()
	yes, no := true, false
	uid, agentUID := protocol.SidecarUID, int64(65532)
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shared-pid"},
		Spec: corev1.PodSpec{
			HostNetwork: true, ShareProcessNamespace: &yes, AutomountServiceAccountToken: &no,
			ServiceAccountName: "turnwatch-sidecar", RestartPolicy: corev1.RestartPolicyNever,
			InitContainers: []corev1.Container{{
				Name: "stand-in-sidecar", Image: fakeAgentImage, ImagePullPolicy: corev1.PullNever, RestartPolicy: &always,
				Args:            []string{"--scenario", "silentRun", "--format", "pi", "--speed", "0.05"},
				SecurityContext: &corev1.SecurityContext{RunAsUser: &uid, RunAsGroup: &uid},
				VolumeMounts:    []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Containers: []corev1.Container{{
				Name: "agent", Image: fakeAgentImage, ImagePullPolicy: corev1.PullNever, Args: []string{"attack"},
				SecurityContext: &corev1.SecurityContext{RunAsUser: &agentUID},
				Env:             []corev1.EnvVar{{Name: "POD_NAME", Value: "shared-pid"}, {Name: "POD_NAMESPACE", Value: env.ns}},
			}},
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptrInt32(0o444),
				Sources:     []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
			}}}},
		},
	}
	if _, err := env.kube.CoreV1().Pods(env.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().Pods(env.ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	var logs string
	err := waitFor(ctx, 2*time.Minute, "the agent of shared-pid to end", func() (bool, error) {
		p, ok := podOf(pod.Name)
		if !ok {
			return false, nil
		}
		cs, ok := containerStatus(p, "agent")
		if !ok || cs.State.Terminated == nil {
			return false, nil
		}
		out, err := kubectl("-n", env.ns, "logs", pod.Name, "-c", "agent")
		logs = out
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the agent, sharing the stand-in sidecar's process namespace:\n%s", logs)
	if strings.Contains(logs, ": READ") {
		t.Errorf("the agent read the token through /proc")
	}
	if !strings.Contains(logs, "/root/var/run/secrets/kubernetes.io/serviceaccount/token: EACCES") {
		t.Errorf("the agent did not meet EACCES at the sidecar's /proc/<pid>/root")
	}
}

func ptrInt32(v int32) *int32 { return &v }
