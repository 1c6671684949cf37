"""The Spyre-modelled reference backend: real Inductor, Spyre's shape of output, on CPU.

torch-spyre cannot be installed here, so this backend walks the same path on the CPU and
produces what a Spyre compile produces, where provenance is concerned:

- ``addmm`` is split into ``mm`` + bias ``add`` (torch-spyre decomposes addmm the same way), as
  a post-grad graph pass so the bias add is its own post-grad node. Like the bias adds of a
  real Spyre compile (REFERENCE.md section 5) it carries ``original_aten`` but no
  ``stack_trace``.
- ``mm`` is lowered to the backend's own reduction, ``sum_k a[i,k] * b[k,j]`` (torch-spyre
  lowers mm to its own matmul reduction), so the wrapper calls generated kernels only, never
  ``extern_kernels.mm``/``addmm``.
- Every pointwise op is realized as its own buffer (torch-spyre forces the same through
  ``Loops.has_large_inner_fn``), so one buffer is one op, and one OpSpec.
- Kernels are named ``sdsc_<fused original-aten names>_<n>``, one per scheduler node.
- Each kernel gets one OpSpec per buffer with a DebugHandle (``opspec.build_debug_handle``) and,
  when ``bundle_dir`` is set, one SuperDSC-like JSON bundle per OpSpec.
- The handle comment ``# [Provenance debug handles] sdsc_x:N`` comes from the inherited
  ``CppScheduling.codegen_comment``, the "newest torch-spyre" behaviour.
- A kernel with a reduction or a matmul gets an HBM pool line between its comment and its
  call (``_pool_<kernel> = ...``), as torch-spyre's ``SpyreKernel.call_kernel`` writes it;
  the comment is then moved to the line before the call (``base.move_comment_to_call``).

Code generation and execution stay Inductor's C++ backend, so results are checked against
eager. Everything is installed for device "cpu" and undone exactly by ``uninstall``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import torch
from torch._inductor import ir
from torch._inductor import lowering as inductor_lowering
from torch._inductor.codegen import common as codegen_common
from torch._inductor.codegen import cpp as cpp_codegen
from torch._inductor.custom_graph_pass import CustomGraphModulePass, get_hash_for_files
from torch._inductor.dependencies import MemoryDep, StarDep, WeakDep
from torch._inductor.utils import IndentedBuffer, Placeholder, get_fused_kernel_name
from torch._inductor.virtualized import V, ops

from spyre_provenance.backends import bundles
from spyre_provenance.backends import opspec as opspec_mod
from spyre_provenance.backends.base import Backend, move_comment_to_call
from spyre_provenance.backends.opspec import OpSpec, TensorArg
from spyre_provenance.logs.wrapper_code import POOL_PREFIX
from spyre_provenance.model.folders import BUNDLE_FILE
from spyre_provenance.model.records import DebugHandle, Fault, OpSpecRecord
from spyre_provenance.patches import Patches
from spyre_provenance.support import atomic_write_text

aten = torch.ops.aten

DEVICE = "cpu"
KERNEL_PREFIX = "sdsc"
SPLIT_ADDMM_PASS = "spyre_reference.split_addmm"
#: Bumped when generated code changes in a way the source-file hash would not show.
CACHE_FORMAT = "spyre-reference-backend/1"


# --- the addmm split (post-grad graph pass) -------------------------------------------------


def _cache_uuid() -> bytes:
    """Identity of this backend's code: joins Inductor's FX-graph (and AOTAutograd) cache key.

    Inductor puts ``uuid()`` of every registered device pass into ``FxGraphHashDetails``
    (``custom_backend_passes``), so a reference compile can never hit an entry written by a
    stock-Inductor compile of the same graph, or the other way round, and editing this backend
    invalidates its old entries.
    """
    return get_hash_for_files((__file__, opspec_mod.__file__), extra=CACHE_FORMAT)


def _fake_value(target: Any, args: tuple[Any, ...]) -> Any:
    """``node.meta["val"]`` for a new node: run the op on its inputs' fake values."""
    from torch._guards import detect_fake_mode

    vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
    fake_mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        return target(*vals)


