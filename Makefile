# The two commands: `make test` and `make up`. Both build what they need first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-stamp
RUNTIME_STAMP := $(VENV)/.runtime-requirements-stamp
STACK ?= dev
# The stack `make up` and `make synth` act on, checked as the Makefile is read: before any prerequisite (the
# virtualenv, Helm, the offline toolchain) is built, a STACK that is empty, of several words or of no
# stacks/Pulumi.<name>.yaml stops make at once, naming the stacks there are (scripts/stack-name).
STACK_GOAL := $(firstword $(filter up synth,$(MAKECMDGOALS)))
ifneq ($(STACK_GOAL),)
STACK_PROBLEM := $(shell scripts/stack-name 'make $(STACK_GOAL): STACK=' '$(subst ','\'',$(STACK))' 2>&1)
ifneq ($(.SHELLSTATUS),0)
$(error $(STACK_PROBLEM))
endif
endif
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := .tools/bin/actionlint-$(ACTIONLINT_VERSION)
KUBE_SCORE_VERSION := v1.20.0
KUBE_SCORE := .tools/bin/kube-score-$(KUBE_SCORE_VERSION)
# go-containerregistry's crane, which `stackctl pin-images` resolves image tags to digests with, and its registry
# (cmd/registry, an in-memory OCI registry on loopback), which the pin-images test pushes to.
CRANE_VERSION := v0.22.1
CRANE := .tools/bin/crane-$(CRANE_VERSION)
REGISTRY := .tools/bin/registry-$(CRANE_VERSION)
# Helm, which `stackctl synth` templates the install-mode charts with: the version pulumi-kubernetes 4.25.0
# embeds, built in its provider's module by scripts/pulumi-toolchain (offline/chart_template.py finds it by
# the same name).
HELM_VERSION := v3.18.6
HELM := .tools/bin/helm-$(HELM_VERSION)
# Unpacked charts standing in for their repositories (offline/chart_template.py): ../shared/charts where it
# sits beside the checkout, as on the offline test machines; unset, charts come from their repositories.
CHART_MIRROR ?= $(wildcard $(CURDIR)/../shared/charts)

.PHONY: test test-fast lint docs stack-fields arg-docs lock artefacts up synth scan venv runtime-venv policy-venv tools tool-parts system-tools crane pulumi-toolchain cluster-binaries fake-gcs-server prometheus-releases rclone-release local-cluster golden

# Runtime: requirements.txt, what `pulumi up` needs (and all the stock CLI installs), from its lock: every
# package at the version and hashes requirements.lock holds, then the component package and the tools (the
# `stackctl` command), editable.
$(RUNTIME_STAMP): requirements.lock components/pyproject.toml pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --disable-pip-version-check --quiet --no-deps -e ./components
	$(BIN)/pip install --disable-pip-version-check --quiet --no-deps -e .
	touch $@

# Development: requirements-dev.txt, the runtime plus tests, lint, benchmarks and the offline toolchain, locked
# the same way (requirements.lock is resolved within requirements-dev.lock, so both hold the same versions); then
# the simulator's loops compiled into the user's cache (simulator/ahead.py), so the first `stackctl plan` loads them.
$(STAMP): $(RUNTIME_STAMP) requirements-dev.lock
	$(BIN)/pip install --disable-pip-version-check --quiet --require-hashes --no-deps -r requirements-dev.lock
	$(BIN)/python -m simulator.ahead
	touch $@

# Rewrite the locks after changing requirements.txt or requirements-dev.txt: one resolution for every platform
# and Python from 3.11 (uv, hashes of every file), keeping the versions they already hold where they still fit.
LOCK := $(BIN)/uv pip compile --quiet --universal --generate-hashes --python-version 3.11 --no-emit-package triton-platform-components
lock: $(STAMP)
	$(LOCK) requirements-dev.txt -o requirements-dev.lock
	$(LOCK) requirements.txt --constraint requirements-dev.lock -o requirements.lock

venv: $(STAMP)

# What `pulumi up` alone needs (the deploy workflow's virtualenv).
runtime-venv: $(RUNTIME_STAMP)

