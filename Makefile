# throughline: build, test, demo, bench. Tools are pinned and installed into ./bin.
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
export GOFLAGS := -buildvcs=false

BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
KUSTOMIZE_VERSION := v5.8.2
GOLANGCI_LINT_VERSION := v2.15.0
GOTESTSUM_VERSION := v1.13.0
BENCH ?= .
BENCH_COUNT ?= 6

FUZZTIME ?= 30s
FUZZ_PKGS ?= ./...

# Any golangci-lint finding fails `make lint` (the tool's own default, 1).
# A compile error, in e2e-tagged code too, is a finding. A finding that
# must stay takes a `//nolint:<linter> // reason` at the line, or a
# documented exclusion in .golangci.yml. GOLANGCI_ISSUES_EXIT_CODE=0 lists
# the findings without failing (for a look at a branch in progress).
GOLANGCI_ISSUES_EXIT_CODE ?= 1

# make image: release image index, no container engine (internal/ociimage).
# SOURCE_DATE_EPOCH defaults to the commit time, so two builds of one commit
# give one digest. IMAGE_REPO=host/repo[:tag] also pushes (plain HTTP only to
# a loopback registry; without a tag it is pushed as VERSION).
IMAGE_PLATFORMS ?= amd64 arm64
IMAGE_DIR := $(BIN)/image
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_REPO ?=
# make release SIGNING_KEY=path: sign the index and attest its SBOM with this
# PEM private key (cosign's encrypted keys too: SIGNING_KEY_PASSWORD or
# COSIGN_PASSWORD); pushed next to the index with IMAGE_REPO (docs/release.md).
SIGNING_KEY ?=

.PHONY: all build install docs argocd-extension docs-images image release test unit lint fmt vet tidy-check generate generate-check golangci demo bench bench-cli bench-cmp-server tools compat fuzz clean

all: build test

build: ## build ./bin/throughline, ./bin/throughline-cmp (the thin plugin client plugin.yaml runs) and ./bin/throughline-cmp-render (its in-process renderer)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/throughline ./cmd/throughline-cmp ./cmd/throughline-cmp-render

install: ## install throughline, throughline-cmp and throughline-cmp-render into GOBIN (default ~/go/bin), on your PATH
	$(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/throughline ./cmd/throughline-cmp ./cmd/throughline-cmp-render

docs: ## regenerate the CLI reference docs/cli/*.md from the cobra commands
	THROUGHLINE_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestCLIDocs$$' ./cmd/throughline/

argocd-extension: ## the Argo CD UI extension (npm + esbuild): ui/argocd-extension/dist/extension-throughline.js, bin/argocd-extension/*.tar
	./hack/argocd-extension.sh

docs-images: argocd-extension ## regenerate docs/images (the web view's, the Argo CD extension's and the delivery dashboard's screenshots) in headless Chromium
	THROUGHLINE_DOCS_IMAGES=$(CURDIR)/docs/images $(GO) test -tags e2e -count=1 -run '^(TestWebViewServed|TestArgoCDExtension|TestDashboardPage)$$' ./e2e/webview/

image: ## OCI image index (linux/amd64, linux/arm64) in bin/image; pushes when IMAGE_REPO is set
	set -e; for arch in $(IMAGE_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o $(BIN)/linux_$$arch/ ./cmd/throughline ./cmd/throughline-cmp ./cmd/throughline-cmp-render; \
	done
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./hack/image -out $(IMAGE_DIR) \
		$(foreach a,$(IMAGE_PLATFORMS),-bin linux/$(a)=$(BIN)/linux_$(a)/throughline \
			-plugin-bin linux/$(a)=$(BIN)/linux_$(a)/throughline-cmp \
			-render-bin linux/$(a)=$(BIN)/linux_$(a)/throughline-cmp-render) \
		-revision '$(REVISION)' -version '$(VERSION)' -repo '$(IMAGE_REPO)' \
		-digest-file $(BIN)/image.ref

release: image build ## pin deploy/ bundles to the index in bin/image.ref, render each through policy; sign it with SIGNING_KEY
	GO='$(GO)' IMAGE_DIR='$(IMAGE_DIR)' SIGNING_KEY='$(SIGNING_KEY)' ./hack/release.sh $(BIN)/throughline $(BIN)/image.ref '$(VERSION)'

test: lint unit ## the gate: lint + unit tests with -race

# -timeout: a package's binary may take longer than go test's default 10m on
# 2 loaded cores (promote, cmd/throughline); it is a hang guard, not a bound.
# gotestsum runs go test and ends with the list of skipped tests, each with
# its reason (what to install to run it: sshd, prometheus, root), and of
# failures; the raw go test -json stream is kept in bin/unit.json.
unit: $(BIN)/gotestsum
	$(BIN)/gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile $(BIN)/unit.json -- \
		-race -count=1 -timeout 30m ./...

lint: fmt vet tidy-check generate-check golangci

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

tidy-check:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }

generate: ## regenerate code: api/v1alpha1 deepcopy (controller-gen, pinned in the //go:generate line)
	$(GO) generate ./api/...

# generate-check regenerates api/ in a temporary copy (api/ imports only
# other modules, so go.mod and go.sum are all it needs) and fails on any
# difference from the files in the tree. About 2 s with a warm module cache.
generate-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp go.mod go.sum "$$tmp"/; cp -R api "$$tmp"/; \
	(cd "$$tmp" && $(GO) generate ./api/...); \
	diff -r api "$$tmp"/api || { echo "generated code is stale: run make generate"; exit 1; }

golangci: $(BIN)/golangci-lint ## golangci-lint v2 with .golangci.yml
	$(BIN)/golangci-lint run --timeout 10m --issues-exit-code $(GOLANGCI_ISSUES_EXIT_CODE) ./...

demo: build ## render the example environments, show their refusals, then walk one digest from CI to production (no cluster, no network)
	$(GO) build -trimpath -o $(BIN)/ ./hack/demochain
	@./hack/demo.sh $(BIN)/throughline examples/gitops-env

compat: ## Argo CD's own CMP server against plugin.yaml (nested modules)
	./e2e/argocd/run.sh

fuzz: ## run every fuzz target (go test -list '^Fuzz') in FUZZ_PKGS for FUZZTIME
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh $(FUZZ_PKGS)

tools: $(BIN)/benchstat $(BIN)/kustomize $(BIN)/golangci-lint $(BIN)/gotestsum

$(BIN)/gotestsum:
	GOBIN=$(BIN) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)

$(BIN)/benchstat:
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

$(BIN)/kustomize:
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

$(BIN)/golangci-lint:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

bench: $(BIN)/benchstat ## Go benchmarks, summarised by benchstat
	set -o pipefail; $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCH_COUNT) ./render/ ./policy/ ./cmp/ ./registry/ ./health/ ./gate/ | tee $(BIN)/bench.txt
	$(BIN)/benchstat $(BIN)/bench.txt

bench-cli: build $(BIN)/kustomize ## wall time and peak memory of cmp generate vs kustomize build
	./hack/bench-cli.sh $(BIN)/throughline $(BIN)/kustomize

bench-cmp-server: $(BIN)/kustomize ## generate p50/p99 through Argo CD's real cmp-server, 300 apps x 3 environments
	./hack/bench-cmp-server.sh $(BIN)/kustomize

clean:
	rm -rf $(BIN)

# e2e-assets and e2e: the real servers (docs/harness.md).
include hack/e2e.mk
