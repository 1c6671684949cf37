"""pytest plugin (entry point ``pytest11``): the ``provenance_regression`` fixture.

For a project's own test suite (torch-spyre's, a model zoo's)::

    def test_block_provenance(provenance_regression):
        model, inputs = make_block()
        provenance_regression.check(model, inputs, backend="spyre")

compiles the model with provenance tracking as ``spyre-provenance compile`` does
(``compile.job``: checked against eager, judged by the same verdict), normalizes the artifacts
(``golden.normalize``) and compares them with the golden beside the test file,
``<test dir>/<test module>/<test name>/`` (a golden case folder: ``manifest.json`` and one
``graph_*`` folder per compiled graph), the way pytest-regressions does it, through its
``file_regression`` fixture: the first run writes the golden and fails, ``--force-regen``
rewrites it, and a mismatch fails with the readable diff (``spyre-provenance diff``'s lines).
A golden made with another torch is a hint (a warning, and a line in a failure message),
never a failure by itself.

This repository's own golden tests (``tests/compile/test_golden.py``) go through
``check_provenance`` too, so ``pytest --force-regen`` and ``spyre-provenance golden update``
write the same bytes to the same files. Importing this module imports neither torch nor
pytest-regressions; the fixture asks for them when used.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spyre_provenance import golden
from spyre_provenance.backends import DEFAULT_BACKEND
from spyre_provenance.validate import schemas

# what the fixture needs beyond this package's own dependencies: torch and pytest-regressions
PYTEST_EXTRA = "pip install 'spyre-provenance[pytest]'"


class ProvenanceToolchainHint(UserWarning):
    """The golden was made with another toolchain (or recipe) than this run."""


class ProvenanceRegression:
    """What the ``provenance_regression`` fixture returns: call ``check(model, inputs)``.

    The golden lives beside the test file, ``<test dir>/<test module>/<test name>/`` (a
    golden case folder: ``manifest.json`` and one ``graph_*`` folder per compiled graph).
    The first run writes it and fails; ``pytest --force-regen`` rewrites it; a mismatch
    fails with the lines ``spyre-provenance diff`` prints; a golden made with another torch
    adds a ``ProvenanceToolchainHint`` warning (and a line in a failure), never a failure
    by itself.
    """

    def __init__(self, request: pytest.FixtureRequest, file_regression: Any, obtained_dir: Path) -> None:
        self.request = request
        self.file_regression = file_regression
        self.obtained_dir = obtained_dir
        self.roots = golden.Roots.default(request.config.rootpath)

    # -- the user-facing check -------------------------------------------------------------------

    def check(
        self,
        model: Any,
        example_inputs: Any,
        *,
        backend: str = DEFAULT_BACKEND,
        train: bool = False,
        basename: str | None = None,
    ) -> golden.Provenance:
        """Compile ``model(*example_inputs)`` with tracking on and compare its provenance with
        the golden ``<test dir>/<module>/<basename or test name>/``. Returns the normalized
        provenance. ``backend``: auto (torch-spyre when it imports, else reference),
        reference, inductor or spyre. ``train``: also compile the backward graph."""
        __tracebackhide__ = True
        inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        graphs, backend_name = _compile(model, inputs, backend, train)
        manifest = golden.make_manifest(
            {"model": _model_name(model), "backend": backend_name, "dtype": _dtype(model, inputs), "train": train},
            how={"update": f"pytest {self.request.node.nodeid} --force-regen"},
        )
        provenance = golden.Provenance(self.request.node.nodeid, graphs, manifest).normalized(self.roots)
        self.check_provenance(provenance, self.golden_dir(basename))
        return provenance

    def golden_dir(self, basename: str | None = None) -> Path:
        """Where pytest-regressions keeps a test's data: beside the test file, in a folder
        named after the module, then the test (``[\\W]`` replaced by ``_``, as it does)."""
        test_file = Path(self.request.node.path)
        name = basename or re.sub(r"[\W]", "_", self.request.node.name)
        return test_file.parent / test_file.stem / name

    # -- the comparison, for any normalized provenance -------------------------------------------

    def check_provenance(self, provenance: golden.Provenance, case_dir: Path) -> None:
        """Regression-check a normalized provenance against a golden case folder through
        pytest-regressions' ``file_regression`` (one call per file, ``fullpath`` into the
        case folder). Fails once, with the whole case's diff."""
        __tracebackhide__ = True
        options = self.request.config
        force = bool(options.getoption("force_regen", default=False) or options.getoption("regen_all", default=False))
        files = provenance.files()
        expected = golden.read_case(case_dir)
        comparison = (
            golden.differences(expected, provenance, self.roots, labels=(_rel(case_dir, self.request), "this run"))
            if expected is not None
            else None
        )
        mismatched: list[str] = []
        written: list[str] = []
        for rel, data in files.items():
            if expected is not None and not force and not (case_dir / rel).is_file():
                mismatched.append(rel)  # new in this run: never added to an existing golden unasked
                continue
            obtained = self.obtained_dir / rel
            obtained.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.file_regression.check(
                    data,
                    binary=True,
                    fullpath=case_dir / rel,
                    obtained_filename=obtained,
                    check_fn=_check_fn(rel, force, self.roots),
                )
            except AssertionError:
                mismatched.append(rel)
            except pytest.fail.Exception:  # pytest-regressions wrote the file (new or regenerated)
                written.append(rel)
        stale = golden.stale_files(case_dir, files)
        if stale and force:
            for rel in stale:
                (case_dir / rel).unlink()
            written += [f"{rel} (removed)" for rel in stale]
            stale = []
        hints = comparison.hints if comparison is not None else []
        if mismatched or stale:
            lines = (
                golden.render(comparison, _rel(case_dir, self.request), "this run").splitlines() if comparison else []
            )
            if comparison is not None and comparison.equal:  # equal provenance, other files
                lines = [f"golden files differ from this run: {', '.join(mismatched + stale)}"] + lines[1:]
            lines += [f"golden file no longer produced: {rel}" for rel in stale]
            lines.append("(run pytest with --force-regen to accept this run as the golden)")
            pytest.fail("\n".join(lines), pytrace=False)
        if written:
            what = "created" if expected is None else "regenerated"
            pytest.fail(
                f"provenance golden {what} in {_rel(case_dir, self.request)}: {', '.join(written)}"
                + "".join(f"\nhint: {h}" for h in hints),
                pytrace=False,
            )
        for hint in hints:
            warnings.warn(ProvenanceToolchainHint(hint), stacklevel=2)