# What the matmul half of the split inherits from the addmm node; the bias add gets only
# original_aten, like the bias adds torch-spyre's decomposition synthesizes.
_MM_META_KEYS = ("stack_trace", "nn_module_stack", "source_fn_stack", "original_aten", "seq_nr")


def split_addmm(gm: torch.fx.GraphModule) -> int:
    """Rewrite every ``addmm(bias, a, b, beta, alpha)`` as ``alpha*mm(a, b) + beta*bias``.

    New nodes record where they came from twice over: ``from_node`` (so Inductor's pre/post
    graph mapping still reaches the pre-grad ``linear``) and a ``decomposition`` entry under
    ``opspec.TRANSFORMS_META_KEY`` (so their OpSpecs' transform history shows the split).
    Returns how many nodes were split.
    """
    from torch.fx.traceback import NodeSource, NodeSourceAction

    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.addmm.default:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.device.type != DEVICE:
            continue  # another device's addmm in a mixed graph: not this backend's to change
        bias, mat1, mat2 = node.args[:3]
        beta = node.kwargs.get("beta", 1)
        alpha = node.kwargs.get("alpha", 1)
        transform = (("decomposition", SPLIT_ADDMM_PASS, "addmm -> mm + bias add"),)
        created = []

        def emit(
            name: str, target: Any, args: tuple[Any, ...], inherit: Sequence[str] = ()
        ) -> torch.fx.Node:
            new = graph.create_node("call_function", target, args, name=name)
            new.meta.update({k: node.meta[k] for k in inherit if k in node.meta})
            new.meta["original_aten"] = node.meta.get("original_aten", aten.addmm.default)
            new.meta["val"] = _fake_value(target, args)
            new.meta[opspec_mod.TRANSFORMS_META_KEY] = transform
            created.append(new)
            return new

        with graph.inserting_before(node):
            result = emit("mm", aten.mm.default, (mat1, mat2), _MM_META_KEYS)
            if alpha != 1:
                result = emit("mul", aten.mul.Tensor, (result, alpha))
            if beta != 0:
                scaled_bias = bias if beta == 1 else emit("mul", aten.mul.Tensor, (bias, beta))
                result = emit("add", aten.add.Tensor, (result, scaled_bias))
        for new in created:
            action = [NodeSourceAction.CREATE]
            if new is result:
                action.insert(0, NodeSourceAction.REPLACE)
            new.meta["from_node"] = [NodeSource(node, SPLIT_ADDMM_PASS, action)]
        node.replace_all_uses_with(result)
        graph.erase_node(node)
        count += 1
    if count:
        gm.recompile()
    return count


class SplitAddmmPass(CustomGraphModulePass):
    """The device pass Inductor runs on post-grad graphs that touch the CPU: the backend's
    pre-scheduling pass, as far as the audit is concerned (``Backend.pass_observer``)."""

    def __init__(self, backend: Backend | None = None) -> None:
        self.backend = backend

    def __call__(self, gm: torch.fx.GraphModule) -> None:
        observer = getattr(self.backend, "pass_observer", None)
        if observer is not None:
            observer(gm.graph, "in")
        split_addmm(gm)
        if observer is not None:
            observer(gm.graph, "out")

    def uuid(self) -> bytes:
        return _cache_uuid()


# --- mm as the backend's own reduction -----------------------------------------------------


