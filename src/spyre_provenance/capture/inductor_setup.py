"""Inductor as tracking needs it, beyond the hook's two seams: its provenance tracking kept
on, a handle comment for the fallbacks written without one, and the audit's observers (with
the graph caches off, for the audit alone).

Each change goes through the session's ``Patches``, so ``Session.uninstall`` undoes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from spyre_provenance.base.patches import Patches

#: Inductor IR classes whose call is written without a handle comment (torch 2.13): the
#: scatter and index_put fallbacks, ``bernoulli_`` (dropout's fallback) and the kernels that
#: mutate their first argument in place (``resize_storage_bytes_``).
UNANNOUNCED_FALLBACKS = (
    "ScatterFallback",
    "IndexPutFallback",
    "InplaceBernoulliFallback",
    "MutatingFirstArgExternKernel",
)


#: Inductor's setting that turns its provenance tracking on (0: off; 1: normal; 2: basic).
TRACKING_LEVEL = "trace.provenance_tracking_level"


#: compile_fx's functions a compile runs through: its entry (Dynamo's backend, AOTInductor,
#: ``standalone_compile``; AOTAutograd's cache key and the pre-grad passes run under it) and
#: each graph's compile, forward and backward alike (the FX-graph cache key, code generation).
COMPILE_ENTRIES = ("compile_fx", "_compile_fx_inner")


def keep_provenance_on(patches: Patches) -> None:
    """Inductor's provenance tracking on inside every compile while tracking, whatever the
    program sets or patches: at the level the program has when the compile starts, or 1
    where that is 0.

    Programs switch it themselves (PyTorch's own tests compile under
    ``config.patch("trace.provenance_tracking_level", 1)``), so a value set once at the start
    would be undone when such a patch ends, and every later compile would go unrecorded.
    torch lets a forced value (what its ``env_name_force`` variables set) win over every
    assignment and patch; it is forced only while a compile runs, so outside one the
    program reads back what it set, and its own patches stay its own.
    """
    import torch._inductor.compile_fx as compile_fx
    from torch._inductor import config

    entry = getattr(config, "_config", {}).get(TRACKING_LEVEL)
    if entry is None or not hasattr(entry, "env_value_force"):  # a torch without forced values
        if config.trace.provenance_tracking_level == 0:
            patches.setattr(config.trace, "provenance_tracking_level", 1)
        return
    forced = _Forced(config, entry)
    for name in COMPILE_ENTRIES:
        if callable(getattr(compile_fx, name, None)):
            patches.wrap(compile_fx, name, forced.around)


class _Forced:
    """The level forced for the outermost compile running, put back when it ends."""

    def __init__(self, config: Any, entry: Any) -> None:
        self.config, self.entry = config, entry
        self.depth = 0
        self.before: Any = None  # the forced value the outermost compile found
        self.lock = threading.RLock()

    def around(self, original: Any) -> Any:
        def compile_entry(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                if self.depth == 0:
                    self.before = self.entry.env_value_force
                    self.entry.env_value_force = int(self.config.trace.provenance_tracking_level) or 1
                self.depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                with self.lock:
                    self.depth -= 1
                    if self.depth == 0:
                        self.entry.env_value_force = self.before

        compile_entry.__wrapped__ = original  # type: ignore[attr-defined]
        return compile_entry


def bypass_graph_caches(patches: Patches) -> None:
    """Turn off the FX-graph and AOTAutograd caches while tracking.

    A cache hit generates no kernels, so the hook would see nothing: no records, no
    OpSpec artifact, no files. Compiling again costs time but gives the same bytes
    (the output is deterministic), and logs the pre-grad graph that upstream's cache
    replay leaves out. Kernel-level C++ caches stay on.
    """
    import torch._functorch.config as functorch_config
    from torch._inductor import config

    patches.setattr(config, "fx_graph_cache", False)
    patches.setattr(functorch_config, "enable_autograd_cache", False)
    # TORCHINDUCTOR_FX_GRAPH_CACHE=1 / TORCHINDUCTOR_AUTOGRAD_CACHE=1 (torch's env_name_force)
    # win over any assignment: a warm cache would then be hit and nothing recorded.
    for module, name in ((config, "fx_graph_cache"), (functorch_config, "enable_autograd_cache")):
        entry = getattr(module, "_config", {}).get(name)
        if getattr(entry, "env_value_force", None) is True:
            patches.setattr(entry, "env_value_force", False)


def announce_fallbacks(patches: Patches, on_fault: Callable[[str, int | None, BaseException], None]) -> None:
    """Give the fallback calls Inductor writes without a handle comment one.

    ``ScatterFallback`` and ``IndexPutFallback`` write their call (``aten.scatter_reduce_.two(...)``)
    without the ``codegen_comment`` other extern kernels get, so the call site has no
    handle and no page links it. Calling it first takes the handle through the same
    tracing function and writes the comment on the line before the call. Done on
    every backend: Inductor's own tracing records the call site, so on stock Inductor
    torch's own mapping lists it too (and still equals the hook's), and its page links
    it; the handles after it count one more than in an untracked compile. A failure to
    write the comment goes to ``on_fault`` (``Faults.fault``), never into the compile.
    """
    from torch._inductor import ir

    for name in UNANNOUNCED_FALLBACKS:
        cls = getattr(ir, name, None)
        original = getattr(cls, "__dict__", {}).get("codegen")
        if original is None:
            continue

        def codegen(node: Any, wrapper: Any, _original: Any = original) -> None:
            try:
                node.codegen_comment(wrapper)
            except Exception as exc:  # noqa: BLE001 - never break a compile
                on_fault("record collection", None, exc)
            _original(node, wrapper)

        codegen.__wrapped__ = original  # type: ignore[attr-defined]
        patches.setattr(cls, "codegen", codegen)


def observe_for_audit(patches: Patches, probe: Any, inductor: Any, backend: Any) -> None:
    """The audit's two extra seams: an observer among Inductor's pre-grad custom passes
    (it changes nothing) and the backend's pre-scheduling pass boundaries. ``probe``: the
    session's ``AuditProbe``; ``inductor``: its ``Inductor``; ``backend``: its backend."""
    from torch._inductor import config
    from torch._inductor.custom_graph_pass import CustomGraphPass, get_custom_graph_passes

    # the level every compile runs with while tracking (``keep_provenance_on``)
    probe.tracking_level = int(config.trace.provenance_tracking_level) or 1
    record_pre_grad = probe.pre_grad

    class PreGradObserver(CustomGraphPass):
        def __call__(self, graph: Any) -> None:
            try:
                compile_id = inductor.compile_id()
            except Exception:  # noqa: BLE001 - counted under no id rather than not at all
                compile_id = "unknown"
            record_pre_grad(graph, compile_id)

        def uuid(self) -> str:  # a constant: it reads, so it never changes a cache key's meaning
            return "spyre-provenance audit: pre-grad observer"

    passes = [*get_custom_graph_passes(config.pre_grad_custom_pass), PreGradObserver()]
    patches.setattr(config, "pre_grad_custom_pass", passes)
    patches.setattr(backend, "pass_observer", probe.pass_boundary)
