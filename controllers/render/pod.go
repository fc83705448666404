package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

const (
	// SidecarServiceAccount is the account a turn's Pod runs as unless its
	// template names one.
	SidecarServiceAccount = "turnwatch-sidecar"
	// TokenVolume is the sidecar's projected API credential. Its name has
	// protocol.ReservedPrefix, which no template volume or mount may use.
	TokenVolume = protocol.ReservedPrefix + "sidecar-token"
	// TokenMountPath is where client-go's in-cluster config looks.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenSeconds is the projected token's lifetime; the kubelet renews it.
	tokenSeconds = 3607
	// sidecarUID is the sidecar's user: not root, fixed so that runAsNonRoot
	// holds for any image, and reserved (see protocol.SidecarUID).
	sidecarUID = protocol.SidecarUID
)

// TemplateRefusedError is a template the controller will not render: one
// whose containers could reach the sidecar's credential, or whose Pod would
// not meet its Pod Security Standard. Retrying cannot help; the turn fails
// with the message.
type TemplateRefusedError struct {
	why     string // "could reach the sidecar's credential"
	hazards []string
}

func (e *TemplateRefusedError) Error() string {
	return "the template " + e.why + ": " + strings.Join(e.hazards, "; ")
}

// whyCredential is the refusal of templateHazards.
const whyCredential = "could reach the sidecar's credential"

// RenderOptions are the parts of a Pod that come from the manager, not the run.
type RenderOptions struct {
	SidecarImage string
	Guards       twv1.Guards     // cluster defaults
	Prices       json.RawMessage // passed through, unread
	// Resources are the sidecar container's requests and limits.
	Resources corev1.ResourceRequirements
	// Freshness sets the sidecar's Progress period (shared/status_freshness.go); 0 leaves
	// the sidecar's default.
	Freshness time.Duration
	// Policies are the policies in force for the turn's namespace when the
	// Pod is rendered: their limits cap the turn's guards (podGuards).
	Policies []turnpolicy.AppliedPolicy
	// ModelPort is the loopback port the sidecar serves the agent's model
	// on, a drill's or the gateway's (agentturn/model_ports.go), and
	// ModelToken the agent's placeholder key (ModelToken); unused for a
	// Pod that serves no model (ServesModel).
	ModelPort  int32
	ModelToken string
	// BudgetLeftUSD is what the namespace's budgets have left, the least of
	// them, a decimal string; "" when no budget applies
	// (turnpolicy.BudgetLeft).
	BudgetLeftUSD string
	// Budget is the policy whose budget BudgetLeftUSD is ("TurnPolicy/NAME"),
	// named by the turn's fault if the sidecar stops it.
	Budget string
	// PodSecurity is the standard the Pod meets (pod_security.go); the
	// zero value is baseline without the node's network.
	PodSecurity PodSecurity
}

// AgentContainerName is spec.agentContainer, or the template's first container.
func AgentContainerName(run *twv1.AgentRun) string {
	if run.Spec.AgentContainer != "" {
		return run.Spec.AgentContainer
	}
	if cs := run.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Name
	}
	return ""
}

// TurnLabels are the labels of a run's turns and their Pods.
func TurnLabels(run *twv1.AgentRun, attempt int32) map[string]string {
	l := map[string]string{
		twv1.LabelRun:     run.Name,
		twv1.LabelAttempt: strconv.Itoa(int(attempt)),
	}
	if run.Spec.Session != "" {
		l[twv1.LabelSession] = run.Spec.Session
	}
	if run.Spec.Drill != nil {
		l[twv1.LabelDrill] = run.Spec.Drill.Scenario
	}
	return l
}

// RenderPod is the turn's Pod: the run's template with restartPolicy Never,
// no automounted token, the turnwatch env on the agent container and the
// sidecar injected as a native sidecar holding the only API credential.
func RenderPod(run *twv1.AgentRun, turn *twv1.AgentTurn, o RenderOptions) (*corev1.Pod, error) {
	tmpl := run.Spec.Template.DeepCopy()
	agent := AgentContainerName(run)
	idx := -1
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == agent {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("spec.agentContainer %q names no container of the template", agent)
	}
	if h := TemplateHazards(&tmpl.Spec); len(h) > 0 {
		return nil, &TemplateRefusedError{why: whyCredential, hazards: h}
	}
	if p := PodSecurityProblems(&tmpl.ObjectMeta, &tmpl.Spec, o.PodSecurity); len(p) > 0 {
		return nil, &TemplateRefusedError{why: "does not meet " + o.PodSecurity.String(), hazards: p}
	}
	if err := requireGateway(run, o.Policies); err != nil {
		return nil, err
	}
	merged, sc, drill, err := turnpolicy.PodGuards(run, turn, o.Guards, o.Policies)
	if err != nil {
		return nil, err
	}
	guards, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        turn.Name,
			Namespace:   turn.Namespace,
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range TurnLabels(run, turn.Spec.Attempt) {
		pod.Labels[k] = v
	}
	spec := &pod.Spec
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.AutomountServiceAccountToken = ptr.To(false)
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = SidecarServiceAccount
	}
	spec.Containers[idx].Env = append(spec.Containers[idx].Env, agentEnv(turn)...)
	spec.Volumes = append(spec.Volumes, tokenVolumeSource())
	raiseGrace(spec)
	// First, so that it follows the agent from its first line.
	spec.InitContainers = append([]corev1.Container{sidecarContainer(run, turn, agent, guards, o)}, spec.InitContainers...)
	addSidecarState(spec)
	addNudges(spec, idx, merged)
	addSessionStore(spec, idx, run)
	gw, _ := turnpolicy.Gateway(run, o.Policies)
	if drill || gw != nil {
		if err := addModel(pod, 0, idx, run, modelSeat{scenario: sc.Name, gateway: gw}, o); err != nil {
			return nil, err
		}
	}
	// The last wall: what the sidecar, the model and the rest added is
	// judged by Kubernetes' own evaluator too.
	p, err := EvaluatorProblems(pod, o.PodSecurity)
	if err != nil {
		return nil, err
	}
	if len(p) > 0 {
		return nil, &TemplateRefusedError{why: "renders a Pod that does not meet " + o.PodSecurity.String(), hazards: p}
	}
	return pod, nil
}

