"""A handle that names another op or line than its node is a disagreement (issue 55 point 6).

torch-spyre main names a handle by the buffer's ``origin_node``; a batched linear's no-op
``expand`` re-points the multiply before it, so the multiply's handle says ``aten.linear``
and the linear's line. The node's own ``original_aten`` and stack trace are the evidence:
``mapping.cross_check`` counts the kernel among the disagreements and lists the OpSpec in
``misnamed_handles``, which the diagnostics document carries and the validator checks.
"""

from __future__ import annotations

import msgspec

from spyre_provenance.links import mapping
from spyre_provenance.links.misnamed import misnamed_handles
from spyre_provenance.model.names import DIAGNOSTICS
from spyre_provenance.model.post_grad_graph import GraphNode, NodeFacts, PostGradGraph
from spyre_provenance.model.records import (
    DebugHandle,
    GraphDiagnostics,
    GraphResult,
    KernelRecord,
    MisnamedHandle,
    OpSpecRecord,
    SourceLoc,
)
from spyre_provenance.validate import schemas

MODEL = "/home/u/fms/layernorm.py"
KEY = "sdsc_fused_linear_mul_0:1"


def _trace(line: int, code: str) -> str:
    return f'  File "{MODEL}", line {line}, in forward\n    {code}\n'


# the post-grad graph: the multiply (line 23), the linear's matmul (line 24) reading it
GRAPH = PostGradGraph(
    [
        GraphNode("arg0_1", "placeholder", line=False),
        GraphNode("mul_1", "call", "aten.mul", ("arg0_1",)),
        GraphNode("bmm", "call", "aten.bmm", ("mul_1",)),
    ],
    outputs=("bmm",),
    facts={
        "mul_1": NodeFacts(stack_trace=_trace(23, "x = self.weight * x"), original_aten="aten.mul.Tensor"),
        "bmm": NodeFacts(stack_trace=_trace(24, "return self.proj(x)"), original_aten="aten.linear.default"),
    },
)


def _handle(nodes: tuple[str, ...], aten: str | None, line: int | None) -> DebugHandle:
    source = None if line is None else SourceLoc(file=MODEL, start_line=line)
    return DebugHandle(id=len(nodes) * 1000 + (line or 0), source=source, aten_op=aten, ir_chain=nodes)


def _record(mul_handle: DebugHandle) -> KernelRecord:
    """One kernel: the multiply's OpSpec with ``mul_handle``, the matmul's with its own."""
    return KernelRecord(
        name="sdsc_fused_linear_mul_0",
        handle=1,
        post_grad_nodes=["mul_1", "bmm"],
        opspecs=[
            OpSpecRecord("mul", False, [2, 8, 64], "buf0", mul_handle),
            OpSpecRecord(
                "batchmatmul", True, [2, 8, 64, 64], "buf1", _handle(("bmm", "buf1"), "aten.linear.default", 24)
            ),
        ],
    )


def test_a_handle_naming_the_linear_for_the_multiply_is_counted_with_both_sides() -> None:
    record = _record(_handle(("mul_1", "buf0"), "aten.linear.default", 24))  # main's origin_node rule
    diag = GraphDiagnostics()
    mapping.cross_check([record], diag, GRAPH)
    assert mapping.kernel_nodes(record).agrees  # the nodes agree: only the op and line do not
    assert diag.disagreements == [KEY]
    assert diag.misnamed_handles == [
        MisnamedHandle(
            kernel=KEY,
            opspec="mul",
            buffer="buf0",
            handle=str(record.opspecs[0].debug_handle.id),
            nodes=["mul_1"],
            handle_op="aten.linear.default",
            handle_line=f"{MODEL}:24",
            node_ops=["aten.mul.Tensor"],
            node_lines=[f"{MODEL}:23"],
            differs=["op", "line"],
        )
    ]


def test_a_handle_naming_its_own_op_and_line_is_agreement() -> None:
    record = _record(_handle(("mul_1", "buf0"), "aten.mul.Tensor", 23))  # a 2-D input: each op its own
    diag = GraphDiagnostics()
    mapping.cross_check([record], diag, GRAPH)
    assert diag.disagreements == [] and diag.misnamed_handles == []


def test_only_the_part_that_differs_is_named_and_nothing_without_evidence() -> None:
    line_only = _handle(("mul_1", "buf0"), "aten.mul.Tensor", 24)
    (found,) = misnamed_handles([_record(line_only)], GRAPH)
    assert found.differs == ["line"]
    # a handle with no op and no line (a restickify's) and nodes with no facts say nothing
    assert misnamed_handles([_record(_handle(("mul_1", "buf0"), None, None))], GRAPH) == []
    bare = PostGradGraph(GRAPH.nodes, GRAPH.outputs)
    assert misnamed_handles([_record(_handle(("mul_1", "buf0"), "aten.linear.default", 24))], bare) == []
    # without the FX graph (a log's graph) nothing is judged, as before
    diag = GraphDiagnostics()
    mapping.cross_check([_record(_handle(("mul_1", "buf0"), "aten.linear.default", 24))], diag)
    assert diag.disagreements == [] and diag.misnamed_handles == []


def test_the_diagnostics_document_carries_them_and_the_validator_holds_the_count() -> None:
    record = _record(_handle(("mul_1", "buf0"), "aten.linear.default", 24))
    diag = GraphDiagnostics()
    mapping.cross_check([record], diag, GRAPH)
    result = GraphResult(0, "0/0", "inference", [record], None, None, None, None, diag, backend="reference")
    doc = mapping.diagnostics_document(result)
    assert doc["disagreements"] == [KEY] and doc["misnamed_handles"] == msgspec.to_builtins(diag.misnamed_handles)
    assert schemas.validate(doc, DIAGNOSTICS).ok
    uncounted = {**doc, "disagreements": []}  # listed, but not counted: never a valid document
    problems = [str(p) for p in schemas.validate(uncounted, DIAGNOSTICS).problems]
    assert any("misnamed_handles[0].kernel" in p and "not among the disagreements" in p for p in problems), problems
    nothing_differs = {**doc, "misnamed_handles": [{**doc["misnamed_handles"][0], "differs": []}]}
    assert not schemas.validate(nothing_differs, DIAGNOSTICS).ok
