"""The Spyre-modelled reference backend: real Inductor, Spyre's shape of output, on CPU.

torch-spyre cannot be installed everywhere, so this backend walks the same path on the CPU
and produces what torch-spyre main (9a6b71e, REFERENCE.md section 4.1) generates, where
provenance is concerned:

- a ``linear`` is permute + ``mm`` + bias ``add``, its nodes named ``aten.linear.default``
  and all with its stack trace (``lowering.label_linear``, ``split_addmm``).
- ``mm`` is lowered to the backend's own reduction, ``sum_k a[i,k] * b[k,j]`` (an OpSpec
  ``batchmatmul``, as main's after its mm-to-bmm pass), so the wrapper calls generated
  kernels only, never ``extern_kernels.mm``/``addmm``.
- Every pointwise op is realized as its own buffer (torch-spyre forces the same through
  ``Loops.has_large_inner_fn``), so one buffer is one op, and one OpSpec.
- One kernel per consecutive run of nodes, as main's ``spyre_fuse_nodes`` makes one SuperDSC
  bundle per run (Inductor's C++ kernel group, flushed only by an extern call), named
  ``sdsc_<fused original-aten names>_<n>``: the seed MLP is ``sdsc_fused_linear_relu_0``.
- Each kernel gets one OpSpec per buffer with a DebugHandle (``handles_from_origins.build_debug_handle``,
  ids by torch-spyre's version-2 rule) and, when ``bundle_dir`` is set, one SuperDSC-like
  JSON bundle per OpSpec, in a folder laid out as main's:
  ``<bundle_dir>/inductor-spyre/<uuid8>_<kernel>_<suffix>/sdsc_<i>.json``, its name derived
  from the bundles' bytes (``model.folders.bundle_folder_name``) where main's is random.
- The handle comment ``# [Provenance debug handles] sdsc_x:N`` comes from the inherited
  ``CppScheduling.codegen_comment``, as on main; the next line is the call
  ``sdsc_x.run(...)`` (``sdsc_kernel``: the C++ function behind a ``run``). No HBM pool
  line: main has written none since #3707.
- Not modelled: restickify. Main adds ``ReStickifyOpHBM`` OpSpecs where a card's stick
  layouts differ; the CPU has none.

The graph-level half (the split, the mm lowering, realizing every op) is in
``lowering``, the OpSpecs and the formats made from them in ``opspecs``;
this module holds the scheduling and the backend that installs it all.

Code generation and execution stay Inductor's C++ backend, so results are checked against
eager. Everything is installed for device "cpu" and undone exactly by ``uninstall``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import torch
from torch._inductor import config as inductor_config
from torch._inductor import ir
from torch._inductor import lowering as inductor_lowering
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.codegen import common as codegen_common
from torch._inductor.codegen import cpp as cpp_codegen
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from torch._inductor.utils import IndentedBuffer, Placeholder
from torch._inductor.virtualized import V

from spyre_provenance.backends.base import Backend
from spyre_provenance.backends.reference import ops as reference_ops
from spyre_provenance.backends.reference import sdsc_kernel
from spyre_provenance.backends.reference.handles_from_origins import build_debug_handle
from spyre_provenance.backends.reference.lookalike import DebugHandle, OpSpec
from spyre_provenance.backends.reference.lowering import (
    DEVICE,
    SplitAddmmPass,
    keep_loop_dimensions,
    realize_every_op,
)
from spyre_provenance.backends.reference.opspecs_from_nodes import (
    build_opspec,
    bundle_document,
    bundle_identity,
    failed_opspec,
    flat_nodes,
    kernel_descriptor,
    redact_handle,
)
from spyre_provenance.backends.spyre.opspecs import opspec_records
from spyre_provenance.base.files import atomic_write_text
from spyre_provenance.base.patches import Patches
from spyre_provenance.model import folders
from spyre_provenance.model.folders import BUNDLE_FILE
from spyre_provenance.model.layout import kernel_bundle_folder
from spyre_provenance.model.records import Fault, OpSpecRecord
from spyre_provenance.model.superdsc import handle_of

aten = torch.ops.aten

KERNEL_PREFIX = "sdsc"


# --- the scheduling --------------------------------------------------------------------------


class ReferenceScheduling(cpp_codegen.CppScheduling):
    """CppScheduling with Spyre's kernel names, one kernel per node, OpSpecs and bundles."""

    def __init__(self, scheduler: Any, backend: ReferenceBackend | None = None) -> None:
        super().__init__(scheduler)
        self.backend = backend

    # As torch-spyre main's SuperDSCScheduling (scheduler.py:619-635): nodes never fuse;
    # each keeps its own loop nest, in the scheduler's (the graph's) order, and a run of
    # them is one kernel (Inductor's C++ kernel group, flushed only by an extern call), as
    # main's spyre_fuse_nodes makes one bundle of a run. Unfused, a reader of a mutated
    # buffer never runs before the mutation (Inductor 2.13 fused one so, with every op
    # realized: wrong gradients for tests/zoo/models.py:multi_reduce --train).
    def can_fuse_vertical(self, node1: Any, node2: Any) -> bool:
        return False

    def can_fuse_horizontal(self, node1: Any, node2: Any) -> bool:
        return False

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
        self._call_with_run(kernel_name)
        return kernel_name

    def _call_with_run(self, kernel_name: str) -> None:
        """The call is ``<kernel>.run(...)``, as torch-spyre's ``SpyreKernel.call_kernel``
        writes it, on the line right after the handle comment. Only this kernel group's call
        is changed (the group is replaced after the flush)."""
        group = self.kernel_group
        original = group.call_kernel

        def call_kernel(wrapper: Any, name: str) -> None:
            # the wrapper writes ``<name>(args)`` when it generates its code, later
            original(wrapper, f"{name}.run")

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
            # the compiled C++ function behind a ``.run`` (``sdsc_kernel``), defined as
            # torch-spyre main defines its kernels: ``name = async_compile.<method>(...)``
            compile_wrapper.writeline(f"async_compile.{sdsc_kernel.ASYNC_COMPILE_METHOD}({arg_types!r}, r'''")
        compile_wrapper.splice(src_code, strip=True)
        if not V.graph.cpp_wrapper:
            compile_wrapper.writeline("''')")
        wrapper.define_kernel(kernel_name, compile_wrapper.getvalue(), gpu=False, cpp_definition=kernel_definition)


