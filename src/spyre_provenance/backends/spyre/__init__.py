"""``--backend spyre``: the adapter for the real torch-spyre, active only when it imports.

torch-spyre (github ``torch-spyre/torch-spyre``) cannot be installed here, so everything below
was read from its source; keep this list in step with it when the adapter breaks.

Registration and device
  ``torch_spyre/_inductor/__init__.py::_autoload()`` calls
  ``torch._inductor.codegen.common.register_backend_for_device(DEVICE_NAME,
  SuperDSCScheduling, SpyrePythonWrapperCodegen[, device_custom_config=config])``;
  ``DEVICE_NAME = "spyre"`` (``torch_spyre/constants.py``, later
  ``torch_spyre/_inductor/constants.py``), the PrivateUse1 device renamed with
  ``torch.utils.rename_privateuse1_backend``. ``_autoload`` runs from torch's backend
  autoload entry point, so after ``import torch`` the registry normally holds it already.

The scheduling class: ``torch_spyre/_inductor/scheduler.py::SuperDSCScheduling(BaseScheduling)``
  ``codegen_node``: ``SpyreKernel(pool_size=...)`` -> ``_codegen_into_kernel`` (each
  ``snode.codegen`` lands in ``SpyreKernel.store``/``store_reduction``, which append one
  ``create_op_spec(...)`` per ComputedBuffer to ``kernel.op_specs``) -> ``src_code =
  kernel.codegen_kernel()`` -> ``kernel_name = self.define_kernel(src_code,
  all_schedule_nodes, kernel)`` -> ``snode.mark_run()`` -> ``self.codegen_comment(
  all_schedule_nodes, kernel_name)`` -> ``kernel.call_kernel(kernel.kernel_name)`` (writes
  ``{name}.run(args)``) -> ``kernel.emit_layout_restores(...)``. ``_codegen_counted_loop``
  follows the same order and wraps the OpSpecs in ``LoopSpec``s.
  Not supported: the older layout, ``torch_spyre/_inductor/dsc.py::SuperDSCScheduling
  (SIMDScheduling)`` (Nov 2025, 859df83 and f03382a). Its kernels built ``KernelSpec``s, not
  OpSpecs, so there was nothing to read but the call site, and the release read with its
  pins (859df83) requires ``torch~=2.7.1``, below the torch this project supports (>= 2.9):
  the two cannot be installed together, so a fallback to it would be code no install runs.

Kernel names (``define_kernel(src_code, node_schedule, kernel)``)
  ``"_".join([dsc_type or method, get_fused_kernel_name(node_schedule, "original_aten"),
  wrapper.next_kernel_suffix()])`` with ``"sdsc"`` (``"ktir"`` when
  ``torch_spyre._inductor.config.ktir_emitter`` is on); a src_code seen before reuses its name
  through ``wrapper.src_to_kernel``.

Handles and the wrapper comment
  Main (scheduler.py at 0b06ec7 and later) neither overrides ``codegen_comment`` nor imports
  ``set_kernel_post_grad_provenance_tracing`` by name: it inherits Inductor's method. On torch
  2.13 ``BaseScheduling.codegen_comment`` (``torch/_inductor/scheduler.py``) imports the
  function lazily from ``torch._inductor.debug``, calls it and writes ``# [Provenance debug
  handles] name:N``; on older torch the base method wrote nothing. (``SIMDScheduling``
  resolves to that base method too; ``CppScheduling`` and ``TritonScheduling`` override it
  with a module-level by-name import.) Open PR #3449 overrides ``codegen_comment(self,
  node_schedule, kernel_name=None)``, importing the function lazily inside the method, and
  records ``(kernel_name, N)`` (``provenance_artifact.record_kernel_registration``, aliases
  ``"{kernel_name}:{N}"``) for a ``spyre_provenance.json`` sidecar. Detection below covers
  all of these and a by-name import.

OpSpecs (``torch_spyre/_inductor/op_spec.py``)
  ``@dataclass OpSpec(op, is_reduction, iteration_space: dict[Symbol, tuple[Expr, int]], args:
  Sequence[TensorArg], op_info, tiled_symbols=[], tiled_symbol_trip_counts={},
  symbolic_dim_bounds={}, node_output_ranges=None, debug_handle: DebugHandle | None = None)``;
  ``LoopSpec(count, body)`` nests them; ``UnimplementedOp(op)``. Frozen dataclasses
  ``SourceLoc(file, start_line, start_col=0, end_line=None, end_col=None)``,
  ``ProvenanceTransform(kind, pass_name, reason=None)``, ``DebugHandle(id, source, aten_op,
  ir_chain, fused_from=(), transform_history=())``; built in ``SpyreKernel.create_op_spec`` by
  ``provenance.build_debug_handle(ir_node)`` (None on any failure). Releases before that have
  no ``debug_handle`` field. The list lives only on the ``SpyreKernel`` (``op_specs``), a
  local of ``codegen_node`` whose one hand-off is ``define_kernel(..., kernel)``.

What the adapter does with that
  * ``probe`` (``available``, ``--backend auto``) answers yes only when ``torch_spyre``
    imports and ``find_scheduling`` finds the class, with a one-line reason either way; a
    failed probe leaves no ``torch_spyre`` module behind.
  * ``place`` puts the model and its tensor inputs on ``spyre`` before ``torch.compile``:
    torch-spyre's ``compile_fx`` wrapper (``_inductor/__init__.py``, ``_uses_spyre``) engages
    only for a graph with a tensor there. A compile in which no kernel came from its
    scheduling is judged as not torch-spyre's (``compile.outcome.NO_TORCH_SPYRE_KERNEL``).
    torch-spyre main 9a6b71e runs in the test suite on a stand-in for its ``_C`` alone
    (``tests/spyre_main``, docs/torch-spyre-main.md).
  * ``install`` finds ``SuperDSCScheduling`` (the device registry, else
    ``torch_spyre._inductor.scheduler``), registers it for
    ``device`` when the registry holds something else, and wraps ``define_kernel`` to keep
    ``kernel.op_specs`` per kernel name on the graph being compiled.
  * Generation: ``codegen_comment`` as the class resolves it (MRO) either names
    ``set_kernel_post_grad_provenance_tracing`` in its code (``co_names``, which a
    function-local import also fills) -> it writes handles, the hook's wrappers see the
    calls (through ``torch._inductor.debug`` or, for a by-name import, the module returned
    by ``tracing_modules``) and N is reused (main, PR #3449); or it does not (older
    releases on older torch) -> ``codegen_comment`` is wrapped to call
    ``recorder.record_call_site`` (the hook's session, handed over at ``install``) right
    after the original, i.e. on the line before the call. That wrapper also checks
    Inductor's handle counter and stays out of the way when the original did take a handle,
    so a wrong guess never doubles comments.
  * ``opspecs_for`` turns the kept list into records (``opspecs.opspec_records``): LoopSpecs
    flattened, fields read by name (old and new OpSpecs alike), an ``UnimplementedOp`` kept
    as a handleless record that says why. Nothing here depends on the ``sdsc_`` prefix:
    ``ktir_`` kernels (``config.ktir_emitter``) go the same way.
  * Bundles: torch-spyre's ``SpyreAsyncCompile.sdsc(kernel_name, specs, ...)`` (in
    ``torch_spyre/execution/async_compile.py``, run when the generated wrapper module loads)
    writes a kernel's bundles with ``_inductor/codegen/bundle.py::generate_bundle`` into
    ``cache_dir()/inductor-spyre/<uuid8>_<name>_XXXXXXXX/`` (kernel cache off), or finds
    them in ``cache_dir()/inductor-spyre-cache/<key>/`` (on; the key ignores
    ``debug_handle_``, so a hit serves an earlier compile's handles), and every path ends in
    ``SpyreSDSCKernelRunner(kernel_name, code_dir, ...)`` (``execution/kernel_runner.py``).
    ``install`` wraps that ``__init__`` to note ``code_dir`` per kernel on the graph, and
    the key of the runner's ``kernel_provenance`` descriptor (``kernel_bundle``);
    ``bundle_handles`` reads the ``sdsc_<i>.json`` there when the graph is complete (the
    hook asks at the dump, after the module loaded). A folder that cannot be read is a
    fault; a generation without ``execution/kernel_runner.py``, or a KTIR kernel (no
    ``sdsc_*.json``), is "not checked".
  * ``uninstall`` restores every attribute and the registry entry exactly.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from spyre_provenance.backends.base import TRACING_FUNCTION, Backend, CallSiteRecorder
from spyre_provenance.base import errors
from spyre_provenance.base.patches import Patches
from spyre_provenance.model.records import Fault, OpSpecRecord
from spyre_provenance.model.superdsc import served_handles

DEVICE = "spyre"
SCHEDULING_CLASS = "SuperDSCScheduling"
#: Where torch-spyre keeps its scheduling class (the older dsc.py layout is not supported).
SCHEDULING_MODULE = "torch_spyre._inductor.scheduler"
WRAPPER_MODULE, WRAPPER_CLASS = "torch_spyre._inductor.wrapper", "SpyrePythonWrapperCodegen"
#: Inductor's per-graph handle counter in ``torch._inductor.debug``.
HANDLE_COUNTER = "_inductor_kernel_provenance_debug_handle"
#: Where torch-spyre's kernel runners live; each knows its kernel's bundle folder (``code_dir``).
RUNNER_MODULE = "torch_spyre.execution.kernel_runner"
RUNNER_CLASSES = ("SpyreSDSCKernelRunner", "SpyreFrontendOnlyRunner")  # the second: TORCH_SPYRE_FRONTEND_ONLY
#: Per-graph side tables on the GraphLowering: they die with the graph, so no stale entries.
_GRAPH_OPSPECS = "_spyre_provenance_opspecs"
_GRAPH_BUNDLE_DIRS = "_spyre_provenance_bundle_dirs"
_GRAPH_KEYS = "_spyre_provenance_kernel_keys"


class DeviceUnavailable(RuntimeError):
    """The model or its inputs cannot be placed on the Spyre device; ``str(exc)`` is one line."""


def available() -> bool:
    """True only when the adapter can install: ``probe()`` says so, and why not."""
    return probe()[0]


def probe(device: str = DEVICE) -> tuple[bool, str]:
    """(can the adapter install on this torch-spyre, one line saying why).

    True only when ``torch_spyre`` imports and its ``SuperDSCScheduling`` is found where
    ``install`` looks (``find_scheduling``); a package that is merely on the path but fails to
    import (torch-spyre's ``_C`` extension needs IBM's libraries) is no backend. When the
    answer is no, every ``torch_spyre`` module this call imported is forgotten again, so no
    half-imported package is left behind for a later import to trip over.
    """
    try:
        if importlib.util.find_spec("torch_spyre") is None:
            return False, "torch_spyre is not installed"
    except (ImportError, ValueError) as exc:  # a broken parent, or a module without __spec__
        return False, f"torch_spyre cannot be looked up: {_one_line(exc)}"
    before = set(sys.modules)
    try:
        importlib.import_module("torch_spyre")
    except Exception as exc:  # noqa: BLE001 - whatever an import raises, the answer is no
        _forget_imported(before)
        return False, f"torch_spyre does not import: {_one_line(exc)}"
    try:
        cls = find_scheduling(device)
    except Exception as exc:  # noqa: BLE001
        _forget_imported(before)
        return False, f"torch_spyre imports but its {SCHEDULING_CLASS} does not: {_one_line(exc)}"
    return True, f"torch_spyre imports and has {cls.__module__}.{cls.__qualname__}"


def find_scheduling(device: str = DEVICE) -> type:
    """torch-spyre's scheduling class: the one registered for ``device``, else the module's."""
    from torch._inductor.codegen import common

    common.init_backend_registration()
    registered = common.get_scheduling_for_device(device)
    if isinstance(registered, type) and registered.__module__.startswith("torch_spyre"):
        return registered
    module = importlib.import_module(SCHEDULING_MODULE)
    if not hasattr(module, SCHEDULING_CLASS):
        raise RuntimeError(f"{SCHEDULING_MODULE} has no {SCHEDULING_CLASS}")
    return getattr(module, SCHEDULING_CLASS)


def _forget_imported(before: set[str]) -> None:
    """Drop the torch_spyre modules imported since ``before``, and their parents' links."""
    for name in sorted(set(sys.modules) - before, reverse=True):  # children first
        if name == "torch_spyre" or name.startswith("torch_spyre."):
            module = sys.modules.pop(name)
            parent, _, child = name.rpartition(".")
            if getattr(sys.modules.get(parent), child, None) is module:
                delattr(sys.modules[parent], child)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else '(no message)'}"


