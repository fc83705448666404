package shared

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The manager's cache holds every AgentRun, AgentTurn and turn Pod of the
// cluster. Three things in them are large and never read from the cache:
// managedFields (a few KiB per object), the prompt (up to 256 KiB, held by
// the run, the turn and the agent container's env) and the Pods' container
// env (the prompt again, the guards, the price table). The transforms below
// drop them before an object is stored; the two places that need the prompt
// read it from the API server (promptOfRun, promptOfTurn), once per turn.
// Status writes are not affected: an update of the status subresource
// ignores the spec it carries, and an object sent without managedFields
// keeps the stored ones.

// TrimRun drops what the controller never reads from a cached AgentRun.
func TrimRun(in any) (any, error) {
	if r, ok := in.(*twv1.AgentRun); ok {
		r.ManagedFields = nil
		r.Spec.Prompt = ""
	}
	return in, nil
}

// TrimTurn drops what the controller never reads from a cached AgentTurn.
func TrimTurn(in any) (any, error) {
	if t, ok := in.(*twv1.AgentTurn); ok {
		t.ManagedFields = nil
		t.Spec.Prompt = ""
	}
	return in, nil
}

// TrimPod drops the containers' env: the controller reads a turn's Pod for
// its status, owner, labels and deadline, never its env.
func TrimPod(in any) (any, error) {
	if p, ok := in.(*corev1.Pod); ok {
		p.ManagedFields = nil
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range cs {
				cs[i].Env, cs[i].EnvFrom = nil, nil
			}
		}
	}
	return in, nil
}

// StripManagedFields is the transform of every other cached kind.
var StripManagedFields toolscache.TransformFunc = func(in any) (any, error) {
	if o, err := meta.Accessor(in); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return in, nil
}

// PromptOfRun reads the run's prompt, which the cache does not keep.
func PromptOfRun(ctx context.Context, r client.Reader, run *twv1.AgentRun) (string, error) {
	full := &twv1.AgentRun{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Name}, full); err != nil {
		return "", fmt.Errorf("reading the prompt: %w", err)
	}
	if full.UID != run.UID {
		return "", fmt.Errorf("reading the prompt: the run %s was replaced", run.Name)
	}
	return full.Spec.Prompt, nil
}

// PromptOfTurn reads the turn's prompt, which the cache does not keep.
func PromptOfTurn(ctx context.Context, r client.Reader, turn *twv1.AgentTurn) (string, error) {
	full := &twv1.AgentTurn{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: turn.Namespace, Name: turn.Name}, full); err != nil {
		return "", fmt.Errorf("reading the prompt: %w", err)
	}
	if full.UID != turn.UID {
		return "", fmt.Errorf("reading the prompt: the turn %s was replaced", turn.Name)
	}
	return full.Spec.Prompt, nil
}

// IndexOwnerUID indexes AgentTurns by the UID of the run that controls
// them, so that a run's turns are found without scanning its namespace.
const IndexOwnerUID = "turnwatch.dev/owner-uid"

func OwnerUID(obj client.Object) []string {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return []string{string(ref.UID)}
		}
	}
	return nil
}
