# Every target creates the virtualenv it needs; a fresh clone needs only python3 (>= 3.11).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_ARGS ?=

# Python caches compiled modules in __pycache__ unless the environment says not to (PYTHONDONTWRITEBYTECODE,
# set on some sandboxes and CI images). The tests start hundreds of mkhub processes and pytest workers: without
# the cache each compiles the sources again, which took a third of `make test`'s CPU.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: venv system-deps browser test test-unit test-e2e test-wheel lint demo fuzz clean

$(VENV)/.installed: pyproject.toml setup.py $(wildcard proto/mkhub/v1/*.proto)
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "mkhub needs Python >= 3.11"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# kubectl is the referee of the Kubernetes-mode tests (tests/kubeapi, e2e). Where it is not on PATH and we are
# root on Debian, install Debian's kubernetes-client; otherwise say so. Under CI=true a test that needs a missing
# kubectl, or one older than v1.32 (bookworm's package is v1.20), fails instead of skipping (tests/kubectl_tool.py).
system-deps:
	@if command -v kubectl >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client; \
	else echo "kubectl is not on PATH: install it (Debian: apt-get install kubernetes-client), or its tests skip (fail when CI=true)" >&2; fi

# The dashboard's browser tests (e2e/test_ui_*.py) drive Debian's chromium through Playwright's Python package, with no
# browser download: installed here where missing and we are root on Debian; elsewhere those tests skip (say so).
browser:
	@if [ -x /usr/bin/chromium ] || [ -n "$$MKHUB_CHROMIUM" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "chromium is not installed: the dashboard's browser tests skip (Debian: apt-get install chromium)" >&2; fi

lint: venv
	$(PY) -m ruff check hub worker_agent tests e2e
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

# The end-to-end tests and the unit and component tests in one pytest-xdist run (TEST_WORKERS):
# the e2e tests mostly wait on processes and sockets, the unit tests fill that time with CPU work,
# and the e2e tests come first so that the long ones start at once instead of ending the run.
# Property tests run the `quick` hypothesis profile (tests/conftest.py); `make fuzz` the deep one.
# A line per test, and long tests say what they wait for (cli_harness.progress).
UNIT_WORKERS ?= 2
E2E_WORKERS ?= 4
TEST_WORKERS ?= 4
test: venv system-deps browser lint
	$(PY) -m pytest -v -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup e2e tests

test-unit: venv system-deps
	$(PY) -m pytest -q -p no:cacheprovider -n $(UNIT_WORKERS) tests

test-e2e: venv system-deps browser
	$(PY) -m pytest -v -p no:cacheprovider -n $(E2E_WORKERS) --dist loadgroup e2e

# Build the wheel, install it into a fresh virtualenv outside the checkout, run `mkhub demo --jobs 4` and the
# commands of the Deployments in manifests/ (what the Dockerfile's image runs) from there (minutes).
test-wheel: venv
	MKHUB_WHEEL_TEST=1 $(PY) -m pytest -v -p no:cacheprovider e2e/test_wheel.py

# A long run of the manifest fuzz property (make test runs a short, seeded one); prints the counts.
FUZZ_EXAMPLES ?= 20000
fuzz: venv
	$(PY) tests/properties/manifest_fuzz.py --examples $(FUZZ_EXAMPLES)
	MKHUB_HYPOTHESIS_PROFILE=deep $(PY) -m pytest -q -p no:cacheprovider -n $(UNIT_WORKERS) tests/properties tests/store/test_store_model.py

demo: venv
	$(VENV)/bin/mkhub demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