# --- the backend adapter ---------------------------------------------------------------------


class ReferenceWrapperCodegen(PythonWrapperCodegen):
    """Inductor's Python wrapper, made as torch-spyre main's ``SpyrePythonWrapperCodegen``
    is in one respect: making it leaves the graph's loops unmerged (``keep_loop_dimensions``)."""

    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: PythonWrapperCodegen | None,
        partition_signatures: Any = None,
    ) -> PythonWrapperCodegen:
        keep_loop_dimensions(V.graph.sizevars)
        return PythonWrapperCodegen.create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures)


class ReferenceBackend(Backend):
    """``--backend reference``: installs ``ReferenceScheduling`` and friends for device cpu."""

    name = "reference"
    device = DEVICE
    writes_handle_comments = True
    extends_upstream = True

    def __init__(self, bundle_dir: str | os.PathLike[str] | None = None, *, kernel_cache: bool = False) -> None:
        #: Where SuperDSC-like bundles go, as torch-spyre's go into its ``cache_dir()``
        #: (``model.layout.kernel_bundle_folder``); None: nowhere.
        self.bundle_dir = Path(bundle_dir) if bundle_dir is not None else None
        #: torch-spyre's kernel cache on: bundles go to Inductor's ``cache_dir()/
        #: inductor-spyre-cache/<key>/`` instead (``bundle_cache_key``), and a kernel whose
        #: key is there already is served the cached bundles, handles of an earlier compile.
        self.kernel_cache = kernel_cache
        #: kernel name -> each served bundle's ``debug_handle_`` (``bundle_handles``)
        self._served: dict[str, list[dict[str, Any] | None]] = {}
        #: kernel name -> (provenance key, bundle folder name) (``kernel_bundle``)
        self._bundles: dict[str, tuple[str | None, str | None]] = {}
        #: Every kernel call site since ``install()``, in emission order: (name, OpSpecs).
        self.call_sites: list[tuple[str, list[OpSpec]]] = []
        #: Every bundle file written since ``install()``.
        self.bundles_written: list[Path] = []
        #: kernel name -> its bundle folder's name, then each file's text (``written_bundles``)
        self._texts: dict[str, list[str]] = {}
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
                ReferenceWrapperCodegen,
                stock.cpp_wrapper_codegen,
                stock.fx_wrapper_codegen,
                device_custom_pass=SplitAddmmPass(self),
                device_custom_config=custom_config,
            )
            stock_lowering = patches.keep_item(inductor_lowering.lowerings, mm)
            inductor_lowering.register_lowering(mm, type_promotion_kind=None)(
                reference_ops.make_matmul_lowering(stock_lowering)
            )
            # As torch-spyre does: every op realized, so one buffer is one op (and one OpSpec).
            patches.setattr(ir.Loops, "has_large_inner_fn", realize_every_op)
            # Main wraps each run of Spyre nodes into one FusedSchedulerNode (spyre_fuse_nodes,
            # Inductor's post-fusion pass) before Inductor reorders nodes for peak memory, so
            # the ops inside a bundle keep the graph's order. Here a run is Inductor's kernel
            # group, made after that reorder: the reorder is off, or it would move ops inside
            # a run (reduce2: the amax before the mul of the sum) or across an extern call.
            patches.setattr(inductor_config, "reorder_for_peak_memory", False)
            # What the wrapper's kernel definitions call (``sdsc_kernel``), as torch-spyre
            # adds ``AsyncCompile.sdsc``.
            patches.setattr(AsyncCompile, sdsc_kernel.ASYNC_COMPILE_METHOD, sdsc_kernel.compile_kernel)
            # layer norm, SiLU, GELU, mean and bmm as main lowers them
            reference_ops.install(patches)
        except BaseException:
            self.uninstall()
            raise
        self.call_sites.clear()
        self.bundles_written.clear()
        self._served.clear()
        self._bundles.clear()
        self._texts.clear()
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
        nodes = flat_nodes(node_schedule)
        if self.call_sites and self.call_sites[-1][0] == kernel_name and self._last_nodes == tuple(map(id, nodes)):
            specs, missing = self.call_sites[-1][1], self._last_missing
        else:  # asked outside define_kernel -> codegen_comment: rebuild from the nodes
            specs, missing = self._build_opspecs(nodes, ())
        return [
            msgspec.structs.replace(record, missing_handle=why) if why else record
            for record, why in zip(opspec_records(specs), missing, strict=True)
        ]

    def take_faults(self) -> list[Fault]:
        faults, self.faults = self.faults, []
        return faults

    # called by ReferenceScheduling.define_kernel

    def _record_kernel(self, kernel_name: str, nodes: Sequence[Any], args: Any) -> list[OpSpec]:
        flat = flat_nodes(nodes)
        try:
            call_args = list(args.cpp_argdefs()[1])
        except Exception:  # noqa: BLE001 - no argument list: OpSpec arguments get index -1
            call_args = []
        specs, self._last_missing = self._build_opspecs(flat, call_args)
        self.call_sites.append((kernel_name, specs))
        self._last_nodes = tuple(map(id, flat))
        return specs

    def debug_handle(self, buffer: Any) -> DebugHandle | None:
        """The DebugHandle of one IR buffer (``handles_from_origins.build_debug_handle``)."""
        return build_debug_handle(buffer)

    def _build_opspecs(self, nodes: Sequence[Any], call_args: Sequence[str]) -> tuple[list[OpSpec], list[str | None]]:
        """One OpSpec per buffer, whatever happens: a buffer is never dropped."""
        built = []
        for node in nodes:
            try:
                built.append(build_opspec(node, call_args, self.debug_handle))
            except Exception as exc:  # noqa: BLE001 - provenance is debug-only: reported, never raised
                built.append(failed_opspec(node, exc))
        return [spec for spec, _ in built], [why for _, why in built]

    def bundle_handles(self, kernel_name: str) -> list[dict[str, Any] | None] | None:
        return self._served.get(kernel_name)

    def kernel_bundle(self, kernel_name: str) -> tuple[str | None, str | None] | None:
        return self._bundles.get(kernel_name)

    def _write_bundles(self, kernel_name: str, specs: Sequence[OpSpec]) -> None:
        """The kernel's bundles, one ``sdsc_<i>.json`` per OpSpec: in its folder under
        ``bundle_dir``, named from their bytes, or in the kernel cache."""
        if self.bundle_dir is None and not self.kernel_cache:
            self._bundles[kernel_name] = bundle_identity(specs, None)
            return
        documents = [bundle_document(i, spec) for i, spec in enumerate(specs)]
        if self.path_redactor is not None:
            for document in documents:
                for body in document.values():
                    if body["debug_handle_"] is not None:
                        redact_handle(body["debug_handle_"], self.path_redactor)
        texts = [json.dumps(document, indent=2, sort_keys=True) + "\n" for document in documents]
        if self.kernel_cache:
            folder = _spyre_cache_root() / bundle_cache_key(documents)
            cached = _read_bundles(folder, len(documents))
            self._bundles[kernel_name] = bundle_identity(specs, folder)
            if cached is not None:  # a hit: what torch-spyre serves, handles and all
                self._served[kernel_name] = [handle_of(d, strict=False) for d in cached]
                return
        else:
            assert self.bundle_dir is not None  # no kernel cache: a bundle folder, or returned above
            name = folders.bundle_folder_name(kernel_name, "".join(texts).encode("utf-8"))
            folder = kernel_bundle_folder(self.bundle_dir, name)
            self._bundles[kernel_name] = bundle_identity(specs, folder)
            self._texts[kernel_name] = [name, *texts]
        self._served[kernel_name] = [handle_of(d, strict=False) for d in documents]
        self._write_texts(folder, texts)

    def _write_texts(self, folder: Path, texts: Sequence[str]) -> None:
        for i, text in enumerate(texts):
            path = folder / BUNDLE_FILE.format(i)
            try:
                self.bundles_written.append(atomic_write_text(path, text))
            except Exception as exc:  # noqa: BLE001 - a bundle is a by-product: never fail a compile over it
                self.faults.append(Fault("file write", f"{type(exc).__name__}: bundle {path}: {exc}"))

    def written_bundles(self, kernel_names: Sequence[str]) -> dict[str, list[str]]:
        """The bundle folders written into ``bundle_dir``; none with the kernel cache on,
        whose folders stay in Inductor's cache dir beside the entry."""
        return {name: self._texts[name] for name in kernel_names if name in self._texts}

    def restore_bundles(self, bundles: dict[str, list[str]]) -> None:
        if self.bundle_dir is None:
            return
        for name, (folder_name, *texts) in bundles.items():
            documents = [json.loads(text) for text in texts]
            self._served[name] = [handle_of(d, strict=False) for d in documents]
            self._texts[name] = [folder_name, *texts]
            self._write_texts(kernel_bundle_folder(self.bundle_dir, folder_name), texts)


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
