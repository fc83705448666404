// Package attachns keeps, in each namespace labelled for attach
// (docs/attach.md), what the admission policy turnwatch-attach needs
// before it can inject a Pod there: the attached sidecars' account and its
// RoleBinding, and the ConfigMap turnwatch-attach, the policy's parameters,
// written from the manager's own render options and the namespace's
// policies. The API server reads the ConfigMap at each Pod's creation: the
// manager is never in that path.
package attachns

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// Reconciler reconciles a Namespace: labelled for attach, it gets the
// attached sidecars' account and the policy's parameters; unlabelled, the
// parameters go (the account stays, like a turn's sidecar's).
type Reconciler struct {
	client.Client
	// APIReader reads the sidecar ClusterRole, the owner of the account.
	APIReader    client.Reader
	Config       shared.Config
	SidecarImage string
	// Manager is bound beside the account, so that it may read an
	// attached agent's log tail.
	Manager *rbacv1.Subject
}

// The ConfigMap turnwatch-attach alone: the cache lists and watches it by
// a metadata.name field selector, which RBAC authorizes by resourceNames;
// a create names no object yet.
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=get;list;watch;update;delete,resourceNames=turnwatch-attach
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=create

// Reconcile brings one namespace's attach objects up to date.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !Enabled(ns) {
		return ctrl.Result{}, r.dropParams(ctx, ns.Name)
	}
	if err := agentturn.EnsureRBAC(ctx, r.Client, r.APIReader, agentturn.AttachRBAC(ns.Name, r.Manager)); err != nil {
		return ctrl.Result{}, err
	}
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: twv1.AttachParams}, cm); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	data, err := r.params(ctx, ns.Name, cm.Data[render.ParamModelToken])
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeParams(ctx, cm, ns.Name, data)
}

// Enabled says whether ns is labelled for attach.
func Enabled(ns *corev1.Namespace) bool {
	return labelled(ns)
}

// params is the data of ns's ConfigMap: the options a turn's Pod is
// rendered with there (agentturn's), the namespace's guards, and its
// model gateway, whose placeholder key is token when the ConfigMap has one
// (a new one otherwise: every attached Pod of the namespace holds it).
func (r *Reconciler) params(ctx context.Context, ns, token string) (map[string]string, error) {
	policies, err := turnpolicy.PoliciesFor(ctx, r.Client, ns)
	if err != nil {
		return nil, err
	}
	guards, limits, audit, err := turnpolicy.NamespaceGuards(r.Config.Guards, policies)
	if err != nil {
		return nil, err
	}
	o := render.RenderOptions{SidecarImage: r.SidecarImage, Prices: r.Config.Prices,
		Resources: r.Config.Sidecar.Resources, Freshness: r.Config.Freshness()}
	if left, source, ok := turnpolicy.BudgetLeft(policies); ok {
		o.BudgetLeftUSD, o.Budget = left.String(), source
	}
	gw := render.AttachGateway{Required: turnpolicy.GatewayRequired(policies)}
	if gw.Gateway, _ = turnpolicy.Gateway(&twv1.AgentRun{}, policies); gw.Gateway != nil && token == "" {
		if token, err = render.ModelToken(); err != nil {
			return nil, err
		}
	}
	gw.Token = token
	return render.AttachParams(o, render.AttachNamespace{Guards: guards, Limits: limits, Audit: audit, Gateway: gw}), nil
}

// writeParams creates ns's ConfigMap (cm, as read; no UID when there was
// none) or updates it when its data differs.
func (r *Reconciler) writeParams(ctx context.Context, cm *corev1.ConfigMap, ns string, data map[string]string) error {
	if cm.UID == "" {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: twv1.AttachParams, Namespace: ns,
			Labels: map[string]string{agentturn.LabelComponent: ComponentAttach}}, Data: data}
		log.FromContext(ctx).Info("namespace ready for attach", "namespace", ns)
		return client.IgnoreAlreadyExists(r.Create(ctx, cm))
	}
	if maps.Equal(cm.Data, data) {
		return nil
	}
	cm.Data = data
	return r.Update(ctx, cm)
}

// dropParams deletes ns's ConfigMap, if any: its Pods are injected no more.
func (r *Reconciler) dropParams(ctx context.Context, ns string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: twv1.AttachParams, Namespace: ns}}
	if err := r.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(r.Delete(ctx, cm))
}

// ComponentAttach is agentturn.LabelComponent's value on the ConfigMap.
const ComponentAttach = "attach"

// SetupWithManager watches namespaces, their ConfigMap and the policies
// whose guards, limits and budgets it holds.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}, builder.WithPredicates(attachLabel)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(ownNamespace),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == twv1.AttachParams }))).
		Watches(&twv1.TurnPolicy{}, handler.EnqueueRequestsFromMapFunc(ownNamespace)).
		Watches(&twv1.ClusterTurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.attachNamespaces)).
		Named("attachns").
		Complete(r)
}

// attachLabel passes a namespace labelled for attach, and the update that
// takes the label away.
var attachLabel = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return labelled(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return labelled(e.ObjectOld) || labelled(e.ObjectNew) },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(e event.GenericEvent) bool { return labelled(e.Object) },
}

func labelled(o client.Object) bool {
	return o.GetLabels()[twv1.LabelAttach] == twv1.AttachEnabled
}

func ownNamespace(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
}

// attachNamespaces are the namespaces labelled for attach: a
// ClusterTurnPolicy may select any.
func (r *Reconciler) attachNamespaces(ctx context.Context, _ client.Object) []reconcile.Request {
	var list corev1.NamespaceList
	if err := r.List(ctx, &list, client.MatchingLabels{twv1.LabelAttach: twv1.AttachEnabled}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i].Name = list.Items[i].Name
	}
	return out
}
