# The two commands: `make test` and `make up`. Both build what they need first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-stamp
STACK ?= dev
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := .tools/bin/actionlint-$(ACTIONLINT_VERSION)

.PHONY: test lint docs up synth venv policy-venv tools pulumi-toolchain local-cluster

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check --quiet -r requirements.txt
	touch $@

venv: $(STAMP)

# The policy pack's own virtualenv (pulumi-policy pins a protobuf the main one cannot share).
POLICY_STAMP := policy/.venv/.requirements-stamp
$(POLICY_STAMP): policy/requirements.txt
	$(PYTHON) -m venv policy/.venv
	policy/.venv/bin/pip install --disable-pip-version-check --quiet -r policy/requirements.txt
	touch $@

policy-venv: $(POLICY_STAMP)

lint: $(STAMP) $(ACTIONLINT)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(ACTIONLINT) .github/workflows/*.yml

# The GitHub Actions linter, built from the Go module proxy.
$(ACTIONLINT):
	GOBIN=$(CURDIR)/.tools/actionlint GOFLAGS= go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mkdir -p $(@D) && mv .tools/actionlint/actionlint $@

# promtool, amtool and prometheus, which the monitoring tests run for real; the Pulumi
# CLI, language host and providers the end-to-end tests run; and the local control plane
# (etcd, Kubernetes, kwok, KEDA) the deploy-mode tests run (each built once, cached).
tools: $(STAMP) $(POLICY_STAMP)
	scripts/install-tools
	scripts/pulumi-toolchain
	scripts/local-cluster build

pulumi-toolchain: $(STAMP)
	scripts/pulumi-toolchain

# A real control plane on loopback to try a stack on: `eval "$$(scripts/local-cluster env)"` afterwards.
local-cluster:
	scripts/local-cluster start

# The whole suite: format, lint, types, then every test.
test: lint tools
	$(BIN)/python -m pytest

# Regenerate the README's config reference from the schema.
docs: $(STAMP)
	$(BIN)/python -m platform_config.reference --write

# Render or deploy one stack with the real Pulumi CLI (dev renders to rendered/dev/).
up: pulumi-toolchain
	scripts/up $(STACK)

# Offline: every object the program would create for STACK, under Pulumi's mocks.
synth: $(STAMP)
	$(BIN)/python -m stackctl synth --stack $(STACK) --out synth/$(STACK)
