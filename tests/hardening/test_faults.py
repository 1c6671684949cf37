"""A failure inside the hook never breaks a compile: one warning, a partial graph, no lie.

Each of the hook's seven stages (``FAULT_STAGES``) fails in turn, on stock Inductor and on
the reference backend. Faults come in through the seams the hook reads by, never by
patching names inside the package: a faulty ``Inductor`` (``inductor_doubles.faulty``), a
backend whose OpSpecs cannot be read, a pre/post relation that is not an inverse (so the
built mapping fails validation), an ``--out`` that cannot be created. For every stage:
the compile completes and matches eager, exactly one warning names the stage, the mapping
the TORCH_TRACE log gets (ours, or Inductor's own when ours was left out) holds only pairs
the clean compile's mapping holds, and the loss is reported in the graph's
``spyre_provenance_diagnostics``, logged and written, valid against its schema. The last
test goes through ``spyre-provenance compile`` (summary, exit code, files).

In-process compiles of a two-kernel model (a second or two each).
"""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest
import torch

import spyre_provenance
from helpers.inductor_doubles import Injected, RecordingInductor, faulty
from spyre_provenance.backends.base import Backend, StockInductor
from spyre_provenance.backends.reference.backend import ReferenceBackend
from spyre_provenance.base.errors import ProvenanceWarning
from spyre_provenance.capture import hook
from spyre_provenance.capture.inductor import Inductor
from spyre_provenance.capture.tracking import start, until_disabled
from spyre_provenance.links import mapping
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import DIAGNOSTICS, FAULT_STAGES, MAP_FIELDS, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES
from spyre_provenance.validate import paths as path_validation
from spyre_provenance.validate import schemas
from zoo.user_models import SOURCE, Tiny, tiny

pytestmark = pytest.mark.compile

INPUTS = tiny()[1]

BACKENDS = {"inductor": StockInductor, "reference": ReferenceBackend}


def unreadable_opspecs(base: type[Backend]) -> Backend:
    """``base`` whose OpSpecs cannot be read (the torch-spyre compiler state is gone, say)."""

    def opspecs_for(self: Backend, kernel_name: str, node_schedule: Any) -> Any:
        raise Injected("injected fault")

    return type(f"Unreadable{base.__name__}", (base,), {"opspecs_for": opspecs_for})()


class NotAnInverse(RecordingInductor):
    """Inductor hands over a pre/post relation whose two directions disagree."""

    def pre_post_relation(self, graph: Any, pre_grad_graph_id: int | None) -> tuple[dict, dict]:
        return {"x": ["relu"]}, {}


#: stage -> how to make it fail: (Inductor, backend factory, out_dir blocked), and the
#: error the fault is reported with
FAULTS: dict[str, tuple[Any, Any, bool, str]] = {
    "record collection": (lambda: faulty("origin_names"), None, False, "Injected: injected fault"),
    "get_kernel_metadata": (lambda: faulty("kernel_metadata"), None, False, "Injected: injected fault"),
    "OpSpec handle reading": (RecordingInductor, unreadable_opspecs, False, "Injected: injected fault"),
    "build": (lambda: faulty("post_grad_graph"), None, False, "Injected: injected fault"),
    "validate": (NotAnInverse, None, False, "ValueError: built artifact is invalid: "),
    "emit": (lambda: faulty("log_artifact"), None, False, "Injected: injected fault"),
    "file write": (RecordingInductor, None, True, "NotADirectoryError: "),
}
assert tuple(FAULTS) == FAULT_STAGES


class Run:
    """One tracked compile: its graph, our warnings, what was logged."""

    def __init__(self, session: hook.Session, caught: list[warnings.WarningMessage], inductor: RecordingInductor):
        self.results = session.results
        self.warned = [str(w.message) for w in caught if issubclass(w.category, ProvenanceWarning)]
        self.inductor = inductor

    @property
    def graph(self) -> Any:
        (graph,) = self.results
        return graph

    def logged_mapping(self) -> dict[str, Any]:
        """What compile_fx logs as the graph's node mapping: ours, or upstream's instead."""
        if self.graph.diagnostics.mapping == "hook":
            return msgspec.to_builtins(self.graph.node_mappings)
        return self.graph.upstream_node_mappings or {}


def compile_tiny(backend: Backend, inductor: RecordingInductor, out_dir: Path | None = None) -> Run:
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layout = Layout(out_dir, None) if out_dir is not None else None
        with until_disabled(start(backend, layout=layout, inductor=inductor)) as session:  # the seam is internal
            got = torch.compile(Tiny())(*INPUTS)
    torch._dynamo.reset()
    torch.testing.assert_close(got, Tiny()(*INPUTS))  # the compile completed, and is right
    return Run(session, caught, inductor)


def pairs(doc: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (field, key, value)
        for field in MAP_FIELDS
        for key, values in (doc.get(field) or {}).items()
        for value in values
    }


