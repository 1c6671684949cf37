"""What a reference-backend kernel is at run time: its compiled C++ function behind a
``.run(...)``, so the wrapper defines and calls its kernels as torch-spyre main's does
(REFERENCE.md section 4.1)::

    sdsc_fused_linear_relu_0 = async_compile.sdsc_reference([...arg types...], r'''...C++...''')
    ...
    # [Provenance debug handles] sdsc_fused_linear_relu_0:1
    sdsc_fused_linear_relu_0.run(buf2, buf4, arg2_1, ...)

``ReferenceBackend.install`` adds the method to Inductor's ``AsyncCompile`` (torch-spyre adds
its ``sdsc`` the same way) and ``uninstall`` takes it away. The name is the reference's own,
so torch-spyre's method is never shadowed.
"""

from __future__ import annotations

from typing import Any

#: The ``AsyncCompile`` method a reference kernel's definition calls.
ASYNC_COMPILE_METHOD = "sdsc_reference"


class SpyreKernel:
    """A kernel's function, called through ``run``. With parallel compile, Inductor hands a
    future (``async_compile.cpp_pybinding``); it is resolved on the first call, as
    ``async_compile.wait`` would have resolved the bare function."""

    __slots__ = ("_function",)

    def __init__(self, function: Any) -> None:
        self._function = function

    def run(self, *args: Any) -> Any:
        function = self._function
        if not callable(function):  # a future of the compiled function
            function = self._function = function.result()
        return function(*args)


def compile_kernel(async_compile: Any, argtypes: list[str], source_code: str) -> SpyreKernel:
    """``AsyncCompile.sdsc_reference``: Inductor's C++ binding of the kernel, behind a ``run``."""
    return SpyreKernel(async_compile.cpp_pybinding(argtypes, source_code))
