package shared

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultSidecarResources are the injected sidecar's requests and limits.
// The requests are what it used on the real node following an agent that
// writes 100 events a second (docs/performance.md, "Sidecar footprint"):
// 9m of cpu, 18.3 MiB resident at peak. The limits are roomy, so that a
// burst of long lines (each may take a 16 MiB buffer, in the log reader and
// in the engine) or a replay after a restart neither OOM-kills the watchdog
// (a dead watchdog fails the turn as infra) nor throttles it much. A limit
// on cpu and memory both, so that a ResourceQuota on limits admits the Pod.
func defaultSidecarResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		},
	}
}

func applyStartConfig(cfg *Config, f fileConfig) {
	if f.StartTimeout != nil {
		cfg.StartTimeout = *f.StartTimeout
	}
	if f.ExitGrace != nil {
		cfg.ExitGrace = *f.ExitGrace
	}
	if f.Sidecar != nil && f.Sidecar.Resources != nil {
		cfg.Sidecar.Resources = *f.Sidecar.Resources.DeepCopy()
	}
}

func validateStartConfig(cfg Config) error {
	if cfg.StartTimeout.Duration <= 0 {
		return fmt.Errorf("config: startTimeout: must be more than 0")
	}
	if cfg.ExitGrace.Duration <= 0 {
		return fmt.Errorf("config: exitGrace: must be more than 0")
	}
	res := cfg.Sidecar.Resources
	for name, q := range res.Requests {
		if l, ok := res.Limits[name]; ok && q.Cmp(l) > 0 {
			return fmt.Errorf("config: sidecar.resources: the %s request %s is above its limit %s", name, q.String(), l.String())
		}
	}
	return nil
}
