"""The reference backend: install/uninstall, the addmm split, examples, and real compiles.

Every real compile (7-20 s here) happens once per case in the module-scoped ``compiled``
fixture; the tests marked ``compile`` read its results.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._inductor import compile_fx, ir
from torch._inductor import config as inductor_config
from torch._inductor import lowering as inductor_lowering
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.codegen import common as codegen_common
from torch._inductor.codegen import cpp as cpp_codegen
from torch._inductor.utils import run_and_get_code
from torch.fx.experimental.proxy_tensor import make_fx

from spyre_provenance.backends import get_backend
from spyre_provenance.backends.reference.backend import ReferenceBackend, ReferenceScheduling, ReferenceWrapperCodegen
from spyre_provenance.backends.reference.lowering import (
    SPLIT_ADDMM_PASS,
    SplitAddmmPass,
    batch_linear,
    label_linear,
    split_addmm,
)
from spyre_provenance.backends.reference.scratchpad import (
    CLONE_INPUTS_PASS,
    LX_RELAYOUT_PASS,
    clone_shared_inputs,
    lx_relayout_copies,
)
from spyre_provenance.compile import examples
from spyre_provenance.compile.examples import EXAMPLES, ModelLoadError, load_model
from spyre_provenance.model.folders import bundle_folder_name
from spyre_provenance.model.records import OpSpecRecord

aten = torch.ops.aten
HANDLE_COMMENT = re.compile(r"^\s*# \[Provenance debug handles\] (\S+):(\d+)$")
KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.sdsc_reference\(", re.M)
KERNEL_NAME = re.compile(r"^sdsc_fused_\w+_\d+$")
POST_GRAD_NODE = re.compile(r"^\s+(\w+)(?:: \"[^\"]*\")? = torch\.ops\.", re.M)


# --- install / uninstall (no compile) ----------------------------------------------------------


def _globals_snapshot() -> tuple[Any, ...]:
    codegen_common.init_backend_registration()
    return (
        codegen_common.device_codegens.get("cpu"),
        codegen_common.custom_backend_passes.get("cpu", "absent"),
        codegen_common.custom_backend_codegen_configs.get("cpu", "absent"),
        inductor_lowering.lowerings.get(aten.mm.default),
        ir.Loops.__dict__.get("has_large_inner_fn"),
        AsyncCompile.__dict__.get("sdsc_reference", "absent"),
        inductor_config.reorder_for_peak_memory,
    )


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def test_install_registers_and_uninstall_restores_exactly() -> None:
    before = _globals_snapshot()
    backend = ReferenceBackend()
    backend.install()
    try:
        assert backend.installed
        scheduling = codegen_common.get_scheduling_for_device("cpu")(None)
        assert isinstance(scheduling, ReferenceScheduling)
        assert isinstance(codegen_common.custom_backend_passes["cpu"], SplitAddmmPass)
        assert inductor_lowering.lowerings[aten.mm.default] is not before[3]
        assert ir.Loops.__dict__["has_large_inner_fn"] is not before[4]
        assert before[5] == "absent" and callable(AsyncCompile.__dict__["sdsc_reference"])
        # main's Python wrapper leaves loops unmerged; the other wrapper classes stay stock
        assert codegen_common.get_wrapper_codegen_for_device("cpu") is ReferenceWrapperCodegen
        assert codegen_common.device_codegens["cpu"].cpp_wrapper_codegen is before[0].cpp_wrapper_codegen
        # no reorder for peak memory: ops keep the graph's order inside a run, as main's bundles
        assert before[6] is True and inductor_config.reorder_for_peak_memory is False
    finally:
        backend.uninstall()
    assert not backend.installed
    assert _same(_globals_snapshot(), before)


def test_install_twice_and_uninstall_twice_are_safe() -> None:
    before = _globals_snapshot()
    backend = ReferenceBackend()
    backend.uninstall()  # never installed: nothing to do
    backend.install()
    installed = _globals_snapshot()
    backend.install()  # again: no second layer of saved state
    assert _same(_globals_snapshot(), installed)
    backend.uninstall()
    backend.uninstall()
    assert _same(_globals_snapshot(), before)


def test_adapter_answers() -> None:
    backend = get_backend("reference", bundle_dir="somewhere")
    assert isinstance(backend, ReferenceBackend)
    assert backend.name == "reference" and backend.device == "cpu"
    assert backend.bundle_dir == Path("somewhere")
    assert backend.writes_handle_comments
    # The inherited CppScheduling.codegen_comment calls the name cpp.py imported.
    assert cpp_codegen in backend.tracing_modules()
    assert all(hasattr(m, "set_kernel_post_grad_provenance_tracing") for m in backend.tracing_modules())
    assert backend.opspecs_for("extern_kernels.addmm", object()) == []


def test_pass_uuid_is_stable_bytes() -> None:
    # It joins Inductor's FX-graph cache key; None would make Inductor bypass the cache.
    assert isinstance(SplitAddmmPass().uuid(), bytes)
    assert SplitAddmmPass().uuid() == SplitAddmmPass().uuid()


# --- the addmm split on a small traced graph (no compile) --------------------------------------


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_split_addmm_is_exact_and_keeps_provenance(beta: float, alpha: float) -> None:
    def f(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.addmm(bias, a, b, beta=beta, alpha=alpha))

    torch.manual_seed(0)
    args = (torch.randn(6), torch.randn(4, 5), torch.randn(5, 6))
    gm = make_fx(f, tracing_mode="fake")(*args)
    addmm = next(n for n in gm.graph.nodes if n.target is aten.addmm.default)
    addmm.meta["stack_trace"] = '  File "model.py", line 3, in forward\n'
    addmm.meta["original_aten"] = aten.addmm.default

    assert split_addmm(gm) == 1
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.addmm.default not in targets and aten.mm.default in targets
    torch.testing.assert_close(gm(*args), f(*args))

    created = [n for n in gm.graph.nodes if SPLIT_ADDMM_PASS in str(n.meta.get("from_node"))]
    mm = next(n for n in created if n.target is aten.mm.default)
    assert mm.meta["stack_trace"].startswith('  File "model.py"')
    for node in created:
        assert node.meta["original_aten"] is aten.addmm.default
        assert isinstance(node.meta["val"], torch.Tensor)  # lowering reads the fake value
        assert node.meta["from_node"][0].name == addmm.name  # still reaches the pre-grad node
        # torch-spyre main decomposes while tracing: every node of the split has the line
        assert node.meta["stack_trace"] == addmm.meta["stack_trace"]


@contextlib.contextmanager
def _observed(gm: torch.fx.GraphModule) -> Iterator[None]:
    """As Inductor runs a post-grad pass with provenance tracking on: under a
    GraphTransformObserver, which hooks node creation and replacement only at
    ``trace.provenance_tracking_level`` 1."""
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    with inductor_config.patch({"trace.provenance_tracking_level": 1}):
        observer = GraphTransformObserver(gm, "post_grad_custom_post_pass")
        assert observer.active
        with observer:
            yield


def test_a_shared_input_clone_has_no_origin_of_the_input() -> None:
    """The clone of an input two ops read is the backend's own node. Inductor runs the pass
    under a GraphTransformObserver, whose replace hook would record the input as the node
    the clone replaced; a backward graph's input (a saved forward activation) carries the
    forward node's ``from_node``, so the clone would reach that pre-grad op and its line
    (tests/zoo/models.py:conv_groupnorm --train linked the mean backward to the group norm)."""
    from torch.fx.traceback import NodeSource, NodeSourceAction

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x) + x * 2

    args = (torch.randn(4, 5),)
    gm = make_fx(f, tracing_mode="fake")(*args)
    (x,) = [n for n in gm.graph.nodes if n.op == "placeholder"]
    forward_op = next(n for n in gm.graph.nodes if n.target is aten.exp.default)
    x.meta["from_node"] = [NodeSource(forward_op, "saved_activation", NodeSourceAction.CREATE)]

    with _observed(gm):
        assert clone_shared_inputs(gm) == 1
    (clone,) = [n for n in gm.graph.nodes if n.target is aten.clone.default]
    assert [(s.name, s.pass_name) for s in clone.meta["from_node"]] == [("", CLONE_INPUTS_PASS)]
    assert "stack_trace" not in clone.meta
    assert sorted(u.target.__name__ for u in clone.users) == ["exp.default", "mul.Tensor"]
    torch.testing.assert_close(gm(*args), f(*args))


def test_a_written_input_is_not_cloned() -> None:
    """An input an op writes (BatchNorm's running statistics, ``copy_`` back into the
    input) is no clone's: the write would land in the clone and never reach the input
    (tests/zoo/models.py:convnet --train left the running-stat updates dead)."""

    def f(x: torch.Tensor) -> torch.Tensor:
        doubled, grown = x * 2, torch.exp(x)
        x.copy_(doubled)
        return doubled + grown

    gm = make_fx(f, tracing_mode="fake")(torch.randn(4, 5))
    assert any(n.target is aten.copy_.default for n in gm.graph.nodes)
    assert clone_shared_inputs(gm) == 0
    assert not [n for n in gm.graph.nodes if n.target is aten.clone.default]


def _batched(a: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """A linear on a batch as main computes it (``batch_linear``): the input expanded to
    its own shape, the weight to the batch, a ``bmm``."""
    return torch.bmm(a.expand(a.shape), weight.unsqueeze(0).expand(a.shape[0], *weight.shape))


def _batched_gelu_mlp(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """A GELU MLP on a batch, its linears as main computes them."""
    return _batched(torch.nn.functional.gelu(_batched(x, w) + b), w2)


def test_batch_linear_makes_main_s_nodes() -> None:
    """A linear on a batch, which the CPU made ``addmm`` on the input viewed as 2-D and
    viewed back, becomes the nodes of main's ``spyre_linear``: the input's ``expand`` to
    its own shape, the weight's ``unsqueeze`` and ``expand``, ``bmm``, the bias ``add``,
    read by the relu as it is (no view back); the graph computes the same."""

    def f(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.nn.functional.linear(x, w, b))

    args = (torch.randn(2, 4, 8), torch.randn(6, 8), torch.randn(6))
    gm = make_fx(f, tracing_mode="fake")(*args)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is not aten.relu.default:
            node.meta["original_aten"] = aten.linear.default  # as label_linear names them
    assert batch_linear(gm) == 1
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert [n.target for n in nodes] == [
        aten.t.default,
        aten.expand.default,
        aten.unsqueeze.default,
        aten.expand.default,
        aten.bmm.default,
        aten.add.Tensor,
        aten.relu.default,
    ]
    expand, bmm, add, relu = nodes[1], nodes[4], nodes[5], nodes[6]
    assert expand.args == (gm.graph.find_nodes(op="placeholder")[0], [2, 4, 8]) and bmm.args[0] is expand
    assert relu.args == (add,)
    torch.testing.assert_close(gm(*args), f(*args))


def test_an_input_clone_is_read_past_no_op_expands() -> None:
    """An input two linears read, each through its no-op ``expand``: the matmuls read the
    clone itself, and the expands keep reading the input with no readers left. Main
    clones at scheduling, after lowering: no expand is lowered on its clone, so none
    re-points the clone's ``origin_node`` (``handles_from_origins``)."""

    def f(x: torch.Tensor, w: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return _batched(x, w) + _batched(x, w2)

    args = (torch.randn(2, 8, 64), torch.randn(64, 64), torch.randn(64, 64))
    gm = make_fx(f, tracing_mode="fake")(*args)
    assert clone_shared_inputs(gm) == 1
    (clone,) = [n for n in gm.graph.nodes if n.target is aten.clone.default]
    assert [u.target for u in clone.users] == [aten.bmm.default, aten.bmm.default]
    x = gm.graph.find_nodes(op="placeholder")[0]
    no_ops = [n for n in gm.graph.nodes if n.target is aten.expand.default and n.args[0] is x]
    assert len(no_ops) == 2 and all(not n.users for n in no_ops)
    torch.testing.assert_close(gm(*args), f(*args))


@pytest.mark.parametrize(
    ("batch", "tokens", "hidden", "dtype", "copied"),
    [
        (2, 8, 256, torch.float16, ["bmm"]),  # gelu_mlp_batched: the matmul 2 x 4 x 4, the add 8 x 4
        (4, 16, 512, torch.float16, ["bmm", "gelu"]),  # gelu_mlp_wide: the GELU 16 x 2, the matmul 2 x 16
        (2, 8, 128, torch.float16, []),  # as tied_embedding's head: both 2 x 8 x 2
        (2, 8, 256, torch.float32, []),  # not 2-byte floats: not modelled
    ],
)
def test_a_result_is_copied_where_main_relayouts_it(
    batch: int, tokens: int, hidden: int, dtype: torch.dtype, copied: list[str]
) -> None:
    """The clones main's LX relayout makes (``core_division``): right after the op whose
    result they copy, read by its reader instead, the backend's own nodes, also under the
    GraphTransformObserver Inductor runs the pass in, whose replace hook would link a clone
    to what it replaced (the op, or the reader's no-op expand: gelu_mlp_wide's GELU copy
    was linked to the second linear); the graph computes the same."""
    shapes = [(batch, tokens, 64), (64, hidden), (hidden,), (hidden, 64)]
    args = tuple(torch.randn(*shape, dtype=dtype) for shape in shapes)
    gm = make_fx(_batched_gelu_mlp, tracing_mode="fake")(*args)
    with _observed(gm):
        assert lx_relayout_copies(gm) == len(copied)
    clones = [n for n in gm.graph.nodes if n.target is aten.clone.default]
    assert [c.prev.target.__name__.split(".")[0] for c in clones] == copied
    for clone in clones:
        # the op's other reader is a no-op expand, if any, left with none (``clone_shared_inputs``)
        assert clone.args == (clone.prev,) and [u for u in clone.prev.users if u.users] == [clone]
        assert all(u.target is aten.expand.default for u in clone.prev.users if u is not clone)
        assert [(s.name, s.pass_name) for s in clone.meta["from_node"]] == [("", LX_RELAYOUT_PASS)]
    torch.testing.assert_close(gm(*args), _batched_gelu_mlp(*args))


def test_label_linear_names_only_what_a_linear_became() -> None:
    def f(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.addmm(b, x, w.t()))

    gm = make_fx(f, tracing_mode="fake")(torch.randn(4, 5), torch.randn(6, 5), torch.randn(6))
    nodes = {n.name: n for n in gm.graph.nodes if n.op == "call_function"}
    for node in nodes.values():
        node.meta["original_aten"] = node.target
    # as Dynamo records it: the nodes traced from the Linear module, and one that was not
    for name in ("t", "addmm"):
        nodes[name].meta["source_fn_stack"] = [("fc1", torch.nn.Linear)]
    nodes["relu"].meta["source_fn_stack"] = [("relu", torch.relu)]

    assert label_linear(gm.graph) == 2
    assert {n: node.meta["original_aten"] for n, node in nodes.items()} == {
        "t": aten.linear.default,
        "addmm": aten.linear.default,
        "relu": aten.relu.default,
    }


# --- examples (no compile) ---------------------------------------------------------------------


def test_examples_are_the_documented_ones() -> None:
    assert list(EXAMPLES)[:1] == ["mlp"]
    assert {"mlp", "residual", "reduce2", "graph_break"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_are_deterministic_and_run(name: str) -> None:
    m1, x1 = load_model(name, torch.float32)
    m2, x2 = load_model(name, torch.float32)
    tensors1 = [*m1.state_dict().values(), *x1]
    tensors2 = [*m2.state_dict().values(), *x2]
    assert all(torch.equal(a, b) for a, b in zip(tensors1, tensors2, strict=True))
    with torch.no_grad():
        m1(*x1)


def test_example_dtype() -> None:
    model, (x,) = load_model("mlp", torch.float16)
    assert x.dtype == torch.float16 and model.fc1.weight.dtype == torch.float16
    assert x.shape == (8, 128)
    assert [type(m).__name__ for m in model.children()] == ["Linear", "ReLU", "Linear"]


def test_load_model_from_file(tmp_path: Path) -> None:
    path = tmp_path / "mymodel.py"
    path.write_text(
        "import torch\n"
        "def make():\n"
        "    torch.manual_seed(1)\n"
        "    return torch.nn.Linear(3, 2), (torch.randn(4, 3), torch.arange(4))\n"
    )
    model, (x, ids) = load_model(f"{path}:make", torch.float16)
    assert model.weight.dtype == torch.float16 and x.dtype == torch.float16
    assert ids.dtype == torch.int64  # integer inputs keep their dtype


@pytest.mark.parametrize(
    "body, spec_tail, reason",
    [
        ("", ":make", "no callable 'make'"),
        ("def make():\n    raise ValueError('boom')\n", ":make", "ValueError: boom"),
        ("def make():\n    return 1\n", ":make", "must return"),
        ("raise ImportError('nope')\n", ":make", "import failed"),
    ],
)
def test_load_model_errors(tmp_path: Path, body: str, spec_tail: str, reason: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(body)
    with pytest.raises(ModelLoadError, match=re.escape(reason)):
        load_model(f"{path}{spec_tail}", torch.float32)


@pytest.mark.parametrize("spec", ["nosuchmodel", "missing.py:make", "x.txt:make", "m.py:"])
def test_load_model_unusable_specs(spec: str) -> None:
    with pytest.raises(ModelLoadError):
        load_model(spec, torch.float32)


# --- real compiles, once per case ----------------------------------------------------------------


@dataclass
class Compiled:
    name: str
    dtype: torch.dtype
    outputs: list[torch.Tensor]
    eager: list[torch.Tensor]
    code: str
    post_grad_nodes: set[str]
    bundle_dir: Path
    backend: ReferenceBackend
    # "<kernel>:<N>" -> the OpSpecs the hook would get for that call site
    handles: dict[str, list[OpSpecRecord]] = field(default_factory=dict)


CASES = {
    "mlp-fp32": ("mlp", torch.float32),
    "mlp-fp16": ("mlp", torch.float16),
    "residual-fp32": ("residual", torch.float32),
    "reduce2-fp32": ("reduce2", torch.float32),
}


def _flat(value: Any) -> list[torch.Tensor]:
    return [value] if isinstance(value, torch.Tensor) else [t for v in value for t in _flat(v)]


def _compile(name: str, dtype: torch.dtype, bundle_dir: Path) -> Compiled:
    """One tracked compile, observed the way the hook observes it."""
    model, inputs = load_model(name, dtype)
    eager_model = copy.deepcopy(model)
    backend = ReferenceBackend(bundle_dir=bundle_dir)
    handles: dict[str, list[OpSpecRecord]] = {}
    post_grad: list[str] = []

    def observe_tracing(original: Any) -> Any:
        def traced(node_schedule: Any, kernel_name: str, *args: Any, **kwargs: Any) -> Any:
            n = original(node_schedule, kernel_name, *args, **kwargs)
            handles[f"{kernel_name}:{n}"] = backend.opspecs_for(kernel_name, node_schedule)
            return n

        return traced

    original_trace_structured = compile_fx.trace_structured

    def trace_structured(name: str, *args: Any, **kwargs: Any) -> Any:
        meta = kwargs.get("metadata_fn")
        if name == "artifact" and meta and meta().get("name") == "inductor_post_grad_graph":
            post_grad.append(kwargs["payload_fn"]())
        return original_trace_structured(name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        for module in backend.tracing_modules():
            original = module.set_kernel_post_grad_provenance_tracing
            mp.setattr(module, "set_kernel_post_grad_provenance_tracing", observe_tracing(original))
        mp.setattr(compile_fx, "trace_structured", trace_structured)
        torch._dynamo.reset()
        backend.install()
        try:
            with (
                inductor_config.patch({"trace.provenance_tracking_level": 1, "force_disable_caches": True}),
                torch.no_grad(),
            ):
                got, codes = run_and_get_code(torch.compile(model), *inputs)
        finally:
            backend.uninstall()
            torch._dynamo.reset()
    with torch.no_grad():
        want = eager_model(*inputs)
    return Compiled(
        name=name,
        dtype=dtype,
        outputs=_flat(got),
        eager=_flat(want),
        code="\n".join(codes),
        post_grad_nodes={m for text in post_grad for m in POST_GRAD_NODE.findall(text)},
        bundle_dir=bundle_dir,
        backend=backend,
        handles=handles,
    )


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache: dict[str, Compiled] = {}

    def get(case: str) -> Compiled:
        if case not in cache:
            name, dtype = CASES[case]
            cache[case] = _compile(name, dtype, tmp_path_factory.mktemp(f"bundles-{case}"))
        return cache[case]

    return get


ALL = pytest.mark.parametrize("case", list(CASES))
MLP = pytest.mark.parametrize("case", ["mlp-fp32", "mlp-fp16"])


@pytest.mark.compile
@ALL
def test_outputs_match_eager(compiled: Any, case: str) -> None:
    c = compiled(case)
    tol = {torch.float32: 1e-4, torch.float16: 1e-2}[c.dtype]
    assert len(c.outputs) == len(c.eager)
    for got, want in zip(c.outputs, c.eager, strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=tol, rtol=tol)


def _call_body(code: str) -> str:
    return code[code.index("def call(") : code.index("runner = Runner")]


@pytest.mark.compile
@ALL
def test_wrapper_calls_only_sdsc_kernels(compiled: Any, case: str) -> None:
    c = compiled(case)
    assert "extern_kernels." not in c.code
    assert "cpp_fused" not in c.code
    defined = KERNEL_DEF.findall(c.code)
    assert defined and all(KERNEL_NAME.match(k) for k in defined), defined
    called = re.findall(r"^\s+(\w+)\.run\(", _call_body(c.code), re.M)  # as main calls its kernels
    kernels_called = [k for k in called if k in defined]
    assert set(kernels_called) == set(defined)
    # no HBM pool line: main has allocated no pool in the wrapper since #3707
    assert "_pool_" not in c.code and "spyre_empty_with_layout" not in c.code


@pytest.mark.compile
@ALL
def test_handle_comments_name_defined_kernels(compiled: Any, case: str) -> None:
    c = compiled(case)
    defined = set(KERNEL_DEF.findall(c.code))
    lines = _call_body(c.code).splitlines()
    keys = []
    for i, line in enumerate(lines):
        m = HANDLE_COMMENT.match(line)
        if not m:
            continue
        name, n = m.group(1), int(m.group(2))
        assert name in defined
        assert lines[i + 1].strip().startswith(f"{name}.run("), lines[i : i + 2]
        keys.append(f"{name}:{n}")
    # One comment per call site, handles 1..k in order, and each one recorded by the tracer.
    assert [int(k.rsplit(":", 1)[1]) for k in keys] == list(range(1, len(keys) + 1))
    assert keys == list(c.handles)


@pytest.mark.compile
@ALL
def test_every_opspec_has_a_handle_on_real_post_grad_nodes(compiled: Any, case: str) -> None:
    c = compiled(case)
    assert c.post_grad_nodes
    for key, specs in c.handles.items():
        assert specs, f"{key} has no OpSpecs"
        for spec in specs:
            h = spec.debug_handle
            assert h is not None, f"{key}: {spec.op} has no debug handle"
            *origins, buffer = h.ir_chain
            assert origins and set(origins) <= c.post_grad_nodes, (key, h.ir_chain)
            assert buffer == spec.buffer and buffer.startswith("buf")
            assert 0 <= h.id < 2**63
            for child in h.fused_from:
                assert len(child.ir_chain) == 1 and child.ir_chain[0] in origins


@pytest.mark.compile
@ALL
def test_opspecs_given_to_the_hook_match_the_kernels(compiled: Any, case: str) -> None:
    c = compiled(case)
    sites = c.backend.call_sites
    assert [name for name, _ in sites] == [k.rsplit(":", 1)[0] for k in c.handles]
    for (_, specs), records in zip(sites, c.handles.values(), strict=True):
        assert [s.debug_handle.id for s in specs] == [r.debug_handle.id for r in records]


def _lines_of(method: Any, text: str) -> int:
    lines, start = inspect.getsourcelines(method)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.compile
@MLP
def test_addmm_split_provenance(compiled: Any, case: str) -> None:
    c = compiled(case)
    specs = [s for records in c.handles.values() for s in records]
    split = [
        s
        for s in specs
        if any(t.kind == "decomposition" and t.pass_name == SPLIT_ADDMM_PASS for t in s.debug_handle.transform_history)
    ]
    adds = [s for s in split if s.op == "add"]
    matmuls = [s for s in split if s.op == "batchmatmul"]
    assert len(adds) == len(matmuls) == 2  # one of each per Linear
    lines = [
        _lines_of(examples.MLP.forward, "self.fc1(x)"),
        _lines_of(examples.MLP.forward, "self.fc2(h)"),
    ]
    for add, line in zip(adds, lines, strict=True):
        # as on torch-spyre main: the bias add is the linear's, with the linear's line
        assert add.debug_handle.aten_op == "aten.linear.default"
        assert (add.debug_handle.source.file, add.debug_handle.source.start_line) == (examples.__file__, line)
        assert add.debug_handle.ir_chain[0] in c.post_grad_nodes
    for mm, line in zip(matmuls, lines, strict=True):
        # the weight's permute is read by the matmul: both linear's, so the handle says so
        assert mm.debug_handle.aten_op == "aten.linear.default"
        (mm_child,) = [ch for ch in mm.debug_handle.fused_from if ch.ir_chain[0].startswith("mm")]
        assert mm_child.aten_op == "aten.linear.default"
        assert (mm_child.source.file, mm_child.source.start_line) == (examples.__file__, line)


@pytest.mark.compile
@MLP
def test_the_mlp_is_one_kernel_as_on_torch_spyre_main(compiled: Any, case: str) -> None:
    """torch-spyre main (9a6b71e) compiles the seed MLP into one SuperDSC bundle,
    ``sdsc_fused_linear_relu_0``: ReStickifyOpHBM, batchmatmul, add, relufwd,
    ReStickifyOpHBM, batchmatmul, add (REFERENCE.md 4.1). The reference makes the same
    kernel with the same compute ops; the restickifies move weights between a card's stick
    layouts, which the CPU does not have."""
    c = compiled(case)
    assert list(c.handles) == ["sdsc_fused_linear_relu_0:1"]
    ops = [s.op for s in c.handles["sdsc_fused_linear_relu_0:1"]]
    main = ["ReStickifyOpHBM", "batchmatmul", "add", "relufwd", "ReStickifyOpHBM", "batchmatmul", "add"]
    assert ops == [op for op in main if op != "ReStickifyOpHBM"]


@pytest.mark.compile
@MLP
def test_relu_points_at_the_model_line(compiled: Any, case: str) -> None:
    c = compiled(case)
    (relu,) = [s for r in c.handles.values() for s in r if s.op == "relufwd"]
    assert relu.debug_handle.aten_op == "aten.relu.default"
    assert relu.debug_handle.source.file == examples.__file__
    assert relu.debug_handle.source.start_line == _lines_of(examples.MLP.forward, "self.act(")
    (kernel,) = [key for key, r in c.handles.items() if relu in r]
    assert "relu" in kernel.rsplit(":", 1)[0]  # named after the original aten ops it holds


@pytest.mark.compile
@ALL
def test_bundles(compiled: Any, case: str) -> None:
    c = compiled(case)
    seen_kernels = set()
    for name, specs in c.backend.call_sites:
        if name in seen_kernels:
            continue  # a reused kernel is defined, and bundled, once
        seen_kernels.add(name)
        # laid out as torch-spyre main lays them in its cache_dir(): inductor-spyre/
        # <uuid8>_<kernel>_<suffix>/, the name the OpSpec artifact records, from the bytes
        _, folder_name = c.backend.kernel_bundle(name)
        folder = c.bundle_dir / "inductor-spyre" / folder_name
        files = [folder / f"sdsc_{i}.json" for i in range(len(specs))]
        assert set(folder.glob("sdsc_*.json")) == set(files)
        assert re.fullmatch(rf"[0-9a-f]{{8}}_{re.escape(name)}_[a-z0-9_]{{8}}", folder_name)
        assert folder_name == bundle_folder_name(name, b"".join(f.read_bytes() for f in files))
        for i, (path, spec) in enumerate(zip(files, specs, strict=True)):
            text = path.read_text()
            doc = json.loads(text)
            assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n"  # canonical bytes
            (root,) = doc
            assert root == f"{i}_{spec.op}"
            handle = doc[root]["debug_handle_"]
            assert handle["id"] == str(spec.debug_handle.id)
            # A 0-d op (a mean to a scalar) has an empty iteration space, never a missing one.
            assert len(doc[root]["iterationSpace_"]) == len(spec.iteration_space)
            assert doc[root]["scheduleTree_"]
    assert set(c.backend.bundles_written) == set(c.bundle_dir.rglob("sdsc_*.json"))


@pytest.mark.compile
def test_cache_keys_differ_and_uninstall_restores_stock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference compile and a stock compile of one graph never share an FX-cache entry.

    With the caches on and empty, compile the MLP with the reference backend (a miss that
    writes an entry), uninstall, compile it again: it must be a miss too, and produce stock
    code. A shared key would instead replay the ``sdsc_`` wrapper.
    """
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    # the suite forces the FX-graph cache off by environment (tests/conftest.py), which wins
    # over config.patch: this test is of the cache on
    monkeypatch.setattr(inductor_config._config["fx_graph_cache"], "env_value_force", True)
    model, (x,) = load_model("mlp", torch.float32)
    backend = ReferenceBackend()
    codes: list[str] = []
    counters.clear()
    with (
        inductor_config.patch({"force_disable_caches": False, "fx_graph_cache": True, "fx_graph_remote_cache": False}),
        torch.no_grad(),
    ):
        for installed in (True, False):
            torch._dynamo.reset()
            if installed:
                backend.install()
            try:
                _, (code,) = run_and_get_code(torch.compile(model), x)
            finally:
                backend.uninstall()
            codes.append(code)
    torch._dynamo.reset()
    assert counters["inductor"]["fxgraph_cache_hit"] == 0
    assert counters["inductor"]["fxgraph_cache_miss"] == 2
    reference, stock = codes
    assert "sdsc_fused_" in reference and "extern_kernels." not in reference
    assert "extern_kernels.addmm" in stock and "sdsc_" not in stock


def test_every_code_file_of_the_cache_key_exists():
    """The reference's cache key hashes these files; a moved module must not leave a stale path
    (every compile on the reference then fails to open it)."""
    from spyre_provenance.backends.reference.lowering import CODE_FILES

    assert [p for p in CODE_FILES if not Path(p).is_file()] == []
