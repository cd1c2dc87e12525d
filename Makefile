# Entry points; README.md explains them. Everything the tests need is built
# from the Go module proxy into .cache/ (kept by `make clean`).
SHELL := bash
GO ?= go
# One go test run covers the unit tests and the end-to-end tests on the real
# control plane; a cold machine also compiles a lot, so the timeout is generous.
TEST_TIMEOUT ?= 40m
TESTFLAGS ?=
PKGS ?= ./...

.PHONY: all build controlplane test vet demo bench clean distclean

all: build

build:
	$(GO) build -o bin/helm-safe-upgrade ./cmd/helm-safe-upgrade
	ln -sf helm-safe-upgrade bin/kubectl-safe_upgrade

controlplane:
	scripts/build-controlplane.sh all

# -count=1: end-to-end results depend on the cluster, never reuse cached ones.
# One package: make test PKGS=./internal/testcluster TESTFLAGS=-v
test: controlplane
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

vet:
	$(GO) vet ./...

demo:
	scripts/demo.sh

bench:
	@echo "no benchmarks yet"

# Stops any control plane still running from .cache/run before removing it.
clean:
	@for d in .cache/run/*/; do \
	  if [[ -f "$$d/audit-policy.yaml" ]]; then scripts/kube-down.sh "$$d"; fi; \
	done
	rm -rf bin .cache/run

distclean: clean
	rm -rf .cache
