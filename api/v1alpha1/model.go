package v1alpha1

// Model says how a run's agent reaches its model (docs/gateway.md).
type Model struct {
	// Gateway puts the turn's sidecar between the agent and its model: the
	// sidecar serves the run's model API on the Pod's loopback, forwards each
	// request to the upstream with the key, meters the provider's answer and
	// refuses the next request once the turn tripped or its budget is spent.
	// The agent gets the loopback endpoint and a placeholder key, never the
	// real one. Unset: the policies' default (spec.model.gateway of a
	// TurnPolicy or ClusterTurnPolicy), else none.
	// +optional
	Gateway *ModelGateway `json:"gateway,omitempty"`
}

// ModelGateway is the upstream a turn's sidecar forwards the agent's model
// requests to, and the key it forwards them with.
type ModelGateway struct {
	// Upstream is the model provider's base URL (https://api.anthropic.com),
	// or the company's own LLM gateway: an http or https URL. The agent's
	// request path is appended to it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="upstream must be an http or https URL with a host, such as https://api.anthropic.com"
	// +required
	Upstream string `json:"upstream"`

	// KeySecretRef is the key of a Secret in the run's namespace that holds
	// the upstream's API key. It is mounted in the sidecar container only:
	// never in the agent's, never as an env var.
	// +required
	KeySecretRef SecretKeyRef `json:"keySecretRef"`
}

// SecretKeyRef is one key of a Secret in the run's namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Key is the key of the Secret's data that holds the API key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +required
	Key string `json:"key"`
}

// ModelPolicy is what a policy says of its runs' model (docs/gateway.md).
type ModelPolicy struct {
	// Gateway is the default of the runs the policy applies to: a run
	// without spec.model.gateway gets it. A run's own gateway wins over
	// it, and a TurnPolicy's over a ClusterTurnPolicy's (the oldest policy
	// of a level wins, as for guards). Its keySecretRef names a Secret in
	// each run's namespace.
	// +optional
	Gateway *ModelGateway `json:"gateway,omitempty"`

	// RequireGateway refuses the runs that would hold a model key
	// themselves: a run whose template sets one of the CLIs' key env vars
	// (ANTHROPIC_API_KEY, OPENAI_API_KEY...) in any container is refused at
	// apply, naming the env var and the container, by the admission policy
	// turnwatch-agentrun-gateway (or turnwatch-agentrun-cluster-gateway);
	// and the controller renders no Pod for a run that sets one, or that
	// ends up without a gateway (its own, or a policy's default). A drill
	// has one: its scripted model.
	// +optional
	RequireGateway bool `json:"requireGateway,omitempty"`
}
