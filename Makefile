# turnwatch Makefile. Tools are pinned in hack/tools/go.mod and run with `go tool`;
# the Kubernetes binaries are built from the module proxy by hack/kube-bins.sh and
# cached under $(HOME)/.cache/turnwatch.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

TOOLS ?= go tool -modfile=hack/tools/go.mod
CONTROLLER_GEN ?= $(TOOLS) controller-gen
HELM ?= $(TOOLS) helm
BIN ?= bin
# kubectl: the one on PATH, else the one hack/kube-bins.sh builds (lazily, when a target needs it).
KUBECTL ?= $(shell command -v kubectl 2>/dev/null || echo "$$(hack/kube-bins.sh kubectl | tail -n1)/kubectl")
# Images for deploy and run.
IMG ?= turnwatch:latest
SIDECAR_IMG ?= $(IMG)
# Cluster defaults file for `make run` (empty: the built-in defaults).
CONFIG ?=

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: ## Generate the API's copies of the tables (hack/apitables: guards, detector keys, the limits policies, drill scenarios, formats), then deepcopy code from the API types.
	go run ./hack/apitables
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: manifests
manifests: ## Generate CRDs and RBAC from markers.
	$(CONTROLLER_GEN) rbac:roleName=turnwatch-manager crd:generateEmbeddedObjectMeta=true paths="./api/..." paths="./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: verify-generated
verify-generated: generate manifests chart-sync ## Fail if generated (or copied) files are stale.
	@git diff --exit-code -- api config charts || { echo "generated files are stale: run 'make generate manifests chart-sync' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- api config charts)" || { git status --short -- api config charts; echo "generated files are not committed"; exit 1; }

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

##@ Test

.PHONY: test
test: verify-generated vet check-dockerfile helm-lint helm-template test-unit fuzz-brief test-envtest test-cli test-e2e ## Everything: what CI runs (the README's test command).

.PHONY: check-dockerfile
check-dockerfile: ## Check the Dockerfile without a Docker engine (COPY sources exist; the build stage runs as a script).
	hack/check-dockerfile.sh

.PHONY: test-unit
test-unit: ## Quick tests: the engine, the sidecar, parsers, the kubectl plugin and the hook, the fake agent, the chart's and the API's generators (no API server).
	go test ./pkg/... ./sidecar/... ./cmd/... ./test/fakeagent/... ./hack/chartguards/... ./hack/apitables/...

FUZZ_TARGETS := FuzzPi FuzzPiMemo FuzzClaude FuzzCodex FuzzOpencode FuzzGemini FuzzAuto FuzzScanner FuzzDecimal FuzzRepetition FuzzWarnFirst FuzzFeedModel
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" when a busy machine's worker misses
# the deadline (go.dev/issue/75804, fixed in Go 1.27). A count has no deadline to race.
FUZZTIME ?= 20000x

.PHONY: fuzz-brief
fuzz-brief: ## Run each pkg/monitor fuzz target and the gateway's meter briefly (FUZZTIME each, default 20000 inputs).
	@for f in $(FUZZ_TARGETS); do \
		echo "fuzz $$f ($(FUZZTIME))"; \
		go test ./pkg/monitor -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	done
	@echo "fuzz FuzzAnswer ($(FUZZTIME))"; go test ./pkg/gateway -run '^$$' -fuzz '^FuzzAnswer$$' -fuzztime $(FUZZTIME)

.PHONY: bench-engine
bench-engine: ## Engine benchmarks (throughput vs naive encoding/json, memory 1 MB..1 GB); see docs/performance.md.
	@mkdir -p $(BIN)
	go test ./pkg/monitor -run '^$$' -bench 'Throughput|Memory' -benchmem -count 6 | tee $(BIN)/bench-engine.txt
	$(TOOLS) benchstat -col /impl $(BIN)/bench-engine.txt

.PHONY: test-cli
test-cli: ## The five real agent CLIs (pinned in hack/clis.tsv, installed by hack/clis.sh) against the scripted model, sealed off the network (needs root).
	TURNWATCH_CLIS="$$(hack/clis.sh | tail -n1)" go test -tags realcli ./test/realcli/ -count=1 -v -timeout 30m

.PHONY: test-envtest
test-envtest: ## Everything that needs a real kube-apiserver and etcd (envtest): controllers, sidecar RBAC/reporting, chart, samples.
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n1)" go test -count=1 ./api/... ./controllers/... ./sidecar/... ./charts/... ./test/samples/...

.PHONY: bench-scale
bench-scale: ## Operator at scale on envtest: 500 runs tripped, rerolled, tripped, faulted (not part of test).
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n1)" go test ./controllers/ -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -count=1 -timeout 40m -v

.PHONY: bench-steady
bench-steady: ## Operator at steady state on envtest: 1,000 runs running, API writes/s, status age, trip latency under that load (not part of test).
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n1)" go test ./controllers/ -run '^$$' -bench '^BenchmarkSteady$$' -benchtime 1x -count=1 -timeout 40m -v