def _make_mm_lowering(fallback: Any) -> Any:
    """``mm(a, b)`` -> one reduction buffer ``out[i, j] = sum_k a[i, k] * b[k, j]``.

    Non-CPU inputs go to the lowering this one replaced, so other devices are untouched.
    """

    def lower_mm(a: Any, b: Any) -> Any:
        device = a.get_device()
        if device is None or device.type != DEVICE:
            return fallback(a, b)
        load_a, load_b = a.make_loader(), b.make_loader()

        def inner_fn(index: Sequence[Any], rindex: Sequence[Any]) -> Any:
            i, j = index
            (k,) = rindex
            return ops.mul(load_a([i, k]), load_b([k, j]))

        out = ir.Reduction.create(
            device=device,
            dst_dtype=a.get_dtype(),
            src_dtype=a.get_dtype(),
            inner_fn=inner_fn,
            ranges=[a.get_size()[0], b.get_size()[1]],
            reduction_ranges=[a.get_size()[1]],
            reduction_type="sum",
        )
        out.realize()
        return out

    return lower_mm


def _realize_every_op(self: Any, threshold: int | None = None) -> bool:
    """Replacement for ``ir.Loops.has_large_inner_fn``: realize each op as its own buffer."""
    return True


# --- OpSpecs of a kernel -------------------------------------------------------------------

# Spyre-style names for the pointwise ops the examples use; anything else keeps its aten name.
_SPYRE_OPS = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "realdiv",
    "relu": "relufwd",
    "exp": "exp",
    "neg": "neg",
    "rsqrt": "rsqrt",
    "sqrt": "sqrt",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "gelu": "gelufwd",
    "maximum": "maximum",
    "where": "where3",
    "clone": "identity",
    "convert_element_type": "identity",
}
# Ops that only re-index (views) or pick a tuple element: they never name a buffer's op.
_VIEW_OPS = frozenset(
    "view reshape _unsafe_view permute t transpose expand unsqueeze squeeze slice select "
    "alias as_strided getitem".split()
)


def _op_name(buffer: Any) -> tuple[str, bool, dict[str, Any]]:
    """(op, is_reduction, op_info) of one buffer, named the way Spyre names its ops."""
    data = getattr(buffer, "data", None)
    targets = _origin_ops(buffer)
    if isinstance(data, ir.Reduction):
        rtype = str(data.reduction_type)
        if rtype == "sum" and "mm" in targets:
            return "matmul", True, {"reduction_type": rtype}
        return rtype, True, {"reduction_type": rtype}
    compute = [t for t in targets if t not in _VIEW_OPS]
    names = [_SPYRE_OPS.get(t, t) for t in dict.fromkeys(compute)]
    # no op of its own: a copy (a weight's layout copy, whose only origin is the input)
    return ("+".join(names) if names else "identity"), False, {}


def _origin_ops(buffer: Any) -> list[str]:
    """The aten op names (``relu``, ``copy_``) of the FX nodes lowered into a buffer, by
    node name; graph inputs among the origins compute nothing and are left out."""
    origins = sorted(getattr(buffer, "origins", ()) or (), key=lambda n: n.name)
    return [_packet_name(o.target) for o in origins if getattr(o, "op", None) == "call_function"]


def _packet_name(target: Any) -> str:
    packet = getattr(target, "_overloadpacket", None)
    return getattr(packet, "__name__", None) or getattr(target, "__name__", str(target)).split(".")[0]


def kernel_descriptor(nodes: Sequence[Any]) -> str:
    """The middle of a kernel name: ``fused_<original-aten ops>`` as torch-spyre names it.

    Inductor's ``get_fused_kernel_name`` reads ``meta["original_aten"]``; nodes without it
    (a layout copy of a weight, nodes a pass created) would give a bare ``fused``, which
    says nothing. Then the ops the buffers compute name the kernel, and a kernel that only
    copies its input is a ``clone``.
    """
    fused = get_fused_kernel_name(nodes, "original_aten")
    if fused != "fused":
        return fused
    ops = sorted({op for n in _flat_nodes(nodes) for op in _origin_ops(n.node)})
    return "_".join(["fused", *(ops or ["clone"])])