func agentEnv(turn *twv1.AgentTurn) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: protocol.EnvPrompt, Value: turn.Spec.Prompt},
		{Name: protocol.EnvConversationID, Value: turn.Spec.ConversationID},
		{Name: protocol.EnvContinue, Value: strconv.FormatBool(turn.Spec.Continue)},
		{Name: protocol.EnvAgentSessionID, Value: turn.Spec.AgentSessionID},
		{Name: protocol.EnvAttempt, Value: strconv.Itoa(int(turn.Spec.Attempt))},
	}
}

func sidecarContainer(run *twv1.AgentRun, turn *twv1.AgentTurn, agent string, guards []byte, o RenderOptions) corev1.Container {
	c := sidecarShape(o)
	c.Env = turnSidecarEnv(run, turn, agent, guards, o)
	return c
}

// turnSidecarEnv is the env of a run's turn's sidecar (docs/protocol.md);
// an attached Pod's sidecar gets the same names from its Pod and its
// namespace (attachSidecarEnv).
func turnSidecarEnv(run *twv1.AgentRun, turn *twv1.AgentTurn, agent string, guards []byte, o RenderOptions) []corev1.EnvVar {
	format := run.Spec.Format
	if format == "" {
		format = twv1.FormatAuto
	}
	env := []corev1.EnvVar{
		{Name: protocol.EnvFormat, Value: string(format)},
		{Name: protocol.EnvGuards, Value: string(guards)},
	}
	env = append(env, auditEnv(turn)...)
	if len(o.Prices) > 0 {
		env = append(env, corev1.EnvVar{Name: protocol.EnvPrices, Value: string(o.Prices)})
	}
	env = append(env,
		corev1.EnvVar{Name: protocol.EnvPriorCostUSD, Value: shared.SumUSD(turn.Spec.PriorCostUSD)},
		corev1.EnvVar{Name: protocol.EnvPodName, ValueFrom: fieldRef("metadata.name")},
		corev1.EnvVar{Name: protocol.EnvPodNamespace, ValueFrom: fieldRef("metadata.namespace")},
		corev1.EnvVar{Name: protocol.EnvAgentContainer, Value: agent},
	)
	if o.BudgetLeftUSD != "" {
		env = append(env, corev1.EnvVar{Name: protocol.EnvBudgetLeftUSD, Value: o.BudgetLeftUSD},
			corev1.EnvVar{Name: protocol.EnvBudget, Value: o.Budget})
	}
	env = append(env, shared.SidecarProgressEnv(turn)...)
	if o.Freshness > 0 {
		env = append(env, shared.ProgressEnv(o.Freshness))
	}
	return env
}

// sidecarShape is the sidecar container but its env: the same in a turn's
// Pod and in an attached one.
func sidecarShape(o RenderOptions) corev1.Container {
	return corev1.Container{
		Name:          protocol.SidecarContainerName,
		Image:         o.SidecarImage,
		Command:       []string{"turnwatch-sidecar", "run"},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts: []corev1.VolumeMount{{
			Name: TokenVolume, MountPath: TokenMountPath, ReadOnly: true,
		}},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(sidecarUID),
			RunAsGroup:               ptr.To(sidecarUID),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                *o.Resources.DeepCopy(),
	}
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

// tokenVolumeSource is what the kubelet's automount would give, as a volume
// that only the sidecar mounts. What keeps the token from the agent is that
// the file exists only in the sidecar's mount namespace, reachable from
// another container only through /proc/<pid>/root of a sidecar process,
// which needs a shared process namespace and ptrace rights over the
// sidecar's user (both refused, see templateHazards). The file mode cannot
// add a third wall: the kubelet makes the token owned by a container user
// only when every container of the Pod runs as that one user
// (volumeutil.FsUserFrom), which the reserved sidecar user rules out, so it
// stays root's; read-only for all is the least that the sidecar can read.
func tokenVolumeSource() corev1.Volume {
	return corev1.Volume{
		Name: TokenVolume,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o444),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Path: "token", ExpirationSeconds: ptr.To[int64](tokenSeconds),
				}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{
					Items: []corev1.DownwardAPIVolumeFile{{
						Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
					}},
				}},
			},
		}},
	}
}