.PHONY: bench-memory
bench-memory: ## Manager heap on envtest with 1,000 runs (TURNWATCH_MEM_RUNS) of 16 KiB prompts, trimmed cache against untrimmed (not part of test).
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n1)" go test ./controllers/ -run '^$$' -bench '^BenchmarkManagerMemory$$' -benchtime 1x -count=1 -timeout 60m -v

.PHONY: test-envtest-sidecar
test-envtest-sidecar: ## The sidecar's RBAC, admission policy and reporting on a real kube-apiserver (envtest).
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n1)" go test ./sidecar/...

E2E_TIMEOUT ?= 60m
# How many tests and subtests run at once (go test's -parallel, which is the
# number of cores when unset): most of the node's tests wait on a timeout or
# a Pod; six at once keep this 2-core machine busy without starving a Pod.
E2E_PARALLEL ?= 6

# The install tests (Helm, README's quickstart) run the manager in the cluster
# and delete the CRDs at their end, so they run in a second `go test` of their
# own, after the rest (test/e2e/install_test.go). The node is brought up once
# and taken down at the end only when it was down before.
E2E_INSTALL_TESTS ?= TestDemo|TestDeploy|TestHelm|TestReadme

.PHONY: test-e2e
test-e2e: ## End-to-end on a real single-node cluster (needs root; brings the node up and down): the suite, then the install tests.
	@up=0; hack/node-up.sh --status >/dev/null 2>&1 && up=1; rc=0; \
	TURNWATCH_E2E_KEEP_NODE=1 go test -tags e2e ./test/e2e/ -count=1 -v -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) || rc=$$?; \
	if [ $$rc = 0 ]; then \
		TURNWATCH_E2E_KEEP_NODE=1 TURNWATCH_E2E_INSTALL=1 go test -tags e2e ./test/e2e/ -count=1 -v -timeout $(E2E_TIMEOUT) -run '$(E2E_INSTALL_TESTS)' || rc=$$?; \
	fi; \
	[ $$up = 1 ] || hack/node-down.sh; exit $$rc

.PHONY: test-e2e-install
test-e2e-install: ## Only the install tests: make demo USE_CURRENT_CLUSTER=1, make deploy/undeploy, helm install/upgrade/uninstall, README's quickstart, kubectl turnwatch explain, Prometheus (node kept up).
	TURNWATCH_E2E_KEEP_NODE=1 TURNWATCH_E2E_INSTALL=1 go test -tags e2e ./test/e2e/ -count=1 -v -timeout $(E2E_TIMEOUT) -run '$(E2E_INSTALL_TESTS)'

##@ Local node (a real single-node cluster: hack/node-up.sh, docs/e2e.md)

.PHONY: node-up
node-up: ## Bring the local node up (or reuse it); prints the kubeconfig path last.
	hack/node-up.sh

.PHONY: node-down
node-down: ## Tear the local node down, leaving nothing behind.
	hack/node-down.sh

IMAGES_DIR ?= $(BIN)/images

.PHONY: images
images: ## Build the images from static binaries (no Docker) and import them into the local node.
	WITH_FAKEAGENT=1 hack/build-static.sh $(IMAGES_DIR)
	CGO_ENABLED=0 GOOS=linux go build -trimpath -o $(IMAGES_DIR)/pause ./hack/node/pause
	hack/image.sh pause $(IMAGES_DIR)/pause
	hack/image.sh --user 65532 fakeagent $(IMAGES_DIR)/fakeagent
	hack/image.sh --user 65532 sidecar $(IMAGES_DIR)/turnwatch-sidecar $(IMAGES_DIR)/turnwatch-hook
	hack/image.sh --user 65532 manager $(IMAGES_DIR)/manager

.PHONY: generate-scenarios
generate-scenarios: ## Regenerate the fake agent's scenario streams.
	go generate ./test/fakeagent

##@ Helm chart

CHART ?= charts/turnwatch
# helm built from the module proxy has no Kubernetes version stamped in (it says
# v1.20), so name the version the chart targets; kubeVersion in Chart.yaml checks it.
HELM_KUBE_VERSION ?= 1.37.2
HELM_TEMPLATE_FLAGS ?= --namespace turnwatch-system --kube-version $(HELM_KUBE_VERSION)

.PHONY: chart-crds
chart-crds: ## Copy the generated CRDs (config/crd/bases) into the chart's crds/.
	rm -f $(CHART)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART)/crds/

