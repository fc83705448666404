package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SidecarPolicy are the manifests of config/sidecar that a namespace's
// sidecars need cluster-wide: their ClusterRole, and the admission
// policies with their bindings (the limits policies in a file of their
// own, which hack/apitables writes).
var SidecarPolicy = []string{"config/sidecar/clusterrole.yaml", "config/sidecar/validatingadmissionpolicy.yaml",
	"config/sidecar/validatingadmissionpolicy_limits.yaml", "config/sidecar/mutatingadmissionpolicy_attach.yaml"}

// InstallSidecarPolicy creates SidecarPolicy's objects; existing ones are kept.
func InstallSidecarPolicy(ctx context.Context, c client.Client) error {
	for _, f := range SidecarPolicy {
		if err := ApplyFile(ctx, c, Path(f)); err != nil {
			return err
		}
	}
	return nil
}

// ApplyFile creates every object of a YAML file, refusing fields the API
// server does not know; existing ones are kept.
func ApplyFile(ctx context.Context, c client.Client, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, obj, client.FieldValidation("Strict")); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
}
