package controllers

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"turnwatch.dev/turnwatch/controllers/agentturn"
)

func TestSubjectOf(t *testing.T) {
	cases := []struct {
		username string
		want     *rbacv1.Subject
		err      bool
	}{
		{"system:serviceaccount:turnwatch-system:turnwatch-manager",
			&rbacv1.Subject{Kind: "ServiceAccount", Namespace: "turnwatch-system", Name: "turnwatch-manager"}, false},
		{"kubernetes-admin", &rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "kubernetes-admin"}, false},
		{"system:serviceaccount:only-ns", nil, true},
		{"system:serviceaccount::name", nil, true},
		{"", nil, true},
	}
	for _, tc := range cases {
		got, err := subjectOf(tc.username)
		if (err != nil) != tc.err {
			t.Errorf("subjectOf(%q): err %v, want error %v", tc.username, err, tc.err)
			continue
		}
		if !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("subjectOf(%q) = %+v, want %+v", tc.username, got, tc.want)
		}
	}
}

func TestSidecarRBACNamesTheManager(t *testing.T) {
	mgr := &rbacv1.Subject{Kind: "ServiceAccount", Namespace: "turnwatch-system", Name: "turnwatch-manager"}
	for _, tc := range []struct {
		name    string
		manager *rbacv1.Subject
		want    int
	}{{"manager known", mgr, 2}, {"manager unknown", nil, 1}} {
		var rb *rbacv1.RoleBinding
		for _, o := range agentturn.SidecarRBAC("agents", tc.manager) {
			if b, ok := o.(*rbacv1.RoleBinding); ok {
				rb = b
			}
		}
		if rb == nil {
			t.Fatalf("%s: no RoleBinding", tc.name)
		}
		if len(rb.Subjects) != tc.want {
			t.Errorf("%s: %d subjects %+v, want %d", tc.name, len(rb.Subjects), rb.Subjects, tc.want)
		}
		if tc.manager != nil && rb.Subjects[1] != *tc.manager {
			t.Errorf("%s: second subject %+v, want the manager %+v", tc.name, rb.Subjects[1], *tc.manager)
		}
	}
}
