package controllers

import (
	"context"
	"fmt"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The manager reads an agent's log tail (agentturn/tail.go) without holding pods/log
// cluster-wide: the per-namespace RoleBinding that gives the sidecar its
// ClusterRole names the manager too, so the manager may read logs only in the
// namespaces where turns run. It learns who it is from the API server
// (SelfSubjectReview, which every authenticated user may call).

// managerSubject is the RBAC subject of cfg's credential.
func managerSubject(ctx context.Context, cfg *rest.Config) (*rbacv1.Subject, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	res, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("asking the API server who the manager is: %w", err)
	}
	return subjectOf(res.Status.UserInfo.Username)
}

// subjectOf turns a username into a subject: a service account's
// ("system:serviceaccount:NS:NAME") or a user's.
func subjectOf(username string) (*rbacv1.Subject, error) {
	if username == "" {
		return nil, fmt.Errorf("the API server gave no username")
	}
	if rest, ok := strings.CutPrefix(username, "system:serviceaccount:"); ok {
		ns, name, ok := strings.Cut(rest, ":")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("service account username %q: want system:serviceaccount:NAMESPACE:NAME", username)
		}
		return &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, nil
	}
	return &rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: username}, nil
}
