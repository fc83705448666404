package agentturn

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// The renderer is pure (controllers/render): the controller reads what it
// needs from the cluster and hands it over.

// podSecurityFor is the standard of the runs of namespace ns.
func podSecurityFor(ctx context.Context, c client.Reader, ns string) (render.PodSecurity, error) {
	labels, policies, err := turnpolicy.NamespacePolicies(ctx, c, ns)
	if err != nil {
		return render.PodSecurity{}, err
	}
	return render.PodSecurityOf(policies, labels), nil
}
