# Two commands from a fresh clone: `make demo` and `make test`.
# Each creates .venv when missing. torch==2.13.0 is installed first because that exact
# version is the CPU build on local disk; an unpinned torch pulls a multi-GB GPU build.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= out/demo

.PHONY: venv demo test lint test-models test-programs test-spyre-main test-torch-next bench bench-spyre-main golden golden-spyre-main docs docs-outputs clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,tlparse]'
	# vLLM's real plugin loader and compile adaptor for the suite, beside torch 2.13.0 CPU
	# (the release pins it); --no-deps: its own dependencies pull a GPU torch and 4 GB
	$(PY) -m pip install -q --no-deps vllm==0.27.1
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/spyre-provenance compile mlp --out $(OUT)

# One test file per worker (--dist loadfile): a file's session-scoped compiles stay in one
# process. PYTEST_WORKERS=0 runs the suite in this process alone.
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

# `make test` leaves out the real-architecture zoo (marker `models`: 32 compiles of
# transformers models, ~5 minutes on two workers here), torch-spyre main's own compiler
# (marker `spyre_main`) and whole programs run as a user runs them (marker `programs`,
# tests/attach: fresh interpreters, torchrun jobs, a peer's test suite, ~4 minutes);
# `make test-models`, `make test-spyre-main` and `make test-programs` run them, and
# .ci/run runs all four.
test: $(STAMP)
	$(PY) -m pytest $(XDIST) -m "not models and not spyre_main and not programs" $(PYTEST_ARGS)

test-programs: $(STAMP)
	$(PY) -m pytest $(XDIST) -m programs $(PYTEST_ARGS)

# torch-spyre main's real Inductor backend on the stand-in for its native extension
# (tests/spyre_main; docs/torch-spyre-main.md): its source from ../shared/torch-spyre or
# $$SPYRE_PROVENANCE_TORCH_SPYRE (skipped, failing with CI=true, without either)
test-spyre-main: $(STAMP)
	$(PY) -m pytest $(XDIST) -m spyre_main $(PYTEST_ARGS)

# ruff (lint, then format: the check changes nothing) and mypy, as configured in pyproject.toml
lint: $(STAMP)
	$(PY) -m ruff check src tests bench
	$(PY) -m ruff format --check src tests bench
	$(PY) -m mypy

# one compile per xdist group (tests/models/test_real_models.py), the groups spread over both workers
test-models: $(STAMP)
	$(PY) -m pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup) -m models $(PYTEST_ARGS)

# The next torches (issues 14, 28): one venv per release named in TORCH_NEXT
# (`.venv-torch-<version>`, each a CUDA build of ~5-6 GB that runs on the CPU), and the tests
# that compile, on each. Goldens are made with 2.13.0, so the tests that compare golden bytes
# skip there with their reason, or hold the known difference exactly; the rest must pass.
# `make test-torch-next TORCH_NEXT=2.15.0` runs one release.
TORCH_NEXT  ?= 2.14.1 2.15.0
NEXT_STAMPS := $(foreach v,$(TORCH_NEXT),.venv-torch-$(v)/.installed)

# the stamp of each release's venv; the stem is the version (`.venv-torch-2.15.0/.installed`)
.venv-torch-%/.installed: pyproject.toml
	test -x .venv-torch-$*/bin/python || $(PYTHON) -m venv .venv-torch-$*
	.venv-torch-$*/bin/python -m pip install -q --upgrade pip
	.venv-torch-$*/bin/python -m pip install -q torch==$*
	.venv-torch-$*/bin/python -m pip install -q -e '.[test,tlparse]' torch==$*
	touch $@

# every release runs even when an earlier one fails; the target fails if any did
test-torch-next: $(NEXT_STAMPS)
	@status=0; for v in $(TORCH_NEXT); do \
	    echo "== torch $$v: pytest -m 'compile and not models and not spyre_main'"; start=$$(date +%s); \
	    .venv-torch-$$v/bin/python -m pytest -m "compile and not models and not spyre_main" $(XDIST) $(PYTEST_ARGS) || status=1; \
	    echo "== torch $$v: tests took $$(( $$(date +%s) - start )) s"; \
	done; exit $$status

golden: $(STAMP)
	$(VENV)/bin/spyre-provenance golden update

# the golden cases made on torch-spyre main (spyre_main_<commit>_*), with torch-spyre booted
# on the stand-in in every process golden update starts (tests/spyre_main/run_booted.py)
golden-spyre-main: $(STAMP)
	$(PY) tests/spyre_main/run_booted.py golden update $$($(PY) -c "from spyre_provenance import golden; print(' '.join(n for n, c in golden.CASES.items() if c.needs_torch_spyre))")

bench: $(STAMP)
	$(PY) -m bench

# what tracking costs torch-spyre's own compile, whole process (bench/
# torch_spyre_overhead.py), with torch-spyre main booted on the tests' stand-in
bench-spyre-main: $(STAMP)
	$(PY) tests/spyre_main/run_booted.py -m bench.torch_spyre_overhead

# The documentation site (docs/, mkdocs.yml): the [docs] extra into .venv, then a strict
# build into site/ (a broken link, a missing page or a bad reference fails it). No torch is
# imported: the API pages are read from the source. .ci/run runs it.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

# NO_MKDOCS_2_WARNING: Material's banner about MkDocs 2 is not about this site
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# Rerun every command the docs show and rewrite docs/outputs/*.txt (a few compiles, about
# a minute); tests/compile/test_docs_outputs.py checks the committed ones still match a fresh run.
docs-outputs: $(STAMP)
	$(PY) docs/scripts/regen_outputs.py

clean:
	rm -rf $(VENV) .venv-torch-* out build dist site .pytest_cache
