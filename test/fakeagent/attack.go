package main

import (
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// attack plays a hostile agent inside a turn's Pod: it looks for an API
// credential everywhere one could be (the usual mount path, every visible
// process's root) and tries to forge the turn's verdict with whatever it
// found, or with none. It prints one line per attempt, "attack: WHAT: RESULT",
// for the e2e test to read from the container log, and exits 0 without a
// result event. It never sends a token anywhere but the cluster's API server.
//
//	fakeagent attack --namespace NS --pod NAME
func attack(argv []string, stdout io.Writer) int {
	fs := flag.NewFlagSet("attack", flag.ContinueOnError)
	ns := fs.String("namespace", os.Getenv("POD_NAMESPACE"), "namespace of the Pod to forge")
	pod := fs.String("pod", os.Getenv("POD_NAME"), "name of the Pod to forge")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	say := func(what, result string) { fmt.Fprintf(stdout, "attack: %s: %s\n", what, result) }

	// Every visible process's root, one by one: a glob would skip the
	// ones it may not enter, and those are the answer that matters.
	const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	pids, _ := filepath.Glob("/proc/[0-9]*")
	say("processes visible", fmt.Sprint(len(pids)))
	paths := []string{tokenPath}
	for _, pid := range pids {
		if filepath.Base(pid) != fmt.Sprint(os.Getpid()) {
			paths = append(paths, pid+"/root"+tokenPath)
		}
	}
	token := ""
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			say("read "+p, errText(err))
			continue
		}
		say("read "+p, "READ")
		token = strings.TrimSpace(string(b))
	}

	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" {
		say("forge Finished", "no API server in the environment")
		return 0
	}
	body := `{"status":{"conditions":[{"type":"turnwatch.dev/Finished","status":"True","reason":"Result",` +
		`"message":"{\"steps\":1,\"costUSD\":\"0\",\"stopReason\":\"end\",\"result\":true,\"lines\":1,\"unparsed\":0}"}]}}`
	url := fmt.Sprintf("https://%s/api/v1/namespaces/%s/pods/%s/status", net.JoinHostPort(host, port), *ns, *pod)
	req, _ := http.NewRequest(http.MethodPatch, url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// No CA is mounted into the agent either; the forgery is what is tested.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		say("forge Finished", errText(err))
		return 0
	}
	resp.Body.Close()
	say("forge Finished", fmt.Sprintf("HTTP %d (token found: %v)", resp.StatusCode, token != ""))
	return 0
}

// errText names the error's kind without the path, which the line already has.
func errText(err error) string {
	switch {
	case os.IsNotExist(err):
		return "ENOENT"
	case os.IsPermission(err):
		return "EACCES"
	}
	return err.Error()
}
