# throughline: build, test, demo, bench. Tools are pinned and installed into ./bin.
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
export GOFLAGS := -buildvcs=false

BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
KUSTOMIZE_VERSION := v5.8.2
BENCH ?= .
BENCH_COUNT ?= 6

FUZZTIME ?= 30s

.PHONY: all build test unit lint fmt vet tidy-check demo bench bench-cli tools compat fuzz clean

all: build test

build: ## build ./bin/throughline
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/throughline ./cmd/throughline

test: lint unit ## the gate: lint + unit tests with -race

unit:
	$(GO) test -race -count=1 ./...

lint: fmt vet tidy-check

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

tidy-check:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }

demo: build ## render the example environments, show their hashes and a refusal (no cluster, no network)
	@./hack/demo.sh $(BIN)/throughline examples/gitops-env

compat: ## Argo CD's own CMP server against plugin.yaml (nested modules)
	./e2e/argocd/run.sh

fuzz: ## run every fuzz target for FUZZTIME
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeManifests$$' -fuzztime $(FUZZTIME) ./render/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckImage$$' -fuzztime $(FUZZTIME) ./policy/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRecord$$' -fuzztime $(FUZZTIME) ./registry/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./promotion/
	$(GO) test -run '^$$' -fuzz '^FuzzParseImageID$$' -fuzztime $(FUZZTIME) ./health/

tools: $(BIN)/benchstat $(BIN)/kustomize

$(BIN)/benchstat:
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

$(BIN)/kustomize:
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

bench: $(BIN)/benchstat ## Go benchmarks, summarised by benchstat
	set -o pipefail; $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCH_COUNT) ./render/ ./policy/ ./cmp/ ./registry/ ./health/ | tee $(BIN)/bench.txt
	$(BIN)/benchstat $(BIN)/bench.txt

bench-cli: build $(BIN)/kustomize ## wall time and peak memory of cmp generate vs kustomize build
	./hack/bench-cli.sh $(BIN)/throughline $(BIN)/kustomize

clean:
	rm -rf $(BIN)

# e2e-assets and e2e: the real servers (docs/harness.md).
include hack/e2e.mk
