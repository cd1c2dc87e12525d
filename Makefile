# Entry points; README.md explains them. Everything the tests need is built
# from the Go module proxy into .cache/ (kept by `make clean`).
SHELL := bash
GO ?= go
# One go test run covers the unit tests and the end-to-end tests on the real
# control plane; a cold machine also compiles a lot, so the timeout is generous.
TEST_TIMEOUT ?= 40m
TESTFLAGS ?=
PKGS ?= ./...
# The previous Kubernetes minor (make test-compat): its API server words the
# StatefulSet immutable-field error differently; the verdicts must not differ.
# A second API server is a second compile of most of Kubernetes (about as long
# as the rest of a cold make test), so make test leaves it to test-compat,
# which the CI workflow runs on every push and make release-check runs.
OLD_KUBE_VERSION ?= v1.36.3
OLD_KUBE_TESTS ?= TestPlanVerdicts|TestPlanManyObjectsOfOneKind
# The older minor runs plan tests only: no controllers needed.
OLD_KUBE_COMPONENTS ?= kube-apiserver kubectl

.PHONY: all build controlplane controlplane-compat shiptools orchestrators flux snapshot test test-compat test-orchestrators test-flux release-check vet demo bench clean distclean

all: build

# bin/helm is the drop-in helm's dispatcher (docs/orchestrators.md): keep
# bin/ off PATH, or helm there is the shim.
build:
	$(GO) build -o bin/helm-safe-upgrade ./cmd/helm-safe-upgrade
	ln -sf helm-safe-upgrade bin/kubectl-safe_upgrade
	$(GO) build -o bin/helm ./cmd/helm-shim

controlplane:
	scripts/build-controlplane.sh all

controlplane-compat:
	KUBE_VERSION=$(OLD_KUBE_VERSION) KUBE_COMPONENTS="$(OLD_KUBE_COMPONENTS)" scripts/build-controlplane.sh kubernetes etcd

# goreleaser and krew for test/ship and releases (cold goreleaser build ≈ 8 min),
# built before go test so the build does not eat into the test timeout.
shiptools:
	scripts/build-shiptools.sh all >/dev/null

# Every release archive and the krew manifest in dist/; nothing is published.
snapshot: shiptools
	"$$(scripts/build-shiptools.sh goreleaser)" release --snapshot --clean
	scripts/krew-manifest.sh dist > dist/safe-upgrade.yaml

# USE_CLUSTER=1: the demo and the tests use the current context of your
# KUBECONFIG instead of a local control plane (nothing of it is built; tests
# that need the audit log or change cluster-wide state skip). Without it your
# kubeconfig is never read.
USE_CLUSTER ?=

# -count=1: end-to-end results depend on the cluster, never reuse cached ones.
# One package: make test PKGS=./test/kit/testcluster TESTFLAGS=-v
ifeq ($(USE_CLUSTER),1)
test: shiptools
	SAFE_UPGRADE_USE_CLUSTER=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)
else
test: controlplane shiptools
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)
endif

# The plan tests against the previous Kubernetes minor's API server.
test-compat: controlplane-compat
	KUBE_VERSION=$(OLD_KUBE_VERSION) KUBE_COMPONENTS="$(OLD_KUBE_COMPONENTS)" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run '$(OLD_KUBE_TESTS)' ./test/e2e

# Real helmfile and Helmsman for test-orchestrators: helmfile built from its
# module source (about 1255 CPU-seconds cold, so not part of make test, whose
# test/shim makes the same helm calls from scripts), Helmsman from the folder
# HELMSMAN_SRC names (its source archive or unpacked tree: the module proxy
# does not serve it whole). Once built, both come from the cache.
# ORCHESTRATORS=helmsman builds and tests Helmsman only (its cold build is
# minutes, helmfile's about an hour on 2 cores); helmfile's tests then skip,
# saying so.
HELMSMAN_SRC ?=
ORCHESTRATORS ?= helmfile helmsman
orchestrators:
	HELMSMAN_SRC="$(HELMSMAN_SRC)" scripts/build-orchestrators.sh $(ORCHESTRATORS) >/dev/null

# helmfile and Helmsman through the helm shim on the local control plane (test/orchestrators).
test-orchestrators: controlplane orchestrators
	SAFE_UPGRADE_HELMFILE="$(if $(filter helmfile,$(ORCHESTRATORS)),$$(scripts/build-orchestrators.sh helmfile))" \
	SAFE_UPGRADE_HELMSMAN="$(if $(filter helmsman,$(ORCHESTRATORS)),$$(scripts/build-orchestrators.sh helmsman))" \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./test/orchestrators

# Flux's helm-controller and source-controller, built from the folder FLUX_SRC
# names (their source archives or unpacked trees, e.g. make test-flux
# FLUX_SRC=~/src/flux): neither is served whole by the module proxy.
FLUX_SRC ?=
flux:
	FLUX_SRC="$(FLUX_SRC)" scripts/build-flux.sh all >/dev/null

# The tool beside the real controllers on the local control plane (test/flux).
test-flux: controlplane flux
	SAFE_UPGRADE_HELM_CONTROLLER="$$(scripts/build-flux.sh helm-controller)" \
	SAFE_UPGRADE_SOURCE_CONTROLLER="$$(scripts/build-flux.sh source-controller)" \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./test/flux

# The release workflow's check: every platform's archive built by goreleaser
# with the release's flags (about 14 min cold on 2 cores) and checked as make
# test checks this machine's one (archive, krew install, plugin install), the
# plugin installed from source by Helm 3 and Helm 4, and the older minor.
release-check: controlplane shiptools test-compat
	SAFE_UPGRADE_RELEASE_ALL_PLATFORMS=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run 'TestRelease|TestGoreleaserCheck|TestHelmPluginFromSource' ./test/ship

vet:
	$(GO) vet ./...

demo:
	USE_CLUSTER=$(USE_CLUSTER) scripts/demo.sh

bench: controlplane
	scripts/bench.sh

# Stops any control plane still running from .cache/run before removing it.
clean:
	@for d in .cache/run/*/; do \
	  if [[ -f "$$d/audit-policy.yaml" ]]; then scripts/kube-down.sh "$$d"; fi; \
	done
	rm -rf bin .cache/run

distclean: clean
	rm -rf .cache
