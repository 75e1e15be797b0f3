# Every target bootstraps what it needs from nothing: a Python 3.11 venv and the pinned npm servers.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup smoke test lint schemas bench conformance clean

CLIENT := clients/typescript
CLIENT_BUILT := $(CLIENT)/dist/index.js

setup: $(STAMP) node_modules/.installed $(CLIENT_BUILT)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

node_modules/.installed: package.json package-lock.json $(CLIENT)/package.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The client package (an npm workspace), built from its sources and the generated types and schema.
$(CLIENT_BUILT): node_modules/.installed $(wildcard $(CLIENT)/src/*.ts) $(CLIENT)/tsconfig.json \
		$(CLIENT)/tsconfig.base.json schemas/protocol.schema.json schemas/typescript/index.ts
	npm run build --silent --workspace $(CLIENT)
	touch $@

smoke: setup
	$(PY) scripts/smoke/current_smoke.py $(SMOKE_ARGS)

test: setup
	$(PY) -m ruff check .
	$(PY) -m pytest -q
	npm test --silent --workspace $(CLIENT)

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
	rm -rf $(VENV) node_modules $(CLIENT)/dist $(CLIENT)/build $(CLIENT)/src/generated
