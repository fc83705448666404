package agentturn

import (
	"context"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
)

// refuseTemplate fails the turn as infra without creating its Pod; the
// run's reroll policy decides what follows, as for a Pod the API refused.
func (r *AgentTurnReconciler) refuseTemplate(ctx context.Context, turn *twv1.AgentTurn, e *render.TemplateRefusedError) error {
	return r.failInfra(ctx, turn, e.Error())
}
