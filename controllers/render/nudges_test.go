package render

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// With nudgeDelivery file, the sidecar and the agent container (and no
// other) share an emptyDir of the reserved prefix at /run/turnwatch; the
// token volume stays mounted in the sidecar alone. Without it, nothing of
// it is rendered.
func TestRenderNudgeVolume(t *testing.T) {
	tests := []struct {
		name     string
		run      *string // spec.guards.nudgeDelivery
		cluster  string  // the cluster default
		wantFile bool
	}{
		{"default none", nil, "none", false},
		{"the run asks", ptr.To("file"), "none", true},
		{"the cluster default", nil, "file", true},
		{"the run declines", ptr.To("none"), "file", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun("ns", "r", func(r *twv1.AgentRun) {
				r.Spec.Template.Spec.Containers = []corev1.Container{{Name: "proxy", Image: "p"}, {Name: "agent", Image: "a"}}
				r.Spec.AgentContainer = "agent"
				r.Spec.Guards = &twv1.Guards{NudgeDelivery: tt.run}
			})
			turn := &twv1.AgentTurn{}
			turn.Name, turn.Namespace = "r-0", "ns"
			cluster := shared.DefaultConfig().Guards
			cluster.NudgeDelivery = ptr.To(tt.cluster)
			pod, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: cluster})
			if err != nil {
				t.Fatal(err)
			}
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == nudgefile.Volume {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if (vol != nil) != tt.wantFile {
				t.Fatalf("nudges volume %v, want %v", vol, tt.wantFile)
			}
			mounted := func(c corev1.Container, name string) (string, bool) {
				for _, m := range c.VolumeMounts {
					if m.Name == name {
						return m.MountPath, true
					}
				}
				return "", false
			}
			side, agent, proxy := pod.Spec.InitContainers[0], pod.Spec.Containers[1], pod.Spec.Containers[0]
			if _, ok := mounted(agent, TokenVolume); ok {
				t.Fatal("the agent mounts the token volume")
			}
			if _, ok := mounted(side, TokenVolume); !ok {
				t.Fatal("the sidecar lost its token")
			}
			if !tt.wantFile {
				if _, ok := mounted(agent, nudgefile.Volume); ok || envOf(side)[nudgefile.EnvDir] != "" || side.StartupProbe != nil {
					t.Fatal("nudges rendered without delivery")
				}
				return
			}
			// The agent starts once the hook and adapters are in the volume.
			if p := side.StartupProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"turnwatch-sidecar", "probe"}) {
				t.Fatalf("sidecar startupProbe %+v", p)
			}
			if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.Projected != nil || vol.Secret != nil {
				t.Fatalf("nudges volume %+v: want a bounded emptyDir and nothing else", vol.VolumeSource)
			}
			for _, c := range []corev1.Container{side, agent} {
				if p, ok := mounted(c, nudgefile.Volume); !ok || p != nudgefile.Dir || envOf(c)[nudgefile.EnvDir] != nudgefile.Dir {
					t.Fatalf("%s: mount %q %v env %v", c.Name, p, ok, envOf(c))
				}
			}
			if _, ok := mounted(proxy, nudgefile.Volume); ok {
				t.Fatal("a container that is not the agent mounts the nudges")
			}
			if slices.ContainsFunc(side.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == TokenVolume && m.MountPath == nudgefile.Dir
			}) {
				t.Fatal("the token is mounted where the nudges are")
			}
			if w := envOf(agent)[nudgefile.EnvRefuseWait]; w != "2s" || envOf(side)[nudgefile.EnvRefuseWait] != "" {
				t.Fatalf("refuse wait: agent %q, sidecar %q; want the default 2s on the agent only", w, envOf(side)[nudgefile.EnvRefuseWait])
			}
		})
	}
}

// refuse false leaves the hook without a wait: it refuses nothing.
func TestRenderRefuseOff(t *testing.T) {
	for _, tt := range []struct {
		refuse *bool
		wait   *string
		want   string
	}{{nil, nil, "2s"}, {ptr.To(true), ptr.To("500ms"), "500ms"}, {ptr.To(false), ptr.To("1s"), ""}} {
		run := newRun("ns", "r", func(r *twv1.AgentRun) {
			r.Spec.Guards = &twv1.Guards{NudgeDelivery: ptr.To("file"), Refuse: tt.refuse, RefuseWait: tt.wait}
		})
		turn := &twv1.AgentTurn{}
		turn.Name, turn.Namespace = "r-0", "ns"
		pod, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards})
		if err != nil {
			t.Fatal(err)
		}
		if got := envOf(pod.Spec.Containers[0])[nudgefile.EnvRefuseWait]; got != tt.want {
			t.Errorf("refuse %v wait %v: %s=%q, want %q", tt.refuse, tt.wait, nudgefile.EnvRefuseWait, got, tt.want)
		}
	}
}
