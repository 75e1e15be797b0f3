# Every target bootstraps what it needs from nothing: a Python 3.11 venv and the pinned npm servers.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup smoke test lint schemas bench conformance clean

setup: $(STAMP) node_modules/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

smoke: setup
	$(PY) scripts/smoke/current_smoke.py $(SMOKE_ARGS)

test: setup
	$(PY) -m ruff check .
	$(PY) -m pytest -q

lint: setup
	$(PY) -m ruff check .

schemas: setup
	$(PY) -m app_server generate-json-schema --out schemas
	$(PY) -m app_server generate-ts --out schemas/typescript

bench: setup
	$(PY) -m bench.report
	$(PY) -m bench.search

conformance: setup
	$(PY) scripts/conformance/run.py

clean:
	rm -rf $(VENV) node_modules
