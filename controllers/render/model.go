package render

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A turn whose sidecar serves the agent's model (docs/gateway.md) is the
// run's template with two changes to the agent container, its model
// endpoint (the sidecar on the Pod's loopback) and a placeholder key, and
// the sidecar told where the model is: a drill's scripted model
// (docs/drill.md), or the model gateway's upstream with the key from a
// Secret mounted in the sidecar only. One wiring for both: a drill's Pod
// and a gateway's differ only in the sidecar's upstream and key.

const (
	// ModelKeyVolume is the gateway upstream's key: the keySecretRef's key
	// of the Secret, mounted read-only in the sidecar container only, never
	// in the agent's and never as an env var. Its name has
	// protocol.ReservedPrefix, which no template volume or mount may use.
	ModelKeyVolume    = protocol.ReservedPrefix + "model-key"
	modelKeyMountPath = "/var/run/turnwatch/model-key"
	modelKeyFile      = "key"
	// modelTokenPrefix starts every placeholder key, so that one is told
	// apart from a provider's key in a log or a support ticket.
	modelTokenPrefix = "turnwatch-placeholder-"
)

// sidecarProbe is the sidecar's startupProbe on a Pod whose agent needs
// the sidecar before its first step: one whose model the sidecar serves
// (it must listen) and one that delivers nudges (the hook and the adapters
// must be in the shared volume: pi's `-e` names the extension file, and
// refuses to start without it). A native sidecar's startup probe holds the
// containers after it.
var sidecarProbe = &corev1.Probe{
	ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"turnwatch-sidecar", "probe"}}},
	PeriodSeconds:    1,
	TimeoutSeconds:   2,
	FailureThreshold: 60,
}

// ModelToken is a fresh placeholder key for a turn's agent: random, and
// the only key the sidecar's loopback server accepts. Not the turn's UID,
// which every reader of the turn, its Pod's owner references or its
// Events knows: a host-network Pod shares the node's loopback with every
// other host-network Pod of the node, and a neighbour that knew the token
// could spend through the gateway on this turn's key.
func ModelToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return modelTokenPrefix + hex.EncodeToString(b), nil
}

// modelSeat is what a Pod's sidecar serves the agent's model from: a
// drill's scenario, or a gateway's upstream.
type modelSeat struct {
	scenario string
	gateway  *twv1.ModelGateway
}

// ServesModel says whether the sidecar of the run's turn Pods serves the
// agent's model: a drill's, or a run with a model gateway (its own or a
// policy's default, turnpolicy.Gateway). Such a Pod needs a port
// (RenderOptions.ModelPort) and a token (ModelToken).
func ServesModel(run *twv1.AgentRun, policies []turnpolicy.AppliedPolicy) bool {
	gw, _ := turnpolicy.Gateway(run, policies)
	return run.Spec.Drill != nil || gw != nil
}

// refused is the error of a seat the agent cannot be pointed at.
func (s modelSeat) refused(why string) error {
	if s.gateway == nil {
		return &turnpolicy.DrillRefusedError{Why: why}
	}
	return &TemplateRefusedError{why: "cannot be pointed at the model gateway", hazards: []string{why}}
}

// addModel points the agent at the sidecar's model on o.ModelPort, with
// o.ModelToken for its key, and tells the sidecar to serve it. sidecar is
// the sidecar container's index among the init containers.
func addModel(pod *corev1.Pod, sidecar, agent int, run *twv1.AgentRun, seat modelSeat, o RenderOptions) error {
	cli, ok := agents.Lookup(string(run.Spec.Format))
	if !ok {
		return seat.refused(fmt.Sprintf("format %q names no model endpoint to point", run.Spec.Format))
	}
	ep, spec := cli.Endpoint, &pod.Spec
	if ep.Config != "" && !readsEnv(spec.Containers, ep.Env) {
		return seat.refused("no container of the " + cli.Format + " template reads " + ep.Env + ": " + ep.Config + " (docs/drill.md)")
	}
	if o.ModelToken == "" || o.ModelPort == 0 {
		return errors.New("a Pod that serves its model needs a port and a token (render.ModelToken)")
	}
	c := &spec.Containers[agent]
	c.Env = setEnv(c.Env, ep.Env, fmt.Sprintf("http://127.0.0.1:%d%s", o.ModelPort, ep.Suffix))
	c.Env = setKeys(c.Env, ep.Keys, o.ModelToken)
	s := &spec.InitContainers[sidecar]
	s.Env = append(s.Env,
		corev1.EnvVar{Name: protocol.EnvModelPort, Value: strconv.Itoa(int(o.ModelPort))},
		corev1.EnvVar{Name: protocol.EnvModelToken, Value: o.ModelToken})
	if seat.gateway == nil {
		s.Env = append(s.Env, corev1.EnvVar{Name: protocol.EnvDrillScenario, Value: seat.scenario})
	} else {
		addModelKey(spec, s, seat.gateway)
	}
	s.StartupProbe = sidecarProbe.DeepCopy()
	pod.Labels[twv1.LabelModelPort] = strconv.Itoa(int(o.ModelPort))
	return nil
}

// setKeys sets the placeholder in each key env the template sets, or in
// the CLI's first.
func setKeys(env []corev1.EnvVar, keys []string, token string) []corev1.EnvVar {
	set := false
	for _, k := range keys {
		if hasEnv(env, k) {
			env, set = setEnv(env, k, token), true
		}
	}
	if !set {
		env = setEnv(env, keys[0], token)
	}
	return env
}

// addModelKey gives the sidecar container s the gateway's upstream and
// the file of its key: a Secret volume that only s mounts.
func addModelKey(spec *corev1.PodSpec, s *corev1.Container, gw *twv1.ModelGateway) {
	// Read-only for all, as the token's (tokenVolumeSource): the file is
	// root's, and the sidecar's reserved user must read it; what keeps it
	// from the agent is that no other container mounts it.
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: ModelKeyVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{
			SecretName:  gw.KeySecretRef.Name,
			Items:       []corev1.KeyToPath{{Key: gw.KeySecretRef.Key, Path: modelKeyFile}},
			DefaultMode: ptr.To[int32](0o444),
		}}})
	s.VolumeMounts = append(s.VolumeMounts, corev1.VolumeMount{Name: ModelKeyVolume, MountPath: modelKeyMountPath, ReadOnly: true})
	s.Env = append(s.Env,
		corev1.EnvVar{Name: protocol.EnvModelUpstream, Value: gw.Upstream},
		corev1.EnvVar{Name: protocol.EnvModelKeyFile, Value: modelKeyMountPath + "/" + modelKeyFile})
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
