"""What every stand-in shares and no torch-spyre has: the kernel body, as Inductor's CPU C++.

torch-spyre turns a kernel's OpSpecs into SuperDSC (or KTIR) for the device. A stand-in must
run on the CPU, so its ``SpyreKernel`` carries an Inductor C++ ``KernelGroup`` as the body and
the wrapper calls that. ``CppScheduling`` is held here, not inherited by the stand-ins' own
``SuperDSCScheduling(BaseScheduling)``: ``CppScheduling`` overrides ``codegen_comment`` (with a
module-level import of the tracing function), so a stand-in subclassing it would not have the
comment method of the generation it stands for.

``SchedulingBody`` is the part of ``SuperDSCScheduling`` the generations share (codegen_node
and define_kernel as main has them); each generation's module defines its class from it, so
only what differs between generations (the comment method, the kernel prefix) is written
there. A test that puts a stand-in on ``sys.path`` puts this folder there too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.dependencies import WeakDep
from torch._inductor.utils import IndentedBuffer, Placeholder, get_fused_kernel_name, get_kernel_metadata
from torch._inductor.virtualized import V


class CpuBody:
    """Inductor's C++ code generation, one kernel group per torch-spyre kernel."""

    def __init__(self, scheduler: Any) -> None:
        self._cpp = CppScheduling(scheduler)

    def group_fn(self, sizes: Any) -> Any:
        return self._cpp.group_fn(sizes)  # the C++ proxy reads node.group in this form

    def generate(self, node: Any) -> Any:
        """The C++ of one scheduler node; Inductor's kernel proxy also marks its nodes run."""
        self._cpp.codegen_node(node)
        group = self._cpp.kernel_group
        self._cpp.reset_kernel_group()
        return group


def source(group: Any) -> str:
    return group.codegen_group()


def definition(group: Any, src_code: str, kernel_name: str) -> str:
    """What torch-spyre writes as ``async_compile.sdsc(name, ...)``: here a CPU binding."""
    src_code = src_code.replace(str(Placeholder.KERNEL_NAME), "kernel")
    src_code = src_code.replace(str(Placeholder.DESCRIPTIVE_NAME), kernel_name)
    src_code = src_code.replace("#pragma CMT", "//")
    _, _, arg_types = group.args.cpp_argdefs()
    body = IndentedBuffer()
    body.writeline(f"async_compile.cpp_pybinding({arg_types!r}, r'''")
    body.splice(src_code, strip=True)
    body.writeline("''')")
    return body.getvalue()


def call(group: Any, kernel_name: str) -> None:
    # torch-spyre writes f"{name}.run(args)"; the CPU binding is called like Inductor's C++
    group.call_kernel(V.graph.wrapper_code, kernel_name)


class Tensor(NamedTuple):
    """One buffer a scheduler node reads or writes, as a stand-in's TensorArg needs it."""

    is_input: bool
    name: str
    dtype: str  # torch dtype name: float32, float16, ...
    size: list[Any]
    index: Any  # the sympy index of the access, or None for a whole-buffer dependency


def tensors(snode: Any) -> list[Tensor]:
    """The node's reads, then its writes, in Inductor's dependency order."""
    found = []
    for is_input, deps in ((True, snode.read_writes.reads), (False, snode.read_writes.writes)):
        for dep in sorted(deps, key=lambda d: d.name):
            if isinstance(dep, WeakDep):  # orders a mutation, moves no data: no argument
                continue
            try:
                dtype = str(V.graph.get_dtype(dep.name)).removeprefix("torch.")
                size = list(V.graph.get_buffer(dep.name).get_size())
            except Exception:  # noqa: BLE001 - a stand-in detail, never worth a failed compile
                dtype, size = "unknown", []
            found.append(Tensor(is_input, dep.name, dtype, size, getattr(dep, "index", None)))
    return found


class SchedulingBody:
    """What every generation's ``SuperDSCScheduling`` has alike, as torch-spyre main has it:
    no fusion, one kernel per ``codegen_node`` in main's order (OpSpecs into the kernel ->
    ``define_kernel(src_code, node_schedule, kernel)`` -> ``codegen_comment`` ->
    ``kernel.call_kernel(name)`` -> free buffers), and the kernel names. A generation mixes
    it in before ``BaseScheduling`` and sets ``kernel_type`` (its ``SpyreKernel``) and, where
    it has one, its own ``codegen_comment`` and ``config`` (a generation without one names
    kernels ``sdsc_`` only; with one, ``config.ktir_emitter`` makes them ``ktir_``)."""

    kernel_type: Any = None
    config: Any = None
    #: a generation with bundles (``execution.async_compile.SpyreAsyncCompile``): each
    #: kernel's OpSpecs become a bundle folder and a runner, as torch-spyre's wrapper does
    #: when the generated module loads (here at definition, still before the dump)
    async_compile: Any = None

    def __init__(self, scheduler: Any) -> None:
        super().__init__(scheduler)
        self._cpu = CpuBody(scheduler)

    def group_fn(self, sizes: Any) -> Any:
        return self._cpu.group_fn(sizes)

    def flush(self) -> None:
        pass  # every kernel is emitted by its own codegen_node

    def can_buffer_be_removed_through_fusion(self, name: str, fused_node_names: Any) -> bool:
        return False

    def can_fuse_vertical(self, node1: Any, node2: Any) -> bool:
        return False

    def can_fuse_horizontal(self, node1: Any, node2: Any) -> bool:
        return False

    def codegen_node(self, node: Any) -> None:
        node_schedule = [n for n in node.get_nodes() if n.get_name() not in self.scheduler.removed_ops]
        if not node_schedule:
            return
        kernel = self.kernel_type(self._cpu.generate(node))  # stand-in: also marks the nodes run
        for snode in node_schedule:
            kernel.store(snode)
        src_code = kernel.codegen_kernel()
        kernel_name = self.define_kernel(src_code, node_schedule, kernel)
        kernel.kernel_name = kernel_name
        self.codegen_comment(node_schedule, kernel_name)
        kernel.call_kernel(kernel.kernel_name)
        self.free_buffers_in_scheduler()

    def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        fused_name = get_fused_kernel_name(node_schedule, "original_aten")
        kernel_name = "_".join([self.kernel_prefix(), fused_name, wrapper.next_kernel_suffix()])
        wrapper.src_to_kernel[src_code] = kernel_name
        wrapper.define_kernel(
            kernel_name,
            definition(kernel.body, src_code, kernel_name),
            "\n".join(get_kernel_metadata(node_schedule, wrapper)),
            gpu=False,
        )
        if self.async_compile is not None and self.kernel_prefix() == "sdsc":  # KTIR writes no bundles
            self.async_compile.sdsc(kernel_name, kernel.op_specs)
        return kernel_name

    def kernel_prefix(self) -> str:
        return "ktir" if getattr(self.config, "ktir_emitter", False) else "sdsc"
