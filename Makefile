# `make demo`, `make check` and `make test` do all the set-up on a fresh machine with Python 3.11 and make.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo check test setup system-deps clean

# bubblewrap is the sandbox for student code; chromium prints exam PDFs (and tests read pages in it, some through
# Playwright, which drives this chromium and never downloads a browser of its own), poppler-utils turns PDF pages into
# images for the tests, libjs-katex renders formulas in exam pages offline, npm fetches axe-core (below), postgresql
# is the server the tests of `qkv serve --db postgresql://` start (tests/servers.py). Installed when we may (root,
# apt), with one apt-get update, so the isolated mode, the exam formats and the PostgreSQL gradebook are what runs.
# Each entry is PROBE:PACKAGE, the package present when any of the comma-separated probes (a path, a glob, a command)
# is: Debian keeps initdb off PATH, in /usr/lib/postgresql/VERSION/bin.
SYSTEM_PACKAGES := bwrap:bubblewrap chromium:chromium pdftoppm:poppler-utils /usr/share/javascript/katex/katex.min.js:libjs-katex npm:npm \
  initdb,/usr/lib/postgresql/*/bin/initdb:postgresql
# axe-core checks the feedback page's accessibility in the tests (tests/report/test_feedback_browser.py), in the
# repository's own .cache/ (ignored by git), pinned
AXE := .cache/npm/node_modules/axe-core/axe.min.js
AXE_VERSION := 4.14.1
# configurable-http-proxy is JupyterHub's proxy, for the tests that run `qkv serve` in a real hub (tests/serve/test_hub.py).
# One npm install for both: npm --no-save drops what an earlier --no-save install put there.
CHP := .cache/npm/node_modules/configurable-http-proxy/bin/configurable-http-proxy
CHP_VERSION := 4.6.3
# The sandbox and grading tests run a second time as this unprivileged user (tests/test_as_user.py).
TEST_USER := qkv-tester
system-deps:
	@if [ "$$(id -u)" = 0 ] && ! id -u $(TEST_USER) >/dev/null 2>&1; then \
	  useradd --create-home --shell /usr/sbin/nologin $(TEST_USER) 2>/dev/null || echo "warning: could not create the user $(TEST_USER); the unprivileged test run needs it"; fi
	@missing=""; for entry in $(SYSTEM_PACKAGES); do package=$${entry#*:}; found=""; \
	  for probe in $$(printf '%s' "$${entry%%:*}" | tr , ' '); do \
	    if [ -e "$$probe" ] || command -v "$$probe" >/dev/null 2>&1; then found=1; fi; done; \
	  [ -n "$$found" ] || missing="$$missing $$package"; done; \
	[ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) || echo "warning: could not install$$missing; grading falls back to rlimits only without bubblewrap, exam html/pdf need libjs-katex and chromium, the service's tests need postgresql"; \
	  else echo "warning: missing$$missing (install them: bubblewrap isolates grading, chromium prints exam PDFs, libjs-katex renders exam pages, postgresql serves the service's tests)"; fi; }

$(STAMP): pyproject.toml requirements.lock
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (set PYTHON=...)"; exit 1; }
	@# Debian's own Python makes no venv without its -venv package (ensurepip)
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(notdir $(PYTHON))-venv >/dev/null; fi; \
	  $(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
	    echo "error: $(PYTHON) cannot make a virtual environment (no ensurepip: apt-get install $(notdir $(PYTHON))-venv)"; exit 1; }; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c requirements.lock -e '.[all,test]'
	@# rfc3987-syntax comes only with nbgrader (jupyter-events asks for jsonschema[format-nongpl]); where it is
	@# installed, importing jsonschema (under nbformat) compiles its grammars, seconds of CPU in every process that writes a
	@# notebook (qkv build, the tests' builds) and in every nbgrader process of the tests. It checks only the "iri"
	@# formats, which no schema of nbformat, nbgrader or jupyter-events uses (docs/dependencies.md)
	$(BIN)/pip uninstall -y -q rfc3987-syntax
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

$(AXE) $(CHP) &:
	@command -v npm >/dev/null 2>&1 || { echo "error: npm not found (apt-get install npm): the tests need axe-core and configurable-http-proxy from it"; exit 1; }
	npm install --prefix .cache/npm --no-audit --no-fund --no-save --silent axe-core@$(AXE_VERSION) \
	  configurable-http-proxy@$(CHP_VERSION)

setup: system-deps $(STAMP) $(AXE) $(CHP)

demo: setup
	$(BIN)/qkv validate
	$(BIN)/qkv build attention-numpy
	@# the demo grades afresh each time: a gradebook an older qkv wrote is refused, never migrated in place
	rm -rf grades/demo grades/demo-canvas
	$(BIN)/qkv grade attention-numpy examples/submissions/attention-numpy --out grades/demo --timeout 3
	@# the same class as Canvas's "Download Submissions" zip, with a roster: the intake report, late penalties
	$(BIN)/qkv grade attention-numpy examples/canvas/attention-numpy-submissions.zip --roster examples/canvas/roster.csv \
	  --out grades/demo-canvas --timeout 3
	$(BIN)/qkv stats attention-numpy --grades grades/demo-canvas
	$(BIN)/qkv export-grades attention-numpy --format canvas --grades grades/demo-canvas
	@# the service on the same class: sign-in links for the roster and for you (a few seconds: each token is kept as
	@# a slow hash), and the line that starts it; the demo keeps no server running
	rm -rf grades/demo-serve
	$(BIN)/qkv tokens attention-numpy --roster examples/canvas/roster.csv --db grades/demo-serve --instructor you \
	  --out grades/demo-serve/tokens.csv
	@echo ""
	@echo "To hand in and see scores at once, start the service on this class (Ctrl-C stops it; docs/serve.md):"
	@echo "  $(BIN)/qkv serve attention-numpy --roster examples/canvas/roster.csv --db grades/demo-serve"
	@echo "then open a link of grades/demo-serve/tokens.csv in a browser: a student's (column link) to hand in"
	@echo "examples/submissions/attention-numpy/ada.py, yours (the row 'you') to see the class."

# The tests run on every core and one worker more (pytest-xdist): a sixth of the time a worker waits on a server, a
# browser or a subprocess (two workers kept 2 cores 165% busy, three 184%). A module's tests run on one worker (--dist
# loadscope) so that its fixtures (a built release, a graded class, a sandbox batch) are made once, the modules in the
# order tests/conftest.py gives them (the slow ones first). `make check`, the quick loop, leaves out the tests marked
# slow; `make test` runs them all and names the slowest.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); echo $$((n + 1)))
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# TESTS: the folders or modules to run, all of tests/ by default (`make check TESTS=tests/serve`: one area)
TESTS ?=

check: setup
	$(BIN)/ruff check autograder qkv_runtime benchmarks
	$(BIN)/python -m mypy
	$(PYTEST) -m "not slow" $(TESTS)

test: setup
	$(PYTEST) --durations=15 $(TESTS)

clean:
	rm -rf $(VENV) dist .cache
