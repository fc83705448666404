package main

import (
	"bytes"
	"strings"
	"testing"
)

// Outside a Pod the attack finds no credential and no API server, says so
// line by line, and ends like an agent that printed no result.
func TestAttackWithoutCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var out bytes.Buffer
	if code := attack([]string{"--namespace", "ns", "--pod", "p"}, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"attack: read /var/run/secrets/kubernetes.io/serviceaccount/token: ",
		"attack: processes visible: ",
		"attack: forge Finished: no API server in the environment",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