def _code_names(code: CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):  # nested functions and comprehensions
            names |= _code_names(const)
    return names


def detect_generation(scheduling: type) -> tuple[bool, list[ModuleType]]:
    """(does its ``codegen_comment`` take handles itself, modules holding the function by name)."""
    method = inspect.unwrap(getattr(scheduling, "codegen_comment", None) or (lambda: None))
    code = getattr(method, "__code__", None)
    writes = code is not None and TRACING_FUNCTION in _code_names(code)
    modules: list[ModuleType] = []
    for module_name in (getattr(method, "__module__", None), scheduling.__module__):
        module = sys.modules.get(module_name or "")
        if module is not None and hasattr(module, TRACING_FUNCTION) and module not in modules:
            modules.append(module)
    return writes, modules


def _spyre_wrapper() -> type:
    """torch-spyre's wrapper codegen, or Inductor's Python wrapper when it has none."""
    try:
        return getattr(importlib.import_module(WRAPPER_MODULE), WRAPPER_CLASS)
    except (ImportError, AttributeError):
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen

        return PythonWrapperCodegen


class SpyreBackend(Backend):
    """torch-spyre's own scheduling, hooked where it defines kernels and comments call sites."""

    name = "spyre"
    device = DEVICE
    extends_upstream = True

    def __init__(
        self,
        bundle_dir: str | Path | None = None,
        module: ModuleType | None = None,
        *,
        device: str | None = None,
    ) -> None:
        # bundle_dir: accepted for parity with the reference backend; torch-spyre writes its
        # own SuperDSC bundles (under its cache dir), so nothing is written here: they are
        # read where its runners point (bundle_handles).
        self.bundle_dir = Path(bundle_dir) if bundle_dir is not None else None
        self.module = module
        if device is not None:  # tests run the stand-ins on "cpu"
            self.device = device
        self.scheduling: type | None = None
        self.writes_handle_comments = True
        self._tracing_modules: list[ModuleType] = []
        self._patches = Patches()
        self._warned = False
        self._recorder: CallSiteRecorder | None = None
        self._faults: list[Fault] = []

    # -- where the model compiles -------------------------------------------------------------

    def place(self, model: Any, calls: list[tuple[Any, ...]]) -> tuple[Any, list[tuple[Any, ...]]]:
        """The model and every tensor of its calls on ``spyre``: torch-spyre's ``compile_fx``
        wrapper engages only for a graph with a tensor there (``_inductor/__init__.py``
        ``_uses_spyre``); left on the CPU, Inductor's stock CPU kernels compile it. Raises
        DeviceUnavailable (one line) when torch-spyre cannot hold them."""
        import torch

        def moved(value: Any) -> Any:
            return value.to(self.device) if isinstance(value, torch.Tensor) else value

        try:
            placed = model.to(self.device)
            return placed, [tuple(moved(x) for x in call) for call in calls]
        except Exception as exc:  # noqa: BLE001 - whatever the device raises: one line
            raise DeviceUnavailable(f"torch-spyre cannot put the model on {self.device!r}: {_one_line(exc)}") from None

    # -- install / uninstall -------------------------------------------------------------

    def install(self, recorder: CallSiteRecorder | None = None) -> None:
        if self.scheduling is not None:
            return
        self._recorder = recorder
        cls = self._find_scheduling()
        try:
            self._register(cls)
            self.writes_handle_comments, self._tracing_modules = detect_generation(cls)
            define_kernel = cls.define_kernel
            self._patches.setattr(cls, "define_kernel", self._wrap_define_kernel(define_kernel))
            if not self.writes_handle_comments:
                codegen_comment = cls.codegen_comment
                self._patches.setattr(cls, "codegen_comment", self._wrap_codegen_comment(codegen_comment))
            self._watch_runners()
        except BaseException:
            self.uninstall()  # never leave half an install behind
            raise
        self.scheduling = cls

    def uninstall(self) -> None:
        self._recorder = None
        try:
            self._patches.undo()
        finally:
            self.scheduling = None
            self._tracing_modules = []

    def tracing_modules(self) -> Sequence[ModuleType]:
        return tuple(self._tracing_modules)

    def _find_scheduling(self) -> type[Any]:  # torch-spyre's class: its attributes are Any to us
        if self.module is not None:
            return getattr(self.module, SCHEDULING_CLASS)
        return find_scheduling(self.device)

    def _register(self, cls: type) -> None:
        """Make ``cls`` the scheduling of ``device``, keeping the registered wrappers."""
        from torch._inductor.codegen import common

        common.init_backend_registration()  # the stock entries must exist before we save one
        old = common.device_codegens.get(self.device)
        if old is not None and old.scheduling is cls:
            return  # torch-spyre's own _autoload registered it
        if old is None:
            entry = common.DeviceCodegen(cls, _spyre_wrapper())
        else:
            entry = common.DeviceCodegen(cls, old.wrapper_codegen, old.cpp_wrapper_codegen, old.fx_wrapper_codegen)
        self._patches.setitem(common.device_codegens, self.device, entry)

    # -- the two seams -----------------------------------------------------------------------

    def _wrap_define_kernel(self, original):
        def define_kernel(sched, *args, **kwargs):
            kernel_name = original(sched, *args, **kwargs)
            kernel = args[2] if len(args) > 2 else kwargs.get("kernel")
            specs = getattr(kernel, "op_specs", None)
            if specs is not None and kernel_name:
                try:
                    from torch._inductor.virtualized import V

                    V.graph.__dict__.setdefault(_GRAPH_OPSPECS, {})[kernel_name] = list(specs)
                except Exception as exc:  # noqa: BLE001 - provenance never breaks a compile
                    self._warn_once("keeping OpSpecs", exc)
            return kernel_name

        define_kernel.__wrapped__ = original
        return define_kernel

    def _wrap_codegen_comment(self, original):
        def codegen_comment(sched, node_schedule, kernel_name=None, *args, **kwargs):
            import torch._inductor.debug as inductor_debug

            before = getattr(inductor_debug, HANDLE_COUNTER, None)
            result = original(sched, node_schedule, kernel_name, *args, **kwargs)
            took_handle = getattr(inductor_debug, HANDLE_COUNTER, None) != before
            if kernel_name and not took_handle:
                self._record_call_site(node_schedule, kernel_name)
            return result

        codegen_comment.__wrapped__ = original
        return codegen_comment

    def _record_call_site(self, node_schedule: Any, kernel_name: str) -> None:
        if self._recorder is None:  # installed outside tracking(): nothing to record into
            return
        try:
            self._recorder.record_call_site(node_schedule, kernel_name)
        except Exception as exc:  # noqa: BLE001 - provenance never breaks a compile
            self._warn_once("recording a call site", exc)

    def _warn_once(self, what: str, exc: Exception) -> None:
        if self._warned:
            return
        self._warned = True
        errors.warn(
            f"spyre-provenance: torch-spyre adapter, {what}: {type(exc).__name__}: {exc} (the compile goes on)",
            stacklevel=3,
        )

    def _watch_runners(self) -> None:
        """Learn each kernel's bundle folder from the runner torch-spyre builds for it
        (``SpyreSDSCKernelRunner(name, code_dir, ...)``: a fresh folder, or on a kernel-cache
        hit the cache entry an earlier compile wrote). A generation without that module has
        no bundles to check: ``bundle_handles`` then says None (not checked)."""
        try:
            runners = importlib.import_module(RUNNER_MODULE)
        except Exception:  # noqa: BLE001 - older layouts, or a broken install: nothing to watch
            return
        for name in RUNNER_CLASSES:
            cls: type[Any] | None = getattr(runners, name, None)
            if isinstance(cls, type):
                self._patches.setattr(cls, "__init__", self._wrap_runner_init(cls.__init__))

    def _wrap_runner_init(self, original):
        def __init__(runner, *args, **kwargs):
            original(runner, *args, **kwargs)
            try:
                from torch._inductor.virtualized import NullHandler, V

                if not isinstance(V.graph, NullHandler):  # a runner built outside a compile
                    folders = V.graph.__dict__.setdefault(_GRAPH_BUNDLE_DIRS, {})
                    folders[str(runner.kernel_name)] = str(runner.code_dir)
                    # the key its compile used (torch-spyre #3975: one recomputed from the
                    # wrapper text may differ); None on generations without descriptors
                    descriptor = getattr(runner, "kernel_provenance", None)
                    keys = V.graph.__dict__.setdefault(_GRAPH_KEYS, {})
                    keys[str(runner.kernel_name)] = getattr(descriptor, "key", None)
            except Exception as exc:  # noqa: BLE001 - provenance never breaks a compile
                self._warn_once("finding a kernel's bundles", exc)

        __init__.__wrapped__ = original
        return __init__

    def bundle_handles(self, kernel_name: str) -> list[dict[str, Any] | None] | None:
        """The ``debug_handle_`` of each bundle in the folder the kernel's runner points at;
        None when no runner was built for it in this graph or the folder holds no bundle."""
        from torch._inductor.virtualized import V

        folder = V.graph.__dict__.get(_GRAPH_BUNDLE_DIRS, {}).get(kernel_name)
        if folder is None:
            return None
        try:
            return served_handles(Path(folder))
        except (OSError, ValueError) as exc:
            self._faults.append(Fault("OpSpec handle reading", f"{kernel_name}: bundles not checked: {exc}"))
            return None

    def kernel_bundle(self, kernel_name: str) -> tuple[str | None, str | None] | None:
        """The provenance key torch-spyre's runner holds for the kernel (its
        ``KernelProvenanceDescriptor``) and its bundle folder's name; None when no runner
        was built for it in this graph."""
        from torch._inductor.virtualized import V

        folder = V.graph.__dict__.get(_GRAPH_BUNDLE_DIRS, {}).get(kernel_name)
        if folder is None:
            return None
        return V.graph.__dict__.get(_GRAPH_KEYS, {}).get(kernel_name), Path(folder).name

    def take_faults(self) -> list[Fault]:
        faults, self._faults = self._faults, []
        return faults

    # -- OpSpecs -------------------------------------------------------------------------------

    def opspecs_for(self, kernel_name: str, node_schedule: Any) -> list[OpSpecRecord] | None:
        """The OpSpecs ``define_kernel`` saw for this name; None for releases without OpSpecs."""
        from torch._inductor.virtualized import V

        from spyre_provenance.backends.spyre.opspecs import opspec_records

        specs = V.graph.__dict__.get(_GRAPH_OPSPECS, {}).get(kernel_name)
        return None if specs is None else opspec_records(specs)