def _size(name: str) -> list[int | str]:
    try:
        return [opspec_mod.extent(s) for s in V.graph.get_buffer(name).get_size()]
    except Exception:  # graph inputs that are not buffers, symbolic corner cases
        return []


def _dtype(name: str) -> str:
    try:
        return str(V.graph.get_dtype(name)).replace("torch.", "")
    except Exception:
        return "unknown"


def build_opspec(
    snode: Any, call_args: Sequence[str], debug_handle: Callable[[Any], DebugHandle | None] | None = None
) -> tuple[OpSpec, str | None]:
    """The OpSpec of one scheduler node (one ComputedBuffer), handle included, and why
    it has no handle when it has none (None when it has one)."""
    buffer = snode.node
    op, is_reduction, op_info = _op_name(buffer)
    sizes, rsizes = snode.get_ranges()
    space = {f"d{i}": (opspec_mod.extent(s), 1) for i, s in enumerate([*sizes, *rsizes])}

    def arg(dep: Any, is_input: bool) -> TensorArg:
        if isinstance(dep, MemoryDep):
            coordinates = [str(dep.index)]
        elif isinstance(dep, StarDep):  # the whole buffer: a scatter target, a mutated input
            coordinates = ["*"]
        else:
            coordinates = []
        return TensorArg(
            is_input=is_input,
            arg_index=call_args.index(dep.name) if dep.name in call_args else -1,
            device_dtype=_dtype(dep.name),
            device_size=_size(dep.name),
            device_coordinates=coordinates,
            name=dep.name,
        )

    # a WeakDep orders a mutation after earlier reads; it moves no data, so it is no argument
    args = [arg(d, True) for d in snode.read_writes.reads if not isinstance(d, WeakDep)]
    args += [arg(d, False) for d in snode.read_writes.writes if not isinstance(d, WeakDep)]
    handle, why = None, None
    try:
        handle = (debug_handle or opspec_mod.build_debug_handle)(buffer)
        if handle is None:
            why = "the buffer has no origins to build a debug handle from"
    except Exception as exc:  # provenance is debug-only: the hook records it as a fault
        why = f"building its debug handle failed: {type(exc).__name__}: {exc}"
    return OpSpec(op, is_reduction, space, args, op_info, debug_handle=handle), why


def _failed_opspec(snode: Any, exc: Exception) -> tuple[OpSpec, str]:
    """What is left of an OpSpec that could not be built: its buffer, and why."""
    name = getattr(getattr(snode, "node", None), "get_name", lambda: None)()
    spec = OpSpec("unknown", False, {}, [TensorArg(False, -1, "unknown", [], [], name=name)], {})
    return spec, f"its OpSpec could not be built: {type(exc).__name__}: {exc}"


def _flat_nodes(node_schedule: Sequence[Any]) -> list[Any]:
    """The scheduler nodes of a kernel that own a buffer, fused groups opened up, in order."""
    nodes = []
    for n in node_schedule:
        inner = n.get_nodes() if hasattr(n, "get_nodes") else [n]
        nodes.extend(x for x in inner if getattr(x, "node", None) is not None)
    return nodes


def _redact_handle(handle: dict[str, Any], redactor: Any) -> None:
    """Rewrite the source paths of a serialized handle and its fused constituents, in place."""
    pending = [handle]
    while pending:
        current = pending.pop()
        if current.get("source"):
            current["source"]["file"] = redactor.redact_path(current["source"]["file"])
        pending.extend(current.get("fused_from", ()))


#: Bytes of HBM scratch per element of a reduction's or matmul's iteration space, and the
#: pool of a kernel whose space is symbolic (its size is only known at run time).
POOL_BYTES_PER_ELEMENT = 4
SYMBOLIC_POOL_BYTES = 65536


