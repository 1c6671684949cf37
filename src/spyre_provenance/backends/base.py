"""The one seam between the hook and a backend.

A backend adapter installs whatever the device needs for a tracked compile (a scheduling
class, lowerings) and tells the hook two things the hook cannot know by itself:
which modules hold their own reference to Inductor's
``set_kernel_post_grad_provenance_tracing`` (backends import it by name, so patching
``torch._inductor.debug`` alone misses them), and the OpSpecs of a kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from spyre_provenance.model.records import Fault, OpSpecRecord

if TYPE_CHECKING:
    from spyre_provenance.links.redact import Redactor

#: Inductor's function (``torch._inductor.debug``) that gives a kernel call its debug handle
#: and writes the ``[Provenance debug handles]`` comment: the hook wraps it wherever it was
#: imported by name, and the torch-spyre adapter looks for it in a scheduling's code.
TRACING_FUNCTION = "set_kernel_post_grad_provenance_tracing"


class CallSiteRecorder(Protocol):
    """What the hook hands a backend at install: the one thing a backend may call back."""

    def record_call_site(self, node_schedule: Any, kernel_name: str) -> int | None: ...


class Backend:
    """Stock behaviour; subclasses override what their device does differently."""

    name = "inductor"
    device = "cpu"
    #: True when the backend's scheduling calls ``set_kernel_post_grad_provenance_tracing``
    #: and writes the ``[Provenance debug handles]`` comment itself. When False the backend
    #: calls ``hook.record_call_site`` before emitting each kernel call.
    writes_handle_comments = True
    #: False: the mapping must stay torch's own (stock Inductor), so its gaps are upstream's
    #: and reported as hints. True: the hook completes it (links graph-input copies to their
    #: consumers and inlined nodes to their kernels, announces fallback calls Inductor
    #: leaves unannounced) and judges every gap a violation.
    extends_upstream = False
    #: set by the hook when paths are redacted (``spyre_provenance.links.redact.Redactor``): a
    #: backend that writes files of its own applies it to the paths in them
    path_redactor: Redactor | None = None
    #: set by the hook when it audits (``capture.audit_probe``): a backend with
    #: pre-scheduling passes calls it with the FX graph right before (``"in"``) and after
    #: (``"out"``) them, so the audit counts what the passes keep
    pass_observer: Callable[[Any, str], None] | None = None

    @contextlib.contextmanager
    def writing_nothing(self) -> Iterator[Backend]:
        """This instance, for a compile whose files nobody reads (the untracked
        ``fallback_random`` comparison): no bundle folder, no kernel cache, while inside."""
        saved = {name: vars(self)[name] for name in ("bundle_dir", "kernel_cache") if name in vars(self)}
        for name in saved:
            setattr(self, name, None if name == "bundle_dir" else False)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def install(self, recorder: CallSiteRecorder | None = None) -> None:
        """Make this backend the one Inductor uses for ``device`` (undone by uninstall).

        ``recorder`` is what a backend that writes no handle comments calls for each
        kernel call (the hook's session); None outside a tracked compile."""

    def uninstall(self) -> None:
        """Restore what install replaced."""

    def compiler(self) -> Any:
        """What ``torch.compile`` is handed as its ``backend``: Inductor, which a device's
        own ``compile_fx`` wrapper (torch-spyre's) extends from inside."""
        return "inductor"

    def place(self, model: Any, calls: list[tuple[Any, ...]]) -> tuple[Any, list[tuple[Any, ...]]]:
        """The model and its calls on the device this backend compiles for; the CPU
        backends compile them as built."""
        return model, calls

    def tracing_modules(self) -> Sequence[ModuleType]:
        """Modules, besides Inductor's own, that imported the tracing function by name."""
        return ()

    def opspecs_for(self, kernel_name: str, node_schedule: Any) -> list[OpSpecRecord] | None:
        """The kernel's OpSpecs in emission order, or None when the backend has none."""
        return None

    def bundle_handles(self, kernel_name: str) -> list[dict[str, Any] | None] | None:
        """The ``debug_handle_`` of each SuperDSC bundle serving the kernel, one per OpSpec
        in order (from the bundle files as served, a kernel-cache hit included); None when
        the backend has no bundles to check."""
        return None

    def kernel_bundle(self, kernel_name: str) -> tuple[str | None, str | None] | None:
        """(torch-spyre's kernel provenance key, the bundle folder's name) of the kernel of
        this name in the graph being compiled; None when the backend has no bundles."""
        return None

    def take_faults(self) -> list[Fault]:
        """Failures of the backend's own work (files it writes) since the last call; the
        hook reports them like its own, on the graph being compiled."""
        return []

    def written_bundles(self, kernel_names: Sequence[str]) -> dict[str, list[str]]:
        """The bundle files the backend wrote for these kernels at code generation, by
        kernel name: each folder's name, then each file's text (stored with the Inductor
        cache entry, so a hit writes them again: ``restore_bundles``). Empty when the
        backend's bundles are made when the generated module loads, as torch-spyre's are,
        or it has none."""
        return {}

    def restore_bundles(self, bundles: dict[str, list[str]]) -> None:
        """Write again the bundles ``written_bundles`` gave, on an Inductor cache hit: a hit
        generates no kernel, so the backend wrote nothing. Failures go to ``take_faults``."""


class StockInductor(Backend):
    """Inductor's own CPU code generation, unchanged: extern GEMMs, ``cpp_fused_*`` kernels.

    ``beyond_upstream``: the hook completes the mapping as on the Spyre backends (gradients
    linked to pre-grad nodes through autograd's ``seq_nr``, write-backs and helper kernels
    given the source of the value or reader they serve, graph-input copies and inlined nodes
    linked, fallback calls announced) and judges every gap a violation, instead of logging
    torch's own mapping."""

    name = "inductor"
    #: the name it goes by when it completes the mapping: in summaries and the diagnostics'
    #: ``backend``, so a reader of the log never takes its gaps for stock Inductor's own
    BEYOND_UPSTREAM_NAME = "inductor (beyond upstream)"

    def __init__(self, *, beyond_upstream: bool = False) -> None:
        self.extends_upstream = beyond_upstream
        if beyond_upstream:
            self.name = self.BEYOND_UPSTREAM_NAME
