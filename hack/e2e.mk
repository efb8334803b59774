# End-to-end tests against real servers (docs/harness.md). Included from the
# Makefile: include hack/e2e.mk
#
#   make e2e-assets   build or find every server (cached under $(E2E_CACHE))
#   make e2e          run ./e2e/... of the main module (build tag e2e) against them
#
# The e2e/argocd nested module is a separate module and is not part of ./e2e/...
# here. Test binaries run in a private network namespace (hack/netns-exec.sh;
# root), where the Argo CD notifications controller's 0.0.0.0 metrics port
# reaches nothing outside.

E2E_CACHE ?= $(or $(THROUGHLINE_CACHE),$(HOME)/.cache/throughline)
E2E_TESTFLAGS ?=

.PHONY: e2e-assets e2e

e2e-assets:
	THROUGHLINE_CACHE=$(E2E_CACHE) hack/e2e-assets.sh

e2e:
	export THROUGHLINE_CACHE=$(E2E_CACHE) && eval "$$(hack/e2e-assets.sh)" && \
	go test -race -tags e2e -count=1 -exec "$(CURDIR)/hack/netns-exec.sh" $(E2E_TESTFLAGS) ./e2e/...
