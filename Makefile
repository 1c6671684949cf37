# Two commands from a fresh clone: `make demo` and `make test`.
# Each creates .venv when missing. torch==2.13.0 is installed first because that exact
# version is the CPU build on local disk; an unpinned torch pulls a multi-GB GPU build.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= out/demo

.PHONY: venv demo test bench golden clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,tlparse]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/spyre-provenance compile mlp --out $(OUT)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

golden: $(STAMP)
	$(VENV)/bin/spyre-provenance golden update

bench: $(STAMP)
	$(PY) -m spyre_provenance.bench

clean:
	rm -rf $(VENV) out build dist .pytest_cache