# The policy pack's own virtualenv (pulumi-policy pins a protobuf the main one cannot share).
POLICY_STAMP := policy/.venv/.requirements-stamp
$(POLICY_STAMP): policy/requirements.txt
	$(PYTHON) -m venv policy/.venv
	policy/.venv/bin/pip install --disable-pip-version-check --quiet -r policy/requirements.txt
	touch $@

policy-venv: $(POLICY_STAMP)

# The manifest scanner's checkov, in its own virtualenv (checkov pins libraries the main one pins differently).
SCAN_STAMP := manifest_scan/.venv/.requirements-stamp
$(SCAN_STAMP): manifest_scan/requirements.txt
	$(PYTHON) -m venv manifest_scan/.venv
	manifest_scan/.venv/bin/pip install --disable-pip-version-check --quiet -r manifest_scan/requirements.txt
	touch $@

lint: $(STAMP) $(ACTIONLINT)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy .
	for program in examples/*/__main__.py components/__main__.py bench/bare_charts/__main__.py; do $(BIN)/mypy "$$program" || exit 1; done
	$(BIN)/lint-imports
	$(ACTIONLINT) .github/workflows/*.yml

# The GitHub Actions linter, built from the Go module proxy.
$(ACTIONLINT):
	GOBIN=$(CURDIR)/.tools/actionlint GOFLAGS= go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mkdir -p $(@D) && mv .tools/actionlint/actionlint $@

# The manifest scanner's kube-score, built from the Go module proxy.
$(KUBE_SCORE):
	GOBIN=$(CURDIR)/.tools/kube-score GOFLAGS= go install github.com/zegl/kube-score/cmd/kube-score@$(KUBE_SCORE_VERSION)
	mkdir -p $(@D) && mv .tools/kube-score/kube-score $@

# crane and its registry, built from the Go module proxy (`make crane`: crane alone, as the deploy workflow builds it).
$(CRANE) $(REGISTRY):
	GOBIN=$(CURDIR)/.tools/go-containerregistry GOFLAGS= go install github.com/google/go-containerregistry/cmd/$(firstword $(subst -, ,$(@F)))@$(CRANE_VERSION)
	mkdir -p $(@D) && mv .tools/go-containerregistry/$(firstword $(subst -, ,$(@F))) $@

crane: $(CRANE)

# Helm alone (scripts/pulumi-toolchain builds it with the provider in `make tools`).
$(HELM): $(STAMP)
	scripts/pulumi-toolchain helm
	@test -x $@ || { echo "scripts/pulumi-toolchain built another Helm than HELM_VERSION $(HELM_VERSION) (the one the \
	kubernetes provider embeds): update HELM_VERSION here and in offline/chart_template.py" >&2; exit 1; }

# promtool, amtool and prometheus, which the monitoring tests run for real; the loader image's rclone, which
# the publishing and loader tests run; the Pulumi CLI, language hosts, providers and Helm the end-to-end tests run; the
# local control plane (etcd, Kubernetes, kwok, KEDA) the deploy-mode tests run; the Prometheus servers of
# kube-prometheus-stack 79.7.1 and 88.5.3, which the chart upgrade test runs; the GCS emulator the publishing tests run; crane and its registry, which the image-pinning test runs; checkov and
# kube-score, which the manifest scan runs
# (each built once, cached). The parts need nothing of each other, so they are built side by
# side (a cold build is mostly Go compiling on every core; two builds fill the gaps of one),
# and each part's output is printed whole when it ends. The two long Go builds are listed first, to start first.
tools: $(STAMP)
	$(MAKE) --no-print-directory -j 4 --output-sync=target tool-parts

tool-parts: pulumi-toolchain cluster-binaries $(KUBE_SCORE) $(CRANE) $(REGISTRY) fake-gcs-server prometheus-releases rclone-release $(POLICY_STAMP) $(SCAN_STAMP) system-tools

system-tools:
	scripts/install-tools

pulumi-toolchain: $(STAMP)
	scripts/pulumi-toolchain

cluster-binaries:
	scripts/local-cluster build

fake-gcs-server:
	scripts/fake-gcs-server

# The Prometheus servers of both kube-prometheus-stack releases in the chart mirror, for the chart upgrade test.
prometheus-releases:
	scripts/prometheus-releases

# The loader image's rclone, which the publishing and loader tests run.
rclone-release:
	scripts/rclone-release

# A real control plane on loopback to try a stack on: `eval "$$(scripts/local-cluster env)"` afterwards.
local-cluster:
	scripts/local-cluster start

# The whole suite: format, lint, types, then every test on three pytest-xdist workers, the longest first
# (tests/conftest.py). Most real-tool tests wait on servers, rollouts and scrapes rather than compute, so three
# overlap on two cores. The 15 slowest tests are listed at the end (docs/testing.md records them).
TEST_WORKERS ?= 3
synth scan test test-fast: export TRITON_CHART_MIRROR = $(CHART_MIRROR)

test: lint tools
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist load --durations=15

# Every test that starts no real tool (those are marked real_tools; tests/conftest.py fails one that
# starts a tool unmarked) and runs no long simulation (marked slow), on every core, with a few
# Hypothesis examples each (the `fast` profile): about two minutes on two cores, after building the
# development virtualenv only. `make test` runs everything, with full example counts.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not real_tools and not slow" -n auto --dist worksteal --hypothesis-profile=fast

# Regenerate the config reference in docs/configuration.md from the schema.
docs: stack-fields
	$(BIN)/python -m platform_config.reference --write
	$(BIN)/cog -r docs/stackctl.md

# Rewrite the stack's fields for the components' settings from the components' Args (platform_config/component_fields.py).
stack-fields: $(STAMP)
	$(BIN)/python -m platform_config.component_fields

# Rewrite the closing `Default: ...` of each component Arg's doc from its Setting (platform_config/arg_docs.py).
arg-docs: $(STAMP)
	$(BIN)/python -m platform_config.arg_docs --write

# Every generated file the repository commits, from the tree as it is: the planning traces, production's example
# simulation and each stack's plan (docs/development.md, "Generated artefacts"). tests/project/test_committed_artefacts.py
# reads these lines: it fails, naming the line, when an artefact's recorded inputs no longer match the tree.
# Exit 1 is a result, not a failure here: a missed SLO (the spike example shows one) or no passing candidate is
# written out and committed like any other; 2 (an input) and 3 (a bug) stop.
artefacts: $(STAMP)
	$(BIN)/python bench/plan_traces.py
	$(BIN)/python -m stackctl simulate --stack production --profile spike --hours 1 --peak-rps 40000 --seed 0 --out docs/simulation/production-spike || test $$? -eq 1
	$(BIN)/python -m stackctl plan --stack dev --trace stacks/traces/dev.csv --out docs/plan/dev || test $$? -eq 1
	$(BIN)/python -m stackctl plan --stack staging --trace stacks/traces/staging.csv --out docs/plan/staging || test $$? -eq 1
	$(BIN)/python -m stackctl plan --stack production --trace stacks/traces/production.csv --out docs/plan/production || test $$? -eq 1

# Render or deploy one stack with the real Pulumi CLI (dev renders to rendered/dev/): the
# stock `pulumi` on PATH, which needs only the runtime virtualenv; without one (or with
# TRITON_PULUMI_TOOLCHAIN=offline) the offline toolchain, which runs in the development one.
TRITON_PULUMI_TOOLCHAIN ?= auto
STOCK_PULUMI := $(if $(filter-out offline,$(TRITON_PULUMI_TOOLCHAIN)),$(shell command -v pulumi 2>/dev/null))
up: $(if $(STOCK_PULUMI),$(RUNTIME_STAMP),$(STAMP))
	scripts/up $(STACK)

# Offline: every object the program would create for STACK, under Pulumi's mocks.
# A Helm 3 on PATH is used as it is (offline/chart_template.py); Helm is built only where there is none.
PATH_HELM := $(shell helm version --template '{{.Version}}' 2>/dev/null | grep '^v3\.')
synth: $(STAMP) $(if $(PATH_HELM),,$(HELM))
	$(BIN)/python -m stackctl synth --stack $(STACK) --out synth/$(STACK)

# Rewrite tests/golden/<stack>/ from every stack's synth, when a change is meant to alter them (docs/testing.md).
golden: $(STAMP)
	$(BIN)/python -m tests.golden --update

# checkov and kube-score over every stack's manifests; fails on a finding not in manifest_scan/exceptions.yaml.
scan: $(STAMP) $(SCAN_STAMP) $(KUBE_SCORE) $(HELM)
	$(BIN)/python -m manifest_scan