.PHONY: chart-files
chart-files: ## Copy the generated manager Role, the metrics-reader role, the sidecar's ClusterRole and policies, and the price table into the chart's files/.
	cp config/rbac/role.yaml $(CHART)/files/manager-role.yaml
	cp config/rbac/metrics_reader_role.yaml $(CHART)/files/metrics-reader-role.yaml
	cp config/sidecar/clusterrole.yaml $(CHART)/files/sidecar-clusterrole.yaml
	cp config/sidecar/validatingadmissionpolicy.yaml $(CHART)/files/admission-policies.yaml
	cp config/sidecar/validatingadmissionpolicy_limits.yaml $(CHART)/files/admission-policies-limits.yaml
	cp config/sidecar/mutatingadmissionpolicy_attach.yaml $(CHART)/files/admission-policies-attach.yaml
	cp pkg/monitor/prices.json $(CHART)/files/prices.json

.PHONY: chart-guards
chart-guards: ## Write the chart's guards (values.yaml's defaults and help, values.schema.json's schema) from the detector table.
	go run ./hack/chartguards $(CHART)

.PHONY: chart-sync
chart-sync: chart-crds chart-files chart-guards ## Bring every copied or generated file of the chart up to date (verify-generated checks it).

.PHONY: helm-lint
helm-lint: ## helm lint the chart (strict), with default values and with every option on.
	$(HELM) lint --strict $(CHART) $(HELM_TEMPLATE_FLAGS)
	$(HELM) lint --strict $(CHART) $(HELM_TEMPLATE_FLAGS) -f $(CHART)/ci/all-on-values.yaml

.PHONY: helm-template
helm-template: ## Render the chart (CRDs included) to $(BIN)/turnwatch-chart.yaml.
	@mkdir -p $(BIN)
	$(HELM) template turnwatch $(CHART) $(HELM_TEMPLATE_FLAGS) --include-crds > $(BIN)/turnwatch-chart.yaml
	$(HELM) template turnwatch $(CHART) $(HELM_TEMPLATE_FLAGS) -f $(CHART)/ci/all-on-values.yaml > /dev/null
	@echo "rendered $(BIN)/turnwatch-chart.yaml"

.PHONY: test-chart
test-chart: ## The chart's and samples' Go tests (rendered CRDs/RBAC/policy/config vs their sources; samples admitted by envtest).
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n1)" go test ./charts/... ./test/samples/...

##@ Demo

.PHONY: demo
demo: ## The README's first command: local node, manager, four fake agents, the fault story.
	hack/demo.sh up

.PHONY: demo-down
demo-down: ## Stop the demo's manager and tear down its node, leaving nothing behind.
	hack/demo.sh down

##@ Build

.PHONY: build
build: ## Build the manager, the sidecar, the nudge hook and the kubectl plugin (bin/kubectl-turnwatch: put bin/ on PATH for `kubectl turnwatch explain RUN` and `kubectl turnwatch drill -f RUN.yaml`).
	go build -o $(BIN)/manager ./cmd/manager
	go build -o $(BIN)/turnwatch-sidecar ./cmd/turnwatch-sidecar
	go build -o $(BIN)/kubectl-turnwatch ./cmd/kubectl-turnwatch
	CGO_ENABLED=0 go build -o $(BIN)/turnwatch-hook ./cmd/turnwatch-hook

.PHONY: run
run: manifests ## Run the manager against the current kubeconfig's cluster.
	go run ./cmd/manager --config="$(CONFIG)" --sidecar-image="$(SIDECAR_IMG)" --metrics-bind-address=0 --health-probe-bind-address=0

##@ Deploy

.PHONY: install
install: manifests ## Install the CRDs into the current kubeconfig's cluster (server-side: they are large).
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Remove the CRDs (and with them every AgentRun and AgentTurn).
	$(KUBECTL) delete --ignore-not-found -k config/crd

# The kustomization deploy applies: config/default, or config/local-node for
# the local node of hack/ (hostNetwork, loopback probes).
DEPLOY_OVERLAY ?= config/default

.PHONY: deploy
deploy: manifests ## Deploy the operator (IMG, SIDECAR_IMG) with DEPLOY_OVERLAY (config/default; config/local-node on the local node).
	$(KUBECTL) kustomize $(DEPLOY_OVERLAY) | sed -e 's|--sidecar-image=turnwatch:latest|--sidecar-image=$(SIDECAR_IMG)|' -e 's|image: turnwatch:latest|image: $(IMG)|' \
		| $(KUBECTL) apply --server-side -f -
	$(KUBECTL) apply --server-side -k config/sidecar

.PHONY: undeploy
undeploy: ## Remove what deploy applied: the runs first (the manager releases their finalizers), then the rest.
	# In the foreground: the runs go only once their turns and Pods have. A Pod
	# whose turn's CRD goes first stays: the garbage collector waits for the
	# owner's type to come back to see the owner is gone.
	$(KUBECTL) delete --ignore-not-found --cascade=foreground agentruns --all --all-namespaces
	$(KUBECTL) delete --ignore-not-found -k config/sidecar
	$(KUBECTL) delete --ignore-not-found -k $(DEPLOY_OVERLAY)
	$(KUBECTL) delete --ignore-not-found serviceaccounts,rolebindings -A -l turnwatch.dev/component=sidecar-rbac

.PHONY: help
help: ## Show targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
