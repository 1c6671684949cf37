"""A torch-spyre compute step's name (its ``cb_name``), built as torch-spyre main builds it."""

from __future__ import annotations

from pathlib import PurePosixPath


def cb_name(code_dir: str, step: int, profiler_name: str | None = None) -> str:
    """A compute step's ``cb_name`` as torch-spyre main builds it: the runner hands
    ``prepare_kernel`` its ``code_dir + "/spyreCodeDir"`` (``execution/kernel_runner.py:60``),
    which names the step ``<profiler name>#<step>`` when the kernel has a provenance name,
    else by the last two folders of that path and ``bundle.mlir``, then ``#<step>``
    (``csrc/prepare_kernel.cpp:344-368``)."""
    spyrecode_dir = PurePosixPath(code_dir + "/spyreCodeDir")
    if profiler_name:
        return f"{profiler_name}#{step}"
    return f"{spyrecode_dir.parent.name}/{spyrecode_dir.name}/bundle.mlir#{step}"
