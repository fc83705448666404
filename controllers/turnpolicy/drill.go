package turnpolicy

import (
	"encoding/json"
	"fmt"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// DrillRefusedError is a drill the controller cannot point at the scripted
// model; the turn fails as infra with the message (the admission policy
// turnwatch-agentrun-drill refuses the same runs at apply).
type DrillRefusedError struct{ Why string }

func (e *DrillRefusedError) Error() string { return "the drill cannot run: " + e.Why }

// DrillScenario is the run's drill scenario, or false for a run that is no drill.
func DrillScenario(run *twv1.AgentRun) (scriptedmodel.Scenario, bool, error) {
	if run.Spec.Drill == nil {
		return scriptedmodel.Scenario{}, false, nil
	}
	sc, err := scriptedmodel.Lookup(run.Spec.Drill.Scenario)
	if err != nil {
		return sc, true, &DrillRefusedError{Why: err.Error()}
	}
	return sc, true, nil
}

// turnGuards are the turn's guards: the cluster's defaults, the run's over
// them and, for a drill, its scenario's over those; with the drill's
// scenario, if the run is one.
func turnGuards(run *twv1.AgentRun, cluster twv1.Guards) (twv1.Guards, scriptedmodel.Scenario, bool, error) {
	merged := cluster.Merge(run.Spec.Guards)
	sc, drill, err := DrillScenario(run)
	if err != nil || !drill {
		return merged, sc, drill, err
	}
	over, err := DrillGuards(sc)
	return merged.Merge(over), sc, true, err
}

// DrillGuards are the guards the scenario sets over the run's: its detector
// on, and short enough for a drill (scriptedmodel.Scenario.Guards).
func DrillGuards(sc scriptedmodel.Scenario) (*twv1.Guards, error) {
	if sc.Guards == "" {
		return nil, nil
	}
	g := &twv1.Guards{}
	if err := json.Unmarshal([]byte(sc.Guards), g); err != nil {
		return nil, fmt.Errorf("scenario %s: guards: %w", sc.Name, err)
	}
	return g, nil
}