def pool_bytes(specs: Sequence[OpSpec]) -> int:
    """The HBM pool a kernel needs: scratch for its reductions and matmuls (0: no pool)."""
    sizes = []
    for spec in specs:
        if not (spec.is_reduction or spec.op == "matmul"):
            continue
        extents = [extent for extent, _ in spec.iteration_space.values()]
        if not all(isinstance(e, int) for e in extents):
            sizes.append(SYMBOLIC_POOL_BYTES)
            continue
        size = POOL_BYTES_PER_ELEMENT
        for extent in extents:
            size *= extent
        sizes.append(size)
    return max(sizes, default=0)


def bundle_document(index: int, spec: OpSpec) -> dict[str, Any]:
    """One SuperDSC-like device spec for one OpSpec (key style as SuperDSC: trailing ``_``).

    No source information in it, as in real bundles, except ``debug_handle_`` (the handle as
    torch-spyre serializes it: a dict whose ``id`` is a decimal string), the Phase 2 link.
    """
    # The schedule tree: one loop per iteration-space dimension around the compute op.
    tree: dict[str, Any] = {"nodeType_": "compute", "op_": spec.op}
    for dim, (extent, _) in reversed(list(spec.iteration_space.items())):
        tree = {"nodeType_": "loop", "dim_": dim, "extent_": extent, "body_": [tree]}
    body = {
        "debug_handle_": spec.debug_handle.to_dict() if spec.debug_handle else None,
        "opFunc_": spec.op,
        "isReduction_": spec.is_reduction,
        "iterationSpace_": {d: list(v) for d, v in spec.iteration_space.items()},
        "tensors_": [
            {
                "name_": a.name,
                "isInput_": a.is_input,
                "argIndex_": a.arg_index,
                "dataFormat_": a.device_dtype,
                "size_": a.device_size,
                "coordinates_": a.device_coordinates,
            }
            for a in spec.args
        ],
        "computeOp_": {"op_": spec.op, "opInfo_": spec.op_info},
        "scheduleTree_": [tree],
        "numCoresUsed_": 1,
        "coreIdToDsc_": {"0": 0},
    }
    return {f"{index}_{spec.op}": body}


# --- the scheduling --------------------------------------------------------------------------


