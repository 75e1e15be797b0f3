# Every target bootstraps what it needs from nothing: a Python 3.11 venv and the pinned npm servers.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ARTIFACT_TOOLS := $(VENV)/.artifact-tools
PIPX := PIPX_HOME=build/pipx PIPX_BIN_DIR=build/pipx/bin PIPX_MAN_DIR=build/pipx/man $(PY) -m pipx
ARTIFACT_SMOKE_ARGS := --allow-write-fixture --allow-oauth-fixture

.PHONY: setup smoke test soak lint typecheck schemas bench conformance clean wheel smoke-wheel dist smoke-dist settings \
	gui-smoke chromium gnome-keyring

CLIENT := clients/typescript
CLIENT_BUILT := $(CLIENT)/dist/index.js
SETTINGS := clients/settings
SETTINGS_BUILT := $(SETTINGS)/dist/.built
CHROMIUM := /usr/bin/chromium

setup: $(STAMP) node_modules/.installed $(CLIENT_BUILT) $(SETTINGS_BUILT)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

node_modules/.installed: package.json package-lock.json $(CLIENT)/package.json $(SETTINGS)/package.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The client package (an npm workspace), built from its sources, the generated types and the validators Ajv compiles
# from the schema at build time.
$(CLIENT_BUILT): node_modules/.installed $(wildcard $(CLIENT)/src/*.ts $(CLIENT)/src/rpc/*.ts) $(CLIENT)/tsconfig.json \
		$(CLIENT)/tsconfig.base.json $(CLIENT)/scripts/generate.mjs schemas/protocol.schema.json \
		schemas/typescript/index.ts
	npm run build --silent --workspace $(CLIENT)
	touch $@

# The reference host and settings page (SPEC §12): the host, its tests and the GUI smoke compiled by tsc, the page
# type-checked by tsc and bundled by esbuild (with the client package and Ajv) into dist/page.
$(SETTINGS_BUILT): $(CLIENT_BUILT) $(SETTINGS)/scripts/bundle.mjs $(wildcard $(SETTINGS)/tsconfig*.json) \
		$(wildcard $(SETTINGS)/src/host/*.ts $(SETTINGS)/src/page/*.ts $(SETTINGS)/src/page/*.html \
		$(SETTINGS)/src/page/*.css $(SETTINGS)/test/*.ts $(SETTINGS)/smoke/*.ts)
	npm run build --silent --workspace $(SETTINGS)
	touch $@

# The settings page against the user's data dir (or DATA_DIR=…); prints the URL with this run's token
# (SETTINGS_ARGS=--open also opens the browser, with a one-time code: a command line never carries the token).
settings: setup
	node $(SETTINGS)/dist/src/host/main.js --daemon-command '["$(abspath $(PY))","-m","app_server"]' \
		$(if $(DATA_DIR),--data-dir '$(DATA_DIR)') $(SETTINGS_ARGS)

# Debian's chromium for the GUI smoke: installed when missing if we are root (CI), else we say how.
chromium:
	@if [ -x $(CHROMIUM) ]; then exit 0; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's chromium for the GUI smoke"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "make gui-smoke needs Debian's chromium at $(CHROMIUM): run 'sudo apt-get install chromium'" >&2; \
		exit 1; \
	fi

# The keychain tests (tests/secrets) start their own session bus and GNOME Keyring: Debian's packages, installed
# like Chromium (root: apt-get; otherwise the command to run).
gnome-keyring:
	@if command -v gnome-keyring-daemon >/dev/null && command -v dbus-daemon >/dev/null; then exit 0; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's gnome-keyring and dbus for the keychain tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			gnome-keyring dbus dbus-x11 libsecret-tools >/dev/null; \
	else \
		echo "make test needs GNOME Keyring and D-Bus: run 'sudo apt-get install gnome-keyring dbus dbus-x11'" >&2; \
		exit 1; \
	fi

# The settings page in headless Chromium against the fixture servers and npm server-everything; a screenshot per
# behaviour in build/gui-smoke.
gui-smoke: setup chromium
	node $(SETTINGS)/dist/smoke/gui-smoke.js --out build/gui-smoke

# The shipped artifacts (SPEC §10). Their tools (build, pipx; PyInstaller in its own venv) are pinned apart: make test
# never needs them.
$(ARTIFACT_TOOLS): $(STAMP) packaging/requirements.txt
	$(PY) -m pip install --quiet -r packaging/requirements.txt
	touch $@

wheel: $(ARTIFACT_TOOLS)
	rm -f dist/mcp_app_server-*
	$(PY) -m build --outdir dist .

smoke-wheel: wheel node_modules/.installed
	rm -rf build/pipx
	$(PIPX) install dist/mcp_app_server-*.whl
	build/pipx/bin/mcp-app-server --version
	$(PY) -m pytest -q -m slow tests/packaging/test_artifacts.py
	$(PY) scripts/smoke/current_smoke.py $(ARTIFACT_SMOKE_ARGS) --daemon-command '["build/pipx/bin/mcp-app-server"]'

# The bundle is built from what a user installs, not from the checkout: a fresh venv with the wheel (not editable)
# and PyInstaller only, run from build/ so that no checkout folder is on its path; then its RUNPATHs are made
# $$ORIGIN-relative and install records naming this machine are dropped (packaging/pyinstaller/finish_bundle.py).
DIST_VENV := build/dist-venv
dist: wheel
	rm -rf $(DIST_VENV) build/pyinstaller dist/mcp-app-server
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DIST_VENV)/bin/python -m pip install --quiet dist/mcp_app_server-*.whl -r packaging/pyinstaller/requirements.txt
	cd build && ../$(DIST_VENV)/bin/pyinstaller --noconfirm --log-level WARN --distpath ../dist --workpath pyinstaller \
		../packaging/pyinstaller/mcp-app-server.spec
	$(DIST_VENV)/bin/python packaging/pyinstaller/finish_bundle.py dist/mcp-app-server

smoke-dist: dist node_modules/.installed
	$(PY) scripts/smoke/current_smoke.py $(ARTIFACT_SMOKE_ARGS) --daemon-command '["dist/mcp-app-server/mcp-app-server"]'
	$(PY) packaging/pyinstaller/check_standalone.py dist/mcp-app-server

# The smoke drives the daemon against the fixture servers: it needs the venv and the npm servers, not the client
# package or the settings page.
smoke: $(STAMP) node_modules/.installed
	$(PY) scripts/smoke/current_smoke.py $(SMOKE_ARGS)

# Every stage runs even when an earlier one fails (a red lint must not hide a red client test); the run fails at
# the end, naming the stages that failed. pytest runs on PYTEST_WORKERS processes (pytest-xdist), a module to one
# worker (--dist loadfile: a module fixture is made once, and a module's daemon sees all its tests' lines), then the
# tests marked serial run alone: they hold global state or latency bounds.
PYTEST_WORKERS ?= 2
TEST_STAGES := \
	"ruff|$(PY) -m ruff check ." \
	"mypy linux|$(PY) -m mypy --platform linux --cache-dir .mypy_cache/linux" \
	"mypy win32|$(PY) -m mypy --platform win32 --cache-dir .mypy_cache/win32" \
	"pytest|$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m 'not slow and not serial'" \
	"pytest serial|$(PY) -m pytest -q -m 'serial and not slow'" \
	"client tests|npm test --silent --workspace $(CLIENT)" \
	"settings tests|npm test --silent --workspace $(SETTINGS)"

test: setup gnome-keyring
	@failed=""; for stage in $(TEST_STAGES); do \
		name=$${stage%%|*}; command=$${stage#*|}; \
		echo "== $$name: $$command"; \
		sh -c "$$command" || failed="$$failed, $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed stages: $${failed#, }" >&2; exit 1; fi; \
	echo "make test: every stage passed"

# The soaks and long fuzz runs (pytest -m slow): CI runs them after the suite.
soak: setup
	$(PY) -m pytest -q -m slow --ignore=tests/packaging

lint: setup
	$(PY) -m ruff check .

# The three packages type-checked for Linux (macOS takes the same paths) and Windows (SPEC §10: checked, not run);
# configured in pyproject. A cache per platform keeps a second run to about a second.
typecheck: setup
	$(PY) -m mypy --platform linux --cache-dir .mypy_cache/linux
	$(PY) -m mypy --platform win32 --cache-dir .mypy_cache/win32

schemas: setup
	$(PY) -m app_server generate-json-schema --out schemas
	$(PY) -m app_server generate-ts --out schemas/typescript
	$(PY) -m protocol.docs_export docs/protocol.md

bench: setup
	$(PY) -m bench.report
	$(PY) -m bench.search
	$(PY) -m bench.storm
	npm run bench --silent --workspace $(CLIENT)

conformance: setup
	$(PY) scripts/conformance/run.py

clean:
	rm -rf $(VENV) .mypy_cache node_modules build dist $(CLIENT)/dist $(CLIENT)/build $(CLIENT)/src/generated $(SETTINGS)/dist
