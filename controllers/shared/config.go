package shared

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Config is the cluster's defaults: the one place where the knobs' default
// values live. The manager reads it from --config (a file the Helm chart
// mounts from a ConfigMap); without one, DefaultConfig applies.
type Config struct {
	// Guards are the default detector thresholds; an AgentRun's spec.guards
	// overrides them field by field.
	Guards twv1.Guards `json:"guards"`
	// Prices is the per-model price table for formats that report only
	// tokens. The controller does not read it: it hands it to the sidecar as
	// is (TURNWATCH_PRICES). Empty: the env is left out and the sidecar uses
	// its built-in table.
	Prices json.RawMessage `json:"prices,omitempty"`
	// Rerolls is the default reroll policy; an AgentRun's spec.rerolls
	// overrides it field by field.
	Rerolls twv1.RerollPolicy `json:"rerolls"`
	// SettleGrace is how long the controller waits, after the agent container
	// terminated, for the sidecar's Finished condition before it settles the
	// turn from the container's exit alone.
	SettleGrace Duration `json:"settleGrace"`
	// StartTimeout is how long a turn's Pod may take to run (scheduled,
	// images pulled, containers started) and how long a Pod creation refused
	// by a ResourceQuota is retried, before the turn fails as infra.
	StartTimeout Duration `json:"startTimeout"`
	// ExitGrace is how long an agent that printed its final result may take
	// to exit before the turn is settled Succeeded and its Pod stopped.
	ExitGrace Duration `json:"exitGrace"`
	// Sidecar is what the manager sets on the injected sidecar container.
	Sidecar SidecarConfig `json:"sidecar"`
	// StatusFreshness is how old a running agent's steps and cost in the
	// run's status may be; the sidecar reports progress at most that often
	// (status_freshness.go). Longer costs fewer API writes.
	StatusFreshness Duration `json:"statusFreshness"`
}

// SidecarConfig is the injected sidecar's container settings.
type SidecarConfig struct {
	// Resources are the sidecar's requests and limits, so that a namespace
	// whose ResourceQuota demands them admits the turn's Pod.
	Resources corev1.ResourceRequirements `json:"resources"`
}

// Duration is a time.Duration written as "30s" in the config file.
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// DefaultConfig is the built-in cluster defaults (docs/operator.md#cluster-defaults-one-place).
func DefaultConfig() Config {
	return Config{
		Guards: defaultGuards(),
		Rerolls: twv1.RerollPolicy{
			Max: ptr.To[int32](1),
			Classes: []twv1.FaultClass{
				twv1.ClassRunaway, twv1.ClassStalled, twv1.ClassDegenerate, twv1.ClassInfra, twv1.ClassAgentError,
			},
		},
		SettleGrace: Duration{30 * time.Second},

		StartTimeout: Duration{10 * time.Minute},
		ExitGrace:    Duration{time.Minute},
		Sidecar:      SidecarConfig{Resources: defaultSidecarResources()},

		StatusFreshness: Duration{defaultStatusFreshness},
	}
}

// fileConfig is the config file: every field optional.
type fileConfig struct {
	Guards      *twv1.Guards       `json:"guards,omitempty"`
	Prices      json.RawMessage    `json:"prices,omitempty"`
	Rerolls     *twv1.RerollPolicy `json:"rerolls,omitempty"`
	SettleGrace *Duration          `json:"settleGrace,omitempty"`

	StartTimeout *Duration `json:"startTimeout,omitempty"`
	ExitGrace    *Duration `json:"exitGrace,omitempty"`
	Sidecar      *struct {
		Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	} `json:"sidecar,omitempty"`

	StatusFreshness *Duration `json:"statusFreshness,omitempty"`
}

// LoadConfig reads a YAML or JSON config file over DefaultConfig. An empty
// path gives DefaultConfig. Unknown fields are an error, so that a typo in
// the Helm values is not silently ignored.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	return ParseConfig(b)
}

func ParseConfig(b []byte) (Config, error) {
	cfg := DefaultConfig()
	var f fileConfig
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	cfg.Guards = cfg.Guards.Merge(f.Guards)
	if len(f.Prices) > 0 && string(f.Prices) != "null" {
		cfg.Prices = f.Prices
	}
	cfg.Rerolls = MergeRerolls(cfg.Rerolls, f.Rerolls)
	if f.SettleGrace != nil {
		cfg.SettleGrace = *f.SettleGrace
	}
	applyStartConfig(&cfg, f)
	if f.StatusFreshness != nil {
		cfg.StatusFreshness = *f.StatusFreshness
	}
	return cfg, validateConfig(cfg)
}

// validateConfig applies the schema's rules to the defaults, which no API
// server checks.
func validateConfig(cfg Config) error {
	if err := validateGuards(cfg.Guards); err != nil {
		return err
	}
	if err := validateStartConfig(cfg); err != nil {
		return err
	}
	if cfg.StatusFreshness.Duration < 2*time.Second {
		return fmt.Errorf("config: statusFreshness: must be at least 2s")
	}
	if m := cfg.Rerolls.Max; m != nil && *m < 0 {
		return fmt.Errorf("config: rerolls.max: must be at least 0")
	}
	for _, c := range cfg.Rerolls.Classes {
		if c == twv1.ClassOverspend {
			return fmt.Errorf("config: rerolls.classes: overspend is never rerolled")
		}
	}
	return nil
}

func MergeRerolls(def twv1.RerollPolicy, o *twv1.RerollPolicy) twv1.RerollPolicy {
	out := *def.DeepCopy()
	if o == nil {
		return out
	}
	if o.Max != nil {
		out.Max = ptr.To(*o.Max)
	}
	if o.Classes != nil {
		out.Classes = append([]twv1.FaultClass(nil), o.Classes...)
	}
	return out
}

// validateGuards checks the guards with the engine's own validator
// (monitor.ParseGuards): what the manager accepts, every sidecar accepts.
func validateGuards(g twv1.Guards) error {
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("config: guards: %w", err)
	}
	if _, err := monitor.ParseGuards(b); err != nil {
		if ge := (*monitor.GuardError)(nil); errors.As(err, &ge) {
			return fmt.Errorf("config: guards.%s: %w", ge.Guard, ge.Err)
		}
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// defaultGuards are the engine's defaults (each written once, in
// pkg/monitor's detector table), in the API's shape. A guard with no
// default (worldTools, maxCostUSD) stays unset.
func defaultGuards() twv1.Guards {
	m := map[string]any{}
	for _, gd := range monitor.AllGuards() {
		v, ok := gd.Default()
		if !ok {
			continue
		}
		if d, isDur := v.(monitor.Duration); isDur {
			v = d.Short()
		}
		m[gd.Name] = v
	}
	var g twv1.Guards
	b, err := json.Marshal(m)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields() // a default the API has no field for
		err = dec.Decode(&g)
	}
	if err != nil {
		panic("controllers: the engine's default guards do not fit the API's: " + err.Error())
	}
	return g
}