@pytest.fixture(scope="module", params=list(BACKENDS))
def clean(request: pytest.FixtureRequest) -> tuple[str, Run]:
    run = compile_tiny(BACKENDS[request.param](), RecordingInductor())
    assert run.warned == [] and not run.graph.diagnostics.partial and run.graph.diagnostics.complete
    return request.param, run


def test_a_clean_compile_logs_complete_diagnostics(clean: tuple[str, Run]) -> None:
    backend, run = clean
    (doc,) = run.inductor.logged_docs(DIAGNOSTICS)
    assert doc == mapping.diagnostics_document(run.graph)
    assert doc["partial"] is False and doc["complete"] is True and doc["faults"] == [] and doc["mapping"] == "hook"
    assert doc["kernels"] == len(run.graph.records) == len(run.graph.node_mappings.cppCodeToPost) > 0
    assert schemas.validate(doc, DIAGNOSTICS).ok
    # OpSpecs exactly where the backend has them, every one with its handle
    assert (doc["opspecs"] > 0) == (backend == "reference") and doc["handleless_opspecs"] == 0


@pytest.mark.parametrize("stage", FAULT_STAGES)
def test_each_stage_fails_alone_and_is_reported(stage: str, clean: tuple[str, Run], tmp_path: Path) -> None:
    backend_name, clean_run = clean
    make_inductor, make_backend, blocked, error = FAULTS[stage]
    base = BACKENDS[backend_name]
    out = tmp_path / "out"
    if blocked:  # a regular file where the graph folders' parent should be
        (tmp_path / "blocker").write_text("")
        out = tmp_path / "blocker" / "out"
    run = compile_tiny(make_backend(base) if make_backend else base(), make_inductor(), out)

    # one warning, naming the stage and the error
    assert len(run.warned) == 1, run.warned
    assert run.warned[0].startswith(f"spyre-provenance: {stage}: {error}"), run.warned

    # the graph says it is partial, and why
    diag = run.graph.diagnostics
    assert diag.partial and not diag.complete
    assert {f.stage for f in diag.fault_records} == {stage}  # once per call site it hit

    # never a wrong mapping: what the log holds is a part of the clean compile's mapping
    assert pairs(run.logged_mapping()) <= pairs(clean_run.logged_mapping())
    if stage in ("build", "validate"):
        assert run.graph.node_mappings is None and diag.mapping == "upstream"
    else:  # every call site it lists, it lists as the clean compile does
        clean_kernels = clean_run.graph.node_mappings.cppCodeToPost
        assert all(clean_kernels[key] == nodes for key, nodes in run.graph.node_mappings.cppCodeToPost.items())

    # the loss is reported: logged (unless logging is the fault) and written (unless writing is)
    document = mapping.diagnostics_document(run.graph)
    assert schemas.validate(document, DIAGNOSTICS).ok
    logged = run.inductor.logged_docs(DIAGNOSTICS)
    if stage == "emit":
        assert logged == []
    else:
        (doc,) = logged
        assert doc["partial"] is True and doc["faults"][0]["stage"] == stage and doc["mapping"] == diag.mapping
    files = sorted(out.glob(f"graph_*/{DIAGNOSTICS}.json")) if not blocked else []
    if blocked:
        assert not any(tmp_path.rglob("*.json"))
    else:
        (file,) = files
        written = json.loads(file.read_bytes())
        assert written == document
        report = path_validation.validate_paths([file.parent])
        assert report and all(r.ok for r in report), report
        # the mapping file is there exactly when the log holds ours
        assert (file.parent / f"{NODE_MAPPINGS}.json").exists() == (diag.mapping == "hook")


def test_an_unreadable_compile_id_is_a_fault_of_a_counted_graph(clean: tuple[str, Run]) -> None:
    backend_name, clean_run = clean
    run = compile_tiny(BACKENDS[backend_name](), faulty("compile_id"))
    assert len(run.warned) == 1 and run.warned[0].startswith("spyre-provenance: build: Injected"), run.warned
    graph = run.graph
    assert graph.compile_id == "unknown" and graph.diagnostics.partial
    assert [f.stage for f in graph.diagnostics.fault_records] == ["build"]
    assert graph.diagnostics.mapping == "hook"  # the mapping does not depend on the id
    assert graph.node_mappings == clean_run.graph.node_mappings


def test_a_bug_outside_the_stages_never_breaks_the_compile() -> None:
    """Reading ``V.graph`` is the one read outside every stage: when it fails, the call
    sites and the graph end are caught by the seams' own guards, and upstream's mapping
    is logged (no graph can be told, so the session has no result for it)."""
    run = compile_tiny(StockInductor(), faulty("graph"))
    stages = sorted({message.split(":")[1].strip() for message in run.warned})
    assert stages == ["build", "record collection"], run.warned
    assert run.results == []
    assert run.inductor.logged_docs(DIAGNOSTICS) == []


