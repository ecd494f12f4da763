# Every target creates the virtualenv it needs; a fresh clone needs only python3 (>= 3.11).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_ARGS ?=

.PHONY: venv test lint demo clean

$(VENV)/.installed: pyproject.toml setup.py $(wildcard proto/mkhub/v1/*.proto)
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "mkhub needs Python >= 3.11"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

lint: venv
	$(PY) -m ruff check hub worker_agent tests e2e
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

test: venv lint
	$(PY) -m pytest -q

demo: venv
	$(VENV)/bin/mkhub demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
