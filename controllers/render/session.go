package render

import (
	"path"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// sessionVolume is the session store's volume in a turn's Pod, reserved so
// that no template names it.
const sessionVolume = protocol.ReservedPrefix + "session-store"

// stateDirs is where each format's CLI keeps its state (its conversations),
// under HOME (docs/agents.md "Continue resumes the CLI's own conversation"):
// the CLIs' table's (agents.CLIs).
var stateDirs = func() map[twv1.Format]string {
	m := make(map[twv1.Format]string, len(agents.CLIs))
	for _, c := range agents.CLIs {
		m[twv1.Format(c.Format)] = c.StateDir
	}
	return m
}()

// defaultHome is HOME in an image that names none for the container's user
// (root): what the container runtime sets.
const defaultHome = "/root"

// addSessionStore mounts the run's session store on the agent container:
// the claim's folder of the session at the CLI's state folder.
func addSessionStore(spec *corev1.PodSpec, agent int, run *twv1.AgentRun) {
	st := run.Spec.SessionStore
	if st == nil {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: sessionVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: st.ClaimName}}})
	c := &spec.Containers[agent]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
		Name: sessionVolume, MountPath: sessionMountPath(run, c), SubPath: sessionKey(run)})
}

// sessionKey is the session's folder in the store: the session's name, or
// the run's (both are safe path segments: the API validates them).
func sessionKey(run *twv1.AgentRun) string {
	if run.Spec.Session != "" {
		return run.Spec.Session
	}
	return run.Name
}

// sessionMountPath is the store's mount path: the run's, else the format's
// state folder under the container's HOME.
func sessionMountPath(run *twv1.AgentRun, c *corev1.Container) string {
	if p := run.Spec.SessionStore.MountPath; p != "" {
		return p
	}
	home := defaultHome
	for _, e := range c.Env {
		if e.Name == "HOME" && e.ValueFrom == nil && path.IsAbs(e.Value) {
			home = e.Value
		}
	}
	return path.Join(home, stateDirs[run.Spec.Format])
}
