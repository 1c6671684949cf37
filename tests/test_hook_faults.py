"""A failure inside the hook never breaks a compile: one warning, a partial graph, no lie.

Each of the seven stages (``hook.STAGES``) raises in turn on stock Inductor; the loss is in
the graph's ``spyre_provenance_diagnostics``. tests/test_fault_injection.py does the same
on the reference backend and through ``spyre-provenance compile``.
"""

from __future__ import annotations

import json
import warnings

import msgspec
import pytest
import torch

import spyre_provenance
from spyre_provenance import emit, hook, mapping
from spyre_provenance.backends.base import StockInductor
from spyre_provenance.model.names import DIAGNOSTICS
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile


class Tiny(torch.nn.Module):
    """Two kernels (an extern mm and a fused pointwise) compile in a few seconds."""

    def forward(self, x, w):
        return torch.relu(x @ w) * 2


INPUTS = (torch.randn(8, 16), torch.randn(16, 4))

#: the same model as a user's file (``PATH.py:make``), for tests that compile through the CLI
TINY_SOURCE = '''
import torch


class Tiny(torch.nn.Module):
    def forward(self, x, w):
        return torch.relu(x @ w) * 2


def make():
    torch.manual_seed(0)
    return Tiny(), (torch.randn(8, 16), torch.randn(16, 4))
'''


class Boom(RuntimeError):
    pass


def boom(*args, **kwargs):
    raise Boom("injected")


class FaultyOpSpecs(StockInductor):
    def opspecs_for(self, kernel_name, node_schedule):
        raise Boom("injected")


def compile_tiny(backend="inductor", out_dir=None):
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with spyre_provenance.tracking(backend, out_dir=out_dir) as session:
            got = torch.compile(Tiny())(*INPUTS)
    torch.testing.assert_close(got, Tiny()(*INPUTS))
    ours = [w for w in caught if issubclass(w.category, hook.ProvenanceWarning)]
    return session, ours


@pytest.fixture(scope="module")
def clean():
    session, ours = compile_tiny()
    assert not ours
    return session.results[0]


def test_clean_compile_has_no_faults(clean):
    assert clean.diagnostics.faults == [] and not clean.diagnostics.partial
    assert len(clean.node_mappings.cppCodeToPost) == 2


FAULTS = {
    # stage: (object, attribute) to make raise; OpSpec handle reading: FaultyOpSpecs
    "record collection": (hook, "_origin_names"),
    "get_kernel_metadata": (hook, "_kernel_metadata"),
    "OpSpec handle reading": None,
    "build": (mapping, "build_node_mappings"),
    "validate": (schemas, "check_built_artifacts"),
    "emit": (emit, "replace_kernel_stack_traces"),
    "file write": (emit, "atomic_write_bytes"),
}
assert tuple(FAULTS) == hook.STAGES


def _pairs(doc):
    return {(f, k, v) for f in ("preToPost", "postToPre", "cppCodeToPost", "postToCppCode")
            for k, vs in (doc.get(f) or {}).items() for v in vs}


@pytest.mark.parametrize("stage", hook.STAGES)
def test_fault_in_stage_is_one_warning_and_never_a_wrong_mapping(stage, monkeypatch, clean, tmp_path):
    logged = []
    real_log = emit.log_artifact
    monkeypatch.setattr(emit, "log_artifact", lambda name, doc: (real_log(name, doc), logged.append((name, doc))))
    if FAULTS[stage] is not None:
        monkeypatch.setattr(*FAULTS[stage], boom)
    session, ours = compile_tiny(FaultyOpSpecs() if FAULTS[stage] is None else "inductor", out_dir=tmp_path)
    assert len(ours) == 1 and f"spyre-provenance: {stage}: Boom: injected" in str(ours[0].message)
    graph = session.results[0]
    assert graph.diagnostics.partial and graph.diagnostics.faults[0].startswith(stage)
    # what the log holds (ours, or upstream's when ours was left out) is part of the clean mapping
    held = (msgspec.to_builtins(graph.node_mappings) if graph.diagnostics.mapping == "hook"
            else graph.upstream_node_mappings or {})
    assert _pairs(held) <= _pairs(msgspec.to_builtins(clean.node_mappings))
    if graph.node_mappings is not None:
        for key, nodes in graph.node_mappings.cppCodeToPost.items():
            assert clean.node_mappings.cppCodeToPost[key] == nodes
    # the loss is reported in the diagnostics artifact, logged and (unless writing fails) written
    (doc,) = [d for n, d in logged if n == DIAGNOSTICS]
    assert doc["partial"] and doc["faults"][0]["stage"] == stage and schemas.validate(doc, DIAGNOSTICS).ok
    files = list(tmp_path.glob(f"graph_*/{DIAGNOSTICS}.json"))
    if stage == "file write":
        assert files == []
    else:
        assert [json.loads(f.read_bytes()) for f in files] == [doc]


def test_fault_in_opspec_reading(clean):
    session, ours = compile_tiny(FaultyOpSpecs())
    assert len(ours) == 1 and "OpSpec handle reading" in str(ours[0].message)
    assert session.results[0].node_mappings.cppCodeToPost == clean.node_mappings.cppCodeToPost


def test_a_bug_outside_the_stages_is_a_fault_not_a_broken_compile(monkeypatch, clean):
    monkeypatch.setattr(emit, "current_compile_id", boom)  # read before any stage runs
    session, ours = compile_tiny()
    assert len(ours) == 1 and "build" in str(ours[0].message)
    assert session.results == [] or session.results[0].diagnostics.mapping == "upstream"


def test_invalid_build_is_left_out(monkeypatch):
    from spyre_provenance.validate import schemas

    monkeypatch.setattr(schemas, "check_built_artifacts", lambda *a: ["$.postToPre: not the inverse"])
    session, ours = compile_tiny()
    assert len(ours) == 1 and "validate" in str(ours[0].message)
    assert session.results[0].node_mappings is None  # upstream's own mapping is logged instead


def test_uninstall_restores_inductor():
    import torch._inductor.codegen.cpp as cpp
    import torch._inductor.debug as debug

    before = (debug.set_kernel_post_grad_provenance_tracing, cpp.set_kernel_post_grad_provenance_tracing,
              debug.dump_inductor_provenance_info)
    with spyre_provenance.tracking():
        assert debug.set_kernel_post_grad_provenance_tracing is not before[0]
    after = (debug.set_kernel_post_grad_provenance_tracing, cpp.set_kernel_post_grad_provenance_tracing,
             debug.dump_inductor_provenance_info)
    assert after == before
    with pytest.raises(RuntimeError, match="already enabled"):
        with spyre_provenance.tracking():
            spyre_provenance.enable()