def test_a_buffer_whose_handle_cannot_be_built_is_counted_not_dropped(tmp_path: Path) -> None:
    """The reference backend's handle builder fails on one buffer: that buffer still has its
    OpSpec (without a handle), the loss is one warning, one fault, one handleless OpSpec."""

    class FailsOnce(ReferenceBackend):
        calls = 0

        def debug_handle(self, buffer: Any) -> Any:
            FailsOnce.calls += 1
            if FailsOnce.calls == 1:
                raise Injected("injected fault")
            return super().debug_handle(buffer)

    clean_run = compile_tiny(ReferenceBackend(), RecordingInductor())
    run = compile_tiny(FailsOnce(), RecordingInductor(), tmp_path)

    (warned,) = run.warned
    assert "spyre-provenance: OpSpec handle reading: " in warned
    assert "building its debug handle failed: Injected: injected fault" in warned
    diag = run.graph.diagnostics
    assert diag.partial and not diag.complete and [f.stage for f in diag.fault_records] == ["OpSpec handle reading"]
    assert diag.opspecs == clean_run.graph.diagnostics.opspecs  # no buffer dropped
    assert diag.handleless_opspecs == 1
    (doc,) = run.inductor.logged_docs(DIAGNOSTICS)
    assert doc["handleless_opspecs"] == 1 and doc["partial"] and not doc["complete"]
    (handles,) = run.inductor.logged_docs(OPSPEC_DEBUG_HANDLES)
    specs = [s for specs in handles["kernels"].values() for s in specs]
    assert [s["debug_handle"] for s in specs].count(None) == 1


def test_faulty_inductor_refuses_a_method_it_does_not_have() -> None:
    # a misspelt method would inject nothing and every test above would still pass
    with pytest.raises(AttributeError, match="no method 'post_grad_grpah'"):
        faulty("post_grad_grpah")
    assert all(callable(getattr(Inductor, name)) for name in ("origin_names", "kernel_metadata", "post_grad_graph"))


def test_uninstall_restores_inductor() -> None:
    import torch._inductor.codegen.cpp as cpp
    import torch._inductor.debug as debug

    before = (
        debug.set_kernel_post_grad_provenance_tracing,
        cpp.set_kernel_post_grad_provenance_tracing,
        debug.dump_inductor_provenance_info,
    )
    with spyre_provenance.tracking():
        assert debug.set_kernel_post_grad_provenance_tracing is not before[0]
    after = (
        debug.set_kernel_post_grad_provenance_tracing,
        cpp.set_kernel_post_grad_provenance_tracing,
        debug.dump_inductor_provenance_info,
    )
    assert after == before
    with pytest.raises(RuntimeError, match="already enabled"), spyre_provenance.tracking():
        spyre_provenance.enable()


# --- through the command line ------------------------------------------------------------------

# spyre-provenance compile in a fresh process whose Inductor readers fail at the build stage
DRIVER = """
import sys
from spyre_provenance import cli
from spyre_provenance.capture.inductor import Inductor


def boom(*args, **kwargs):
    raise RuntimeError("injected fault")


Inductor.post_grad_graph = boom
sys.exit(cli.main(sys.argv[1:]))
"""


def test_compile_command_reports_the_loss(tmp_path: Path, fresh_process) -> None:
    (tmp_path / "tiny.py").write_text(SOURCE)
    out = tmp_path / "out"
    done = fresh_process.run(
        "compile",
        f"{tmp_path / 'tiny.py'}:tiny",
        "--backend",
        "reference",
        "--out",
        out,
        "--no-tlparse",
        driver=textwrap.dedent(DRIVER),
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]  # partial: found wanting
    assert "Traceback" not in done.stderr
    assert "output vs eager: match" in done.stdout
    assert "PARTIAL: build: RuntimeError: injected fault" in done.stdout
    assert "mapping left out" in done.stdout and "all valid" in done.stdout
    # the verdict's reasons close the summary: the exit status never comes without them
    closing = done.stdout[done.stdout.index("  FOUND WANTING (exit 1): ") :].splitlines()
    assert closing[0] == f"  FOUND WANTING (exit 1): {len(closing) - 1} reason(s)", done.stdout
    assert "    graph 0/0 inference: build: RuntimeError: injected fault" in closing[1:], done.stdout
    assert done.stderr.count("spyre-provenance: build: RuntimeError: injected fault") == 1

    (folder,) = out.glob("graph_tiny-tiny_*")
    assert sorted(p.name for p in folder.iterdir()) == [f"{DIAGNOSTICS}.json"]  # mapping left out
    written = json.loads((folder / f"{DIAGNOSTICS}.json").read_bytes())
    assert written["partial"] and written["mapping"] == "upstream"
    assert written["faults"] == [{"stage": "build", "error": "RuntimeError: injected fault"}]

    from spyre_provenance.logs import tracelog

    log = out / "trace" / "tiny-tiny.log"
    logged = {
        name: json.loads(payload)
        for _, name, payload in tracelog.artifact_payloads(log)
        if name in (DIAGNOSTICS, NODE_MAPPINGS)
    }
    assert logged[DIAGNOSTICS] == written
    # upstream's own mapping is logged instead, and it is valid
    assert schemas.validate(logged[NODE_MAPPINGS], NODE_MAPPINGS).ok
    validated = fresh_process.run("validate", out)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert f"OK      v6    {DIAGNOSTICS}" in validated.stdout