class ReferenceScheduling(cpp_codegen.CppScheduling):
    """CppScheduling with Spyre's kernel names, one kernel per node, OpSpecs and bundles."""

    def __init__(self, scheduler: Any, backend: ReferenceBackend | None = None) -> None:
        super().__init__(scheduler)
        self.backend = backend

    def codegen_node(self, node: Any) -> None:
        # Spyre emits one kernel per scheduler node; stock CPU batches nodes into one group.
        super().codegen_node(node)
        self._set_flush_status(True)

    # With every op realized (as torch-spyre configures Inductor), Inductor 2.13 fuses a
    # reader of a mutated buffer (``scatter``'s result, say) into a kernel that runs before
    # the mutation, and computes wrong values (the max-with-indices backward of
    # tests/zoo/models.py:multi_reduce is off by 1.85). Nodes that touch a mutated buffer
    # therefore stay unfused: a kernel of their own, in the scheduler's order.
    def can_fuse_vertical(self, node1: Any, node2: Any) -> bool:
        return not self._touches_mutation(node1, node2) and super().can_fuse_vertical(node1, node2)

    def can_fuse_horizontal(self, node1: Any, node2: Any) -> bool:
        return not self._touches_mutation(node1, node2) and super().can_fuse_horizontal(node1, node2)

    def _touches_mutation(self, *nodes: Any) -> bool:
        renamed = getattr(self.scheduler, "mutation_real_name", None) or {}
        mutated = set(renamed) | set(renamed.values())
        return bool(mutated) and any(
            dep.name in mutated for n in nodes for dep in (*n.read_writes.reads, *n.read_writes.writes)
        )

    def define_kernel(self, src_code: str, nodes: Sequence[Any], kernel_args: Any = None) -> str:
        """As ``CppScheduling.define_kernel``, named the Spyre way, plus OpSpecs and bundles."""
        wrapper = V.graph.wrapper_code
        args = self.kernel_group.args if kernel_args is None else kernel_args
        if src_code in wrapper.src_to_kernel:
            kernel_name = wrapper.src_to_kernel[src_code]
            is_new = False
        else:
            kernel_name = "_".join([KERNEL_PREFIX, kernel_descriptor(nodes), wrapper.next_kernel_suffix()])
            wrapper.src_to_kernel[src_code] = kernel_name
            is_new = True
            self._define_cpp(wrapper, kernel_name, src_code, args)
        if self.backend is not None:
            specs = self.backend._record_kernel(kernel_name, nodes, args)
            if is_new:
                self.backend._write_bundles(kernel_name, specs)
            size = pool_bytes(specs)
            if size:
                self._call_with_pool(size)
        return kernel_name

    def _call_with_pool(self, size: int) -> None:
        """The kernel about to be called gets an HBM pool line, as torch-spyre writes it:
        handle comment, ``_pool_<kernel> = ...``, the call. The comment then moves to the
        line before the call, which is what tlparse must highlight (``move_comment_to_call``).
        Only this kernel group's call is changed (the group is replaced after the flush)."""
        group = self.kernel_group
        original = group.call_kernel

        def call_kernel(wrapper: Any, kernel_name: str) -> None:
            since = len(wrapper.lines)
            # a CPU stand-in for spyre_empty_with_layout; the C++ kernel itself takes no pool
            wrapper.writeline(f"{POOL_PREFIX}{kernel_name} = empty_strided_cpu(({size},), (1,), torch.uint8)")
            original(wrapper, kernel_name)
            move_comment_to_call(wrapper.lines, kernel_name, since)

        group.call_kernel = call_kernel

    @staticmethod
    def _define_cpp(wrapper: Any, kernel_name: str, src_code: str, args: Any) -> None:
        # The body of CppScheduling.define_kernel after naming (torch 2.13), unchanged.
        kernel_decl_name = kernel_name if V.graph.cpp_wrapper else "kernel"
        src_code = src_code.replace(str(Placeholder.KERNEL_NAME), kernel_decl_name)
        src_code = src_code.replace(str(Placeholder.DESCRIPTIVE_NAME), kernel_name)
        src_code = src_code.replace("#pragma CMT", "//")
        first_char = src_code.rfind('extern "C"')
        last_char = src_code.find(")", first_char)
        if cpp_codegen._IS_WINDOWS:
            last_char = src_code.find(")", last_char + 1)
        kernel_definition = f"{src_code[first_char : last_char + 1]};\n"
        compile_wrapper = IndentedBuffer()
        _, _, arg_types = args.cpp_argdefs()
        if not V.graph.cpp_wrapper:
            compile_wrapper.writeline(f"async_compile.cpp_pybinding({arg_types!r}, r'''")
        compile_wrapper.splice(src_code, strip=True)
        if not V.graph.cpp_wrapper:
            compile_wrapper.writeline("''')")
        wrapper.define_kernel(
            kernel_name, compile_wrapper.getvalue(), gpu=False, cpp_definition=kernel_definition
        )


# --- the backend adapter ---------------------------------------------------------------------


