package charts_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// freeAddr is a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// checkMetrics: the manager's metrics endpoint answers HTTPS only, and only
// a token whose account the chart's metrics-reader ClusterRole is bound to:
// no token is 401, another account's token 403.
func checkMetrics(t *testing.T, cfg *rest.Config, admin client.Client, addr string, objs []object) {
	t.Helper()
	ctx := context.Background()
	reader := find(t, objs, "ClusterRole", "", "-metrics-reader")
	for _, name := range []string{"prometheus", "stranger"} {
		if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-turnwatch"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.meta("name")},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: namespace}}}); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	// The certificate is the manager's self-signed one: the token, not the
	// certificate, is what the test is about.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(scheme, tok string) int {
		req, _ := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		name, scheme, token string
		want                int
	}{
		{"plain HTTP", "http", "", http.StatusBadRequest},
		{"no token", "https", "", http.StatusUnauthorized},
		// controller-runtime's filter answers a token the TokenReview
		// rejects with 500, not 401: refused all the same.
		{"a token the API server never issued", "https", "not-a-token", http.StatusInternalServerError},
		{"an account without the reader role", "https", token("stranger"), http.StatusForbidden},
		{"the reader", "https", token("prometheus"), http.StatusOK},
	}
	for _, c := range cases {
		// The RBAC cache and the filter's own cache may need a moment.
		deadline := time.Now().Add(20 * time.Second)
		got := get(c.scheme, c.token)
		for got != c.want && time.Now().Before(deadline) {
			time.Sleep(300 * time.Millisecond)
			got = get(c.scheme, c.token)
		}
		if got != c.want {
			t.Errorf("metrics, %s: HTTP %d, want %d", c.name, got, c.want)
		}
	}
}
