package render

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/agents"
)

func TestAddSessionStore(t *testing.T) {
	tests := []struct {
		name    string
		format  twv1.Format
		session string
		store   *twv1.SessionStore
		env     []corev1.EnvVar
		mount   string // "" when nothing is mounted
		subPath string
	}{
		{name: "none", format: twv1.FormatClaude},
		{name: "claude as root", format: twv1.FormatClaude, session: "review", store: &twv1.SessionStore{ClaimName: "state"},
			mount: "/root/.claude", subPath: "review"},
		{name: "opencode, HOME in the template", format: twv1.FormatOpencode, session: "review", store: &twv1.SessionStore{ClaimName: "state"},
			env: []corev1.EnvVar{{Name: "HOME", Value: "/home/node"}}, mount: "/home/node/.local/share/opencode", subPath: "review"},
		{name: "HOME from a secret is not read", format: twv1.FormatPi, session: "s", store: &twv1.SessionStore{ClaimName: "state"},
			env: []corev1.EnvVar{{Name: "HOME", ValueFrom: &corev1.EnvVarSource{}}}, mount: "/root/.pi", subPath: "s"},
		{name: "no session: the run's folder", format: twv1.FormatCodex, store: &twv1.SessionStore{ClaimName: "state"},
			mount: "/root/.codex", subPath: "run"},
		{name: "mount path named", format: twv1.FormatAuto, session: "s", store: &twv1.SessionStore{ClaimName: "state", MountPath: "/state"},
			mount: "/state", subPath: "s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &twv1.AgentRun{Spec: twv1.AgentRunSpec{Format: tt.format, Session: tt.session, SessionStore: tt.store}}
			run.Name = "run"
			spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Env: tt.env}}}
			addSessionStore(spec, 0, run)
			mounts := spec.Containers[0].VolumeMounts
			if tt.mount == "" {
				if len(mounts) != 0 || len(spec.Volumes) != 0 {
					t.Fatalf("mounted %v %v without a store", mounts, spec.Volumes)
				}
				return
			}
			if len(mounts) != 1 || mounts[0].MountPath != tt.mount || mounts[0].SubPath != tt.subPath || mounts[0].Name != sessionVolume {
				t.Errorf("mounts %+v, want %s at %s", mounts, tt.subPath, tt.mount)
			}
			if len(spec.Volumes) != 1 || spec.Volumes[0].PersistentVolumeClaim == nil || spec.Volumes[0].PersistentVolumeClaim.ClaimName != "state" {
				t.Errorf("volumes %+v, want the claim", spec.Volumes)
			}
		})
	}
}

// Every CLI of the table gets its session store mounted at its own state
// folder, under HOME and not HOME itself; auto at none.
func TestStateDirs(t *testing.T) {
	for _, c := range agents.CLIs {
		run := &twv1.AgentRun{Spec: twv1.AgentRunSpec{Format: twv1.Format(c.Format), SessionStore: &twv1.SessionStore{ClaimName: "state"}}}
		got := sessionMountPath(run, &corev1.Container{})
		if got == defaultHome || !strings.HasPrefix(got, defaultHome+"/") || got != path.Join(defaultHome, c.StateDir) {
			t.Errorf("format %s: store mounted at %s, want its state folder %q under %s", c.Format, got, c.StateDir, defaultHome)
		}
	}
	if d, ok := stateDirs[twv1.FormatAuto]; ok {
		t.Errorf("auto has a state folder %q: only a named format says where its CLI keeps its state", d)
	}
}