class ReferenceBackend(Backend):
    """``--backend reference``: installs ``ReferenceScheduling`` and friends for device cpu."""

    name = "reference"
    device = DEVICE
    writes_handle_comments = True
    extends_upstream = True

    def __init__(self, bundle_dir: str | os.PathLike[str] | None = None, *, kernel_cache: bool = False) -> None:
        #: Where SuperDSC-like bundles go (``<bundle_dir>/<kernel>/sdsc_<i>.json``); None: nowhere.
        #: A later graph whose kernel has the same name overwrites the earlier one's bundles.
        self.bundle_dir = Path(bundle_dir) if bundle_dir is not None else None
        #: torch-spyre's kernel cache on: bundles go to Inductor's ``cache_dir()/
        #: inductor-spyre-cache/<key>/`` instead (``bundle_cache_key``), and a kernel whose
        #: key is there already is served the cached bundles, handles of an earlier compile.
        self.kernel_cache = kernel_cache
        #: kernel name -> each served bundle's ``debug_handle_`` (``bundle_handles``)
        self._served: dict[str, list[dict[str, Any] | None]] = {}
        #: Every kernel call site since ``install()``, in emission order: (name, OpSpecs).
        self.call_sites: list[tuple[str, list[OpSpec]]] = []
        #: Every bundle file written since ``install()``.
        self.bundles_written: list[Path] = []
        #: Faults of the backend's own work (bundle writes) not yet handed to the hook.
        self.faults: list[Fault] = []
        # Why each OpSpec of the last call site has no handle (None: it has one).
        self._last_missing: list[str | None] = []
        self._patches: Patches | None = None
        # Node identities of the last call site: the hook asks for its OpSpecs right after.
        self._last_nodes: tuple[int, ...] = ()

    # install / uninstall: every global touched is saved first and put back exactly.

    def install(self, recorder: Any = None) -> None:  # writes its own handle comments
        if self._patches is not None:
            return
        codegen_common.init_backend_registration()  # the stock cpu entry must exist to save it
        mm = aten.mm.default
        self._patches = patches = Patches()  # from here on, uninstall() undoes whatever got done
        try:
            # register_backend_for_device sets these three entries itself
            stock = patches.keep_item(codegen_common.device_codegens, DEVICE)
            patches.keep_item(codegen_common.custom_backend_passes, DEVICE)
            custom_config = patches.keep_item(codegen_common.custom_backend_codegen_configs, DEVICE)
            codegen_common.register_backend_for_device(
                DEVICE,
                self._make_scheduling,
                stock.wrapper_codegen,
                stock.cpp_wrapper_codegen,
                stock.fx_wrapper_codegen,
                device_custom_pass=SplitAddmmPass(self),
                device_custom_config=custom_config,
            )
            stock_lowering = patches.keep_item(inductor_lowering.lowerings, mm)
            inductor_lowering.register_lowering(mm, type_promotion_kind=None)(_make_mm_lowering(stock_lowering))
            # As torch-spyre does: every op realized, so one buffer is one op (and one OpSpec).
            patches.setattr(ir.Loops, "has_large_inner_fn", _realize_every_op)
        except BaseException:
            self.uninstall()
            raise
        self.call_sites.clear()
        self.bundles_written.clear()
        self._served.clear()
        self.faults.clear()

    def uninstall(self) -> None:
        patches, self._patches = self._patches, None
        self._last_nodes = ()
        if patches is not None:
            patches.undo()

    @property
    def installed(self) -> bool:
        return self._patches is not None

    def _make_scheduling(self, scheduler: Any) -> ReferenceScheduling:
        return ReferenceScheduling(scheduler, backend=self)

    # the hook's questions

    def tracing_modules(self) -> Sequence[ModuleType]:
        # The inherited CppScheduling.codegen_comment calls the name cpp.py imported.
        return (cpp_codegen,)

    def opspecs_for(self, kernel_name: str, node_schedule: Any) -> list[OpSpecRecord]:
        """The OpSpecs of the call site being recorded (an extern call has none), one per
        buffer: a buffer whose handle could not be built is an OpSpec without one, with
        the reason in ``missing_handle`` (the hook counts and reports it)."""
        if not isinstance(node_schedule, (list, tuple)):
            return []
        nodes = _flat_nodes(node_schedule)
        if (
            self.call_sites
            and self.call_sites[-1][0] == kernel_name
            and self._last_nodes == tuple(map(id, nodes))
        ):
            specs, missing = self.call_sites[-1][1], self._last_missing
        else:  # asked outside define_kernel -> codegen_comment: rebuild from the nodes
            specs, missing = self._build_opspecs(nodes, ())
        return [
            msgspec.structs.replace(record, missing_handle=why) if why else record
            for record, why in zip(opspec_mod.opspec_records(specs), missing)
        ]

    def take_faults(self) -> list[Fault]:
        faults, self.faults = self.faults, []
        return faults

    # called by ReferenceScheduling.define_kernel

    def _record_kernel(self, kernel_name: str, nodes: Sequence[Any], args: Any) -> list[OpSpec]:
        flat = _flat_nodes(nodes)
        try:
            call_args = list(args.cpp_argdefs()[1])
        except Exception:  # no argument list: OpSpec arguments get index -1
            call_args = []
        specs, self._last_missing = self._build_opspecs(flat, call_args)
        self.call_sites.append((kernel_name, specs))
        self._last_nodes = tuple(map(id, flat))
        return specs

    def debug_handle(self, buffer: Any) -> DebugHandle | None:
        """The DebugHandle of one IR buffer (``opspec.build_debug_handle``)."""
        return opspec_mod.build_debug_handle(buffer)

    def _build_opspecs(self, nodes: Sequence[Any], call_args: Sequence[str]) -> tuple[list[OpSpec], list[str | None]]:
        """One OpSpec per buffer, whatever happens: a buffer is never dropped."""
        built = []
        for node in nodes:
            try:
                built.append(build_opspec(node, call_args, self.debug_handle))
            except Exception as exc:  # provenance is debug-only: reported, never raised
                built.append(_failed_opspec(node, exc))
        return [spec for spec, _ in built], [why for _, why in built]

    def bundle_handles(self, kernel_name: str) -> list[dict[str, Any] | None] | None:
        return self._served.get(kernel_name)

    def _write_bundles(self, kernel_name: str, specs: Sequence[OpSpec]) -> None:
        if self.bundle_dir is None and not self.kernel_cache:
            return
        documents = [bundle_document(i, spec) for i, spec in enumerate(specs)]
        if self.path_redactor is not None:
            for document in documents:
                for body in document.values():
                    if body["debug_handle_"] is not None:
                        _redact_handle(body["debug_handle_"], self.path_redactor)
        if self.kernel_cache:
            folder = _spyre_cache_root() / bundle_cache_key(documents)
            cached = _read_bundles(folder, len(documents))
            if cached is not None:  # a hit: what torch-spyre serves, handles and all
                self._served[kernel_name] = [bundles.handle_of(d) for d in cached]
                return
        else:
            folder = self.bundle_dir / kernel_name
        self._served[kernel_name] = [bundles.handle_of(d) for d in documents]
        for i, document in enumerate(documents):
            path = folder / BUNDLE_FILE.format(i)
            try:
                text = json.dumps(document, indent=2, sort_keys=True) + "\n"
                self.bundles_written.append(atomic_write_text(path, text))
            except Exception as exc:  # a bundle is a by-product: never fail a compile over it
                self.faults.append(Fault("file write", f"{type(exc).__name__}: bundle {path}: {exc}"))


def bundle_cache_key(documents: Sequence[dict[str, Any]]) -> str:
    """torch-spyre's kernel-cache key: a hash of the bundles with ``debug_handle_``
    stripped, so two compiles whose specs match share bundles whatever their provenance."""
    stripped = [
        {name: {k: v for k, v in body.items() if k != "debug_handle_"} for name, body in document.items()}
        for document in documents
    ]
    canonical = json.dumps(stripped, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def _spyre_cache_root() -> Path:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return Path(cache_dir()) / "inductor-spyre-cache"


def _read_bundles(folder: Path, count: int) -> list[dict[str, Any]] | None:
    """The cached bundles of a kernel, or None when the cache does not hold all of them."""
    try:
        documents = [json.loads((folder / BUNDLE_FILE.format(i)).read_text()) for i in range(count)]
    except (OSError, ValueError):
        return None
    return documents if all(isinstance(d, dict) and len(d) == 1 for d in documents) else None
