package testenv

import (
	"context"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Only a node mints a token of the sidecar's identity (the admission policy
// turnwatch-sidecar-token, config/sidecar). envtest has no kubelet: a test
// that plays the sidecar mints its token as one would, with the identity a
// kubelet authenticates as.

// NodeName is the node the tests' kubelet identity is named after.
const NodeName = "envtest-node"

// nodeTokens is the ClusterRole (and its binding to the group system:nodes)
// that gives a node what the Node authorizer gives a kubelet for its Pods'
// tokens: envtest's API server authorizes with RBAC alone.
const nodeTokens = "turnwatch-test-node-tokens"

var nodes sync.Map // *envtest.Environment -> *nodeOnce

type nodeOnce struct {
	once sync.Once
	cfg  *rest.Config
	err  error
}

// Node is a config of the kubelet's identity on env's API server: the user
// system:node:NodeName in the group system:nodes, authenticated by a client
// certificate as a kubelet is, and allowed to create serviceaccounts/token.
// admin is env's administrator config. One per env, made on first use.
func Node(ctx context.Context, env *envtest.Environment, admin *rest.Config) (*rest.Config, error) {
	v, _ := nodes.LoadOrStore(env, &nodeOnce{})
	n := v.(*nodeOnce)
	n.once.Do(func() { n.cfg, n.err = addNode(ctx, env, admin) })
	return n.cfg, n.err
}

func addNode(ctx context.Context, env *envtest.Environment, admin *rest.Config) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: nodeTokens}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"},
	}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nodeTokens},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodeTokens},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	user, err := env.AddUser(envtest.User{Name: "system:node:" + NodeName, Groups: []string{"system:nodes"}}, admin)
	if err != nil {
		return nil, err
	}
	return user.Config(), nil
}

// PodToken is the token the kubelet projects into a Pod running as
// account: a TokenRequest by the node, bound to pod (nil: bound to
// nothing). Right after the RBAC objects are made the authorizer may not
// have them yet: a caller retries.
func PodToken(ctx context.Context, node *rest.Config, ns, account string, pod *corev1.Pod, seconds int64) (string, error) {
	cs, err := kubernetes.NewForConfig(node)
	if err != nil {
		return "", err
	}
	req := &authenticationv1.TokenRequest{}
	if seconds > 0 {
		req.Spec.ExpirationSeconds = &seconds
	}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// TokenConfig is a config whose one credential is token.
func TokenConfig(base *rest.Config, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = token
	return cfg
}
