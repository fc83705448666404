package v1alpha1

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestGuardsMerge(t *testing.T) {
	def := Guards{StepBudget: ptr.To[int32](256), IdenticalCalls: ptr.To[int32](4), StallTimeout: ptr.To("10m"), WorldTools: []string{"a"}}
	got := def.Merge(&Guards{StepBudget: ptr.To[int32](0), MaxCostUSD: ptr.To("5.00"), WorldTools: []string{}})
	if *got.StepBudget != 0 || *got.IdenticalCalls != 4 || *got.StallTimeout != "10m" || *got.MaxCostUSD != "5.00" || len(got.WorldTools) != 0 {
		t.Errorf("merged %+v", got)
	}
	*got.IdenticalCalls = 9
	if *def.IdenticalCalls != 4 || *def.StepBudget != 256 {
		t.Error("Merge shares pointers with the defaults")
	}
	if same := def.Merge(nil); *same.StepBudget != 256 || same.MaxCostUSD != nil {
		t.Errorf("merge with nil %+v", same)
	}
}
