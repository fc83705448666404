package controllers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Money adds up across the boundary: the real sidecar binary watches a
// recorded looping stream for each turn of a rerolled run, reports through
// the real API server, and the real controller sums the turns. Each turn
// costs what its own stream cost (the sidecar is told the earlier turns'
// cost for the cap only), and the run costs the sum of its turns.
func TestMoneyAcrossTheSidecar(t *testing.T) {
	needEnv(t)
	t.Parallel()
	bin := buildSidecar(t)
	kubeconfig := writeKubeconfig(t)
	stream, own := loopStream(t)

	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "money"))
	for _, name := range []string{"money-0", "money-1"} {
		pod := waitPod(t, ns, name)
		runSidecar(t, bin, kubeconfig, stream, pod, protocol.ConditionTripped)
		if got := turnSettled(t, ns, name); got.Status.CostUSD != own.String() {
			t.Errorf("turn %s costs %s, want its own %s", name, got.Status.CostUSD, own)
		}
	}
	run := runPhase(t, ns, "money", twv1.RunFaulted)
	if want := own.Add(own).String(); run.Status.CostUSD != want {
		t.Fatalf("run costs %s, want the sum of its turns %s", run.Status.CostUSD, want)
	}
	t1, _ := getTurn(ns, "money-1")
	if t1.Spec.PriorCostUSD != own.String() {
		t.Errorf("turn money-1 was told earlier turns cost %s, want %s", t1.Spec.PriorCostUSD, own)
	}
}

// buildSidecar builds the sidecar binary the Pods would run.
func buildSidecar(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "turnwatch-sidecar")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/turnwatch-sidecar")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/turnwatch-sidecar: %v\n%s", err, out)
	}
	return bin
}

// writeKubeconfig is the test's admin credential as a kubeconfig file, for
// the sidecar's --kubeconfig.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: restConfig.CertData, ClientKeyData: restConfig.KeyData, Token: restConfig.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// loopStream is the fake agent's recorded claude loop without its
// timestamps (the sidecar's clock is then the real one), and what the engine
// says one turn of it costs up to the trip.
func loopStream(t *testing.T) (string, monitor.Money) {
	t.Helper()
	raw, err := os.ReadFile("../test/fakeagent/scenarios/claude/identicalLoop.log")
	if err != nil {
		t.Fatal(err)
	}
	data := regexp.MustCompile(`(?m)^\S+Z `).ReplaceAll(raw, nil)
	path := filepath.Join(t.TempDir(), "loop.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	eng, err := monitor.New(monitor.Options{Format: monitor.FormatClaude})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if eng.Feed(line, time.Time{}).Trip != nil {
			break
		}
	}
	own := eng.State().Cost
	if own <= 0 {
		t.Fatalf("the loop stream costs %s", own)
	}
	return path, own
}

// runSidecar runs the sidecar binary for pod with the env the controller
// rendered for it, until it reported the condition until, then stops it as
// the kubelet would (SIGTERM).
func runSidecar(t *testing.T, bin, kubeconfig, stream string, pod *corev1.Pod, until string) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--stream-file", stream,
		"--pod", pod.Name, "--namespace", pod.Namespace, "--drain", "100ms", "--write-grace", "5s")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, c := range pod.Spec.InitContainers {
		if c.Name != protocol.SidecarContainerName {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
			}
		}
	}
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("sidecar for %s: %v\n%s", pod.Name, err, out.String())
		}
	}()
	eventually(t, "the sidecar of "+pod.Name+" reports "+until, func() error {
		p, err := getPod(pod.Namespace, pod.Name)
		if err != nil {
			return err
		}
		if c := agentturn.PodCondition(p, corev1.PodConditionType(until)); c == nil {
			return fmt.Errorf("no %s yet; sidecar log:\n%s", until, out.String())
		}
		return nil
	})
}
