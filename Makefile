# The two commands: `make test` and `make up`. Both build what they need first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-stamp
STACK ?= dev

.PHONY: test lint docs up synth venv tools

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check --quiet -r requirements.txt
	touch $@

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy .

# promtool, amtool and prometheus, which the monitoring tests run for real.
tools:
	scripts/install-tools

# The whole suite: format, lint, types, then every test.
test: lint tools
	$(BIN)/python -m pytest

# Regenerate the README's config reference from the schema.
docs: $(STAMP)
	$(BIN)/python -m platform_config.reference --write

# Render or deploy one stack with the real Pulumi CLI (dev renders to rendered/dev/).
up: $(STAMP)
	scripts/up $(STACK)

# Offline: every object the program would create for STACK, under Pulumi's mocks.
synth: $(STAMP)
	$(BIN)/python -m stackctl synth --stack $(STACK) --out synth/$(STACK)
