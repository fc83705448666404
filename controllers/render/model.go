package render

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// A drill turn's Pod (docs/drill.md) is the run's template with two changes
// to the agent container, its model endpoint and a dummy key, and the
// sidecar told to serve the scripted model on the Pod's loopback.

// drillKey is the value of a drill's API key env: the scripted model reads
// no key, and a CLI that finds none refuses to start. The env vars per
// format, of the key and of the endpoint, are scriptedmodel.Endpoints'.
const drillKey = "turnwatch-drill-no-key"

// sidecarProbe is the sidecar's startupProbe on a Pod whose agent needs
// the sidecar before its first step: a drill's (the scripted model must
// listen) and one that delivers nudges (the hook and the adapters must be
// in the shared volume: pi's `-e` names the extension file, and refuses to
// start without it). A native sidecar's startup probe holds the containers
// after it.
var sidecarProbe = &corev1.Probe{
	ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"turnwatch-sidecar", "probe"}}},
	PeriodSeconds:    1,
	TimeoutSeconds:   2,
	FailureThreshold: 60,
}

// addDrill points the agent at the sidecar's scripted model on port and
// tells the sidecar to serve it. sidecar is the sidecar container's index
// among the init containers.
func addDrill(pod *corev1.Pod, sidecar, agent int, run *twv1.AgentRun, sc scriptedmodel.Scenario, port int32) error {
	ep, ok := scriptedmodel.Endpoints[string(run.Spec.Format)]
	if !ok {
		return &turnpolicy.DrillRefusedError{Why: fmt.Sprintf("format %q names no model endpoint a drill can point", run.Spec.Format)}
	}
	spec := &pod.Spec
	if ep.Config != "" && !readsEnv(spec.Containers, ep.Env) {
		return &turnpolicy.DrillRefusedError{Why: "no container of the " + string(run.Spec.Format) + " template reads " + ep.Env + ": " + ep.Config + " (docs/drill.md)"}
	}
	c := &spec.Containers[agent]
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, ep.Suffix)
	c.Env = setEnv(c.Env, ep.Env, url)
	set := false
	for _, k := range ep.Keys {
		if hasEnv(c.Env, k) {
			c.Env, set = setEnv(c.Env, k, drillKey), true
		}
	}
	if !set {
		c.Env = setEnv(c.Env, ep.Keys[0], drillKey)
	}
	s := &spec.InitContainers[sidecar]
	s.Env = append(s.Env,
		corev1.EnvVar{Name: protocol.EnvDrillScenario, Value: sc.Name},
		corev1.EnvVar{Name: protocol.EnvModelPort, Value: strconv.Itoa(int(port))})
	s.StartupProbe = sidecarProbe.DeepCopy()
	pod.Labels[twv1.LabelDrillPort] = strconv.Itoa(int(port))
	return nil
}

// readsEnv says whether a container's command or args name the env var
// (a shell expands it there).
func readsEnv(cs []corev1.Container, name string) bool {
	for _, c := range cs {
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if strings.Contains(a, name) {
				return true
			}
		}
	}
	return false
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// setEnv sets name to value: every entry of that name is replaced by one
// plain value, in the first one's place (a valueFrom is dropped), or one is
// added at the end.
func setEnv(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
	out, done := env[:0:0], false
	for _, e := range env {
		if e.Name != name {
			out = append(out, e)
			continue
		}
		if !done {
			out, done = append(out, corev1.EnvVar{Name: name, Value: value}), true
		}
	}
	if !done {
		out = append(out, corev1.EnvVar{Name: name, Value: value})
	}
	return out
}