def _check_fn(rel: str, force: bool, roots: golden.Roots) -> Callable[[Path, Path], None]:
    """The comparison pytest-regressions runs on (obtained, expected) for one file.

    Under ``--force-regen`` any byte difference counts (so the regenerated file is exactly
    what ``golden update`` writes); otherwise artifacts compare structurally after
    normalization, and the manifest never fails (a torch mismatch is only a hint).
    """

    def check(obtained: Path, expected: Path) -> None:
        __tracebackhide__ = True
        if force:
            if obtained.read_bytes() != expected.read_bytes():
                raise AssertionError(f"{rel} differs")
            return
        if rel == golden.MANIFEST:
            return
        # the bundle-handle file is no artifact, but normalizes like one (golden.normalize)
        artifact = golden.BUNDLE_HANDLES if rel == golden.BUNDLE_HANDLES_FILE else schemas.artifact_for_filename(rel)
        try:
            old = golden.normalize(artifact, json.loads(expected.read_bytes()), roots)
        except ValueError:
            raise AssertionError(f"{rel}: the golden file is not valid JSON") from None
        new = golden.normalize(artifact, json.loads(obtained.read_bytes()), roots)
        if golden.dumps(old) != golden.dumps(new):
            raise AssertionError(f"{rel} differs")

    return check


def _rel(path: Path, request: pytest.FixtureRequest) -> str:
    try:
        return str(path.relative_to(request.config.rootpath))
    except ValueError:
        return str(path)


# --- compiling in this process ----------------------------------------------------------------


def _compile(model: Any, inputs: tuple[Any, ...], backend: str, train: bool) -> tuple[dict[str, dict[str, Any]], str]:
    """One tracked compile, the ``compile`` command's (``compile_job``) with nothing written
    and the same verdict; graph folder name -> {artifact: document}, and the backend used."""
    __tracebackhide__ = True
    from spyre_provenance.base.errors import UnusableInput
    from spyre_provenance.capture import emit
    from spyre_provenance.compile import job as compile_job

    request = compile_job.CompileRequest(
        model=_model_name(model), instance=(model, inputs), backend=backend, train=train
    )
    try:
        with _quiet_trace_log():
            outcome = compile_job.compile_request(request)
    except UnusableInput as exc:
        pytest.fail(f"provenance_regression: {exc.what}", pytrace=False)
    assert isinstance(outcome, compile_job.CompileOutcome)  # one process: no ranks asked for
    if not outcome.verdict.ok:
        pytest.fail("provenance_regression: " + "; ".join(outcome.verdict.reasons), pytrace=False)
    found: list[tuple[str, dict[str, Any]]] = []
    for result in outcome.report.graphs:
        files = emit.artifact_files(result)
        artifacts = {a: json.loads(files[name]) for a, name in golden.ARTIFACT_FILES.items() if name in files}
        found.append((emit.graph_folder_name(result), artifacts))
    names = golden.graph_names([name for name, _ in found])
    return {name: arts for name, (_, arts) in zip(names, found, strict=True)}, outcome.report.backend


@contextlib.contextmanager
def _quiet_trace_log() -> Iterator[None]:
    """Keep torch's structured-trace records (hundreds of machine-readable DEBUG lines per
    compile) out of pytest's captured log, so a failure shows the diff, not the trace.
    Only handlers pytest attached are detached; torch's own (TORCH_TRACE) stay."""
    from spyre_provenance.capture import trace_log

    with trace_log.handlers_aside(lambda handler: type(handler).__module__.startswith("_pytest")):
        yield


def _model_name(model: Any) -> str:
    cls = type(model)
    return f"{cls.__module__}.{cls.__qualname__}"


def _dtype(model: Any, inputs: tuple[Any, ...]) -> str:
    import torch

    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point()]
    tensors += [p for p in getattr(model, "parameters", list)() if p.is_floating_point()]
    return str(tensors[0].dtype).removeprefix("torch.") if tensors else "none"


# --- the fixture ------------------------------------------------------------------------------------


@pytest.fixture
def provenance_regression(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> ProvenanceRegression:
    """Compare a compile's provenance with a golden beside the test (``--force-regen``
    rewrites it). Needs torch and pytest-regressions: ``pip install 'spyre-provenance[pytest]'``;
    without them the test fails with one line naming that install. Example::

        def test_block_provenance(provenance_regression):
            model, inputs = make_block()
            provenance_regression.check(model, inputs, backend="reference", train=True)
    """
    if importlib.util.find_spec("torch") is None:  # found without importing it
        pytest.fail(f"provenance_regression compiles with torch, which is not installed: {PYTEST_EXTRA}", pytrace=False)
    try:
        file_regression = request.getfixturevalue("file_regression")
    except pytest.FixtureLookupError:
        pytest.fail(f"provenance_regression needs pytest-regressions: {PYTEST_EXTRA}", pytrace=False)
    return ProvenanceRegression(request, file_regression, tmp_path_factory.mktemp("provenance-obtained"))
