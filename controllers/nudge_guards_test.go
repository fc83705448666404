package controllers

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The API server refuses a nudge delivery it does not know, naming the
// field, and takes the two nudge delivery guards.
func TestNudgeGuardsValidated(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	tests := []struct {
		name  string
		g     twv1.Guards
		field string // "" for accepted
	}{
		{"unknown delivery", twv1.Guards{NudgeDelivery: ptr.To("socket")}, "spec.guards.nudgeDelivery"},
		{"file and warnFirst", twv1.Guards{NudgeDelivery: ptr.To("file"), WarnFirst: ptr.To(true)}, ""},
		{"none", twv1.Guards{NudgeDelivery: ptr.To("none"), WarnFirst: ptr.To(false)}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun(ns, "nudge-"+string(rune('a'+i)), func(r *twv1.AgentRun) { r.Spec.Guards = &tt.g })
			err := k8s.Create(context.Background(), run)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			if e := containsAll(err.Error(), tt.field, "Unsupported value"); e != nil {
				t.Error(e)
			}
		})
	}
}
