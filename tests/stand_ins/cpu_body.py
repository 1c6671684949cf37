"""What every stand-in shares and no torch-spyre has: the kernel body, as Inductor's CPU C++.

torch-spyre turns a kernel's OpSpecs into SuperDSC (or KTIR) for the device. A stand-in must
run on the CPU, so its ``SpyreKernel`` carries an Inductor C++ ``KernelGroup`` as the body and
the wrapper calls that. ``CppScheduling`` is held here, not inherited by the stand-ins' own
``SuperDSCScheduling(BaseScheduling)``: ``CppScheduling`` overrides ``codegen_comment`` (with a
module-level import of the tracing function), so a stand-in subclassing it would not have the
comment method of the generation it stands for.

Nothing here is a seam the adapter touches (see README.md); a test that puts a stand-in on
``sys.path`` puts this folder there too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.dependencies import WeakDep
from torch._inductor.utils import IndentedBuffer, Placeholder
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
