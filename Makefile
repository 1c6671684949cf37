# Two commands from a fresh clone: `make demo` and `make test`.
# Each creates .venv when missing. torch==2.13.0 is installed first because that exact
# version is the CPU build on local disk; an unpinned torch pulls a multi-GB GPU build.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= out/demo

.PHONY: venv demo test test-models test-torch-next bench golden clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,tlparse]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/spyre-provenance compile mlp --out $(OUT)

# One test file per worker (--dist loadfile): a file's session-scoped compiles stay in one
# process. PYTEST_WORKERS=0 runs the suite in this process alone.
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

# `make test` leaves out the real-architecture zoo (marker `models`: 32 compiles of
# transformers models, ~9 minutes on two workers here); `make test-models` runs it, and
# .ci/run runs both.
test: $(STAMP)
	$(PY) -m pytest $(XDIST) -m "not models" $(PYTEST_ARGS)

# one compile per xdist group (tests/test_real_models.py), the groups spread over both workers
test-models: $(STAMP)
	$(PY) -m pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup) -m models $(PYTEST_ARGS)

# The next torch (issue 14): a second venv with torch $(TORCH_NEXT) (a CUDA build, ~5 GB,
# runs on the CPU) and the tests that compile. Goldens are made with 2.13.0, so the tests
# that compare golden bytes skip there with their reason; the rest must pass.
TORCH_NEXT ?= 2.14.1
VENV_NEXT  := .venv-torch-next
STAMP_NEXT := $(VENV_NEXT)/.installed

$(STAMP_NEXT): pyproject.toml
	test -x $(VENV_NEXT)/bin/python || $(PYTHON) -m venv $(VENV_NEXT)
	$(VENV_NEXT)/bin/python -m pip install -q --upgrade pip
	$(VENV_NEXT)/bin/python -m pip install -q torch==$(TORCH_NEXT)
	$(VENV_NEXT)/bin/python -m pip install -q -e '.[test,tlparse]' torch==$(TORCH_NEXT)
	touch $(STAMP_NEXT)

test-torch-next: $(STAMP_NEXT)
	$(VENV_NEXT)/bin/python -m pytest -m "compile and not models" $(XDIST) $(PYTEST_ARGS)

golden: $(STAMP)
	$(VENV)/bin/spyre-provenance golden update

bench: $(STAMP)
	$(PY) -m spyre_provenance.bench

clean:
	rm -rf $(VENV) $(VENV_NEXT) out build dist .pytest_cache
