"""The project's own stand-in for torch-spyre's native extension ``torch_spyre._C``.

torch-spyre's C++ extension is built against IBM-only libraries, so it cannot exist here.
This module is written from its declaration file (``torch_spyre/_C.pyi`` of the snapshot)
and from what the compile path calls, found by running torch-spyre's Inductor backend on a
CPU; none of torch-spyre's code is in it. It models what a *compile* needs: data formats
and their stick width, the default stick tiling of a tensor (``SpyreTensorLayout``, whose
rule is pinned by torch-spyre's own ``tests/tensor/test_tensor_layout.py``), the constant
encoding a kernel's op info carries, the kernel-provenance registry, and runtime entry
points that do nothing (start, device selection, streams) or say that kernels cannot run
here (``prepare_kernel`` returns a plan whose launch raises). The device's allocations,
which the extension registers with torch, are ``host_memory``'s.

``build()`` returns a fresh module; ``boot.install`` puts it in ``sys.modules`` as
``torch_spyre._C`` before ``import torch_spyre``.
"""

from __future__ import annotations

import enum
import math
import re
import struct
import types
from collections.abc import Sequence
from typing import Any

#: A stick is 128 bytes on Spyre: the unit of the device's innermost dimension.
STICK_BYTES = 128
#: What a profiler activity name may hold, trailing NUL included (torch-spyre's C++ value).
AIUPTI_ACTIVITY_NAME_MAX_BYTES = 128


class _Enum(enum.Enum):
    """pybind11 enums print as ``DataFormats.SEN169_FP16`` and convert to ``int``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value}>"

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        return int(self.value)


class DataFormats(_Enum):
    """The device's element formats, with the values ``_C.pyi`` lists."""

    SEN169_FP16 = 0
    IEEE_FP32 = 1
    INVALID = 2
    SEN143_FP8 = 3
    SEN152_FP8 = 4
    SEN153_FP9 = 5
    SENINT2 = 6
    SENINT4 = 7
    SENINT8 = 8
    SENINT16 = 9
    SENINT24 = 10
    IEEE_INT64 = 11
    IEEE_INT32 = 12
    SENUINT32 = 13
    SENUINT2 = 14
    IEEE_FP16 = 15
    BOOL = 16
    BFLOAT16 = 17
    SEN18F_FP24 = 18

    def elems_per_stick(self) -> int:
        return STICK_BYTES * 8 // _BITS[self]


_BITS = {
    DataFormats.SEN169_FP16: 16,
    DataFormats.IEEE_FP32: 32,
    DataFormats.INVALID: 8,
    DataFormats.SEN143_FP8: 8,
    DataFormats.SEN152_FP8: 8,
    DataFormats.SEN153_FP9: 8,  # stored in a byte
    DataFormats.SENINT2: 2,
    DataFormats.SENINT4: 4,
    DataFormats.SENINT8: 8,
    DataFormats.SENINT16: 16,
    DataFormats.SENINT24: 32,  # stored in a word
    DataFormats.IEEE_INT64: 64,
    DataFormats.IEEE_INT32: 32,
    DataFormats.SENUINT32: 32,
    DataFormats.SENUINT2: 2,
    DataFormats.IEEE_FP16: 16,
    DataFormats.BOOL: 8,
    DataFormats.BFLOAT16: 16,
    DataFormats.SEN18F_FP24: 32,
}


class ElementArrangement(_Enum):
    STANDARD = 0
    DL16_TO_FP32 = 1
    QFP8CH = 2
    EXX2 = 3
    FP32_TO_DL16 = 4
    QFP8WT = 5


class SymbolicArgKind(_Enum):
    kAddress = 0
    kDimension = 1


class SpyreStreamError(_Enum):
    Success = 0
    Shutdown = 1


class SpyreDeviceState(_Enum):
    Ok = 0
    NotInitialized = 1
    StreamError = 2


def _torch_dtypes() -> dict[Any, DataFormats]:
    import torch

    return {
        torch.float16: DataFormats.SEN169_FP16,  # Spyre computes fp16 in its own format
        torch.float32: DataFormats.IEEE_FP32,
        torch.bfloat16: DataFormats.BFLOAT16,
        torch.int64: DataFormats.IEEE_INT64,
        torch.int32: DataFormats.IEEE_INT32,
        torch.int16: DataFormats.SENINT16,
        torch.int8: DataFormats.SENINT8,
        torch.uint8: DataFormats.SENINT8,
        torch.bool: DataFormats.BOOL,
        torch.float8_e4m3fn: DataFormats.SEN143_FP8,
        torch.float8_e5m2: DataFormats.SEN152_FP8,
    }


def get_device_dtype(dtype: Any) -> DataFormats:
    try:
        return _torch_dtypes()[dtype]
    except KeyError:
        raise TypeError(f"no Spyre data format for {dtype}") from None


def get_elem_in_stick(dtype: Any) -> int:
    return get_device_dtype(dtype).elems_per_stick()


class SpyreTensorLayout:
    """A tensor's layout on the device: ``device_size`` (the host dims in device order,
    the stick dimension split into stick count and elements per stick) and ``stride_map``
    (for each device dim, how many host elements one step moves; -1 where a step moves
    along no host dim: a sparse stick, or a host dim of size 1, as torch-spyre's
    ``dim_map_to_stride_map`` has it, ``csrc/spyre_tensor_impl.cpp:112-130``).

    The default tiling, for ``dim_order`` (host dims outermost first, the last one holding
    the stick): ``[dim_order[1], ..., dim_order[-2], sticks, dim_order[0], elements]``; a
    1-d tensor is ``[sticks, elements]``, a 0-d one ``[1, elements]`` with no strides. A
    ``-1`` in ``dim_order`` is a sparse stick: a size-1 host dim of stride -1.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import torch

        if kwargs:  # by keyword: the names _C.pyi gives each overload's parameters
            order = ["device_size", "stride_map", "device_dtype"] if "device_size" in kwargs else []
            order = order or (
                ["host_size", "host_strides", "dtype", "dim_order"]
                if "host_strides" in kwargs
                else ["host_size", "dtype"]
            )
            args = (*args, *(kwargs.pop(name) for name in order[len(args) :] if name in kwargs))
        if len(args) >= 3 and isinstance(args[2], DataFormats):  # (device_size, stride_map, format[, arrangement])
            self.device_size = [int(s) for s in args[0]]
            self.stride_map = [int(s) for s in args[1]]
            self.device_dtype = args[2]
            self.element_arrangement = (
                args[3] if len(args) > 3 else kwargs.get("element_arrangement", ElementArrangement.STANDARD)
            )
            return
        arrangement = kwargs.get("element_arrangement", args[4] if len(args) > 4 else ElementArrangement.STANDARD)
        host_size = [int(s) for s in args[0]]
        if len(args) == 2 and isinstance(args[1], torch.dtype):  # (host_size, dtype)
            self._tile(host_size, _contiguous(host_size), args[1], list(range(len(host_size))), arrangement)
        elif len(args) >= 4 and isinstance(args[2], torch.dtype):  # (host_size, host_strides, dtype, dim_order)
            self._tile(host_size, [int(s) for s in args[1]], args[2], [int(d) for d in args[3]], arrangement)
        else:
            raise TypeError(f"SpyreTensorLayout(): unsupported arguments {args!r} {kwargs!r}")

    def _tile(self, size: list[int], strides: list[int], dtype: Any, order: list[int], arrangement: Any) -> None:
        self.device_dtype = get_device_dtype(dtype)
        self.element_arrangement = arrangement
        per_stick = self.device_dtype.elems_per_stick()
        if not size:
            self.device_size, self.stride_map = [1, per_stick], [-1, -1]
            return

        def dim(d: int) -> tuple[int, int]:  # a host dim of size 1 is stepped along by none
            return (1, -1) if d < 0 or size[d] == 1 else (size[d], strides[d])

        stick_size, stick_stride = dim(order[-1])
        sticks = (max(stick_size, 1) + per_stick - 1) // per_stick
        tile_stride = -1 if stick_stride < 0 else stick_stride * per_stick
        if len(order) == 1:
            self.device_size, self.stride_map = [sticks, per_stick], [tile_stride, stick_stride]
            return
        middle = [dim(d) for d in order[1:-1]]
        outer = dim(order[0])
        self.device_size = [s for s, _ in middle] + [sticks, outer[0], per_stick]
        self.stride_map = [t for _, t in middle] + [tile_stride, outer[1], stick_stride]

    def elems_per_stick(self) -> int:
        return self.device_dtype.elems_per_stick()

    def with_element_arrangement(self, element_arrangement: ElementArrangement) -> SpyreTensorLayout:
        return SpyreTensorLayout(self.device_size, self.stride_map, self.device_dtype, element_arrangement)

    def _key(self) -> tuple[Any, ...]:
        return (tuple(self.device_size), tuple(self.stride_map), self.device_dtype, self.element_arrangement)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpyreTensorLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return (
            f"SpyreTensorLayout(device_size={self.device_size}, stride_map ={self.stride_map},"
            f" device_dtype={self.device_dtype})"
        )

    __repr__ = __str__

    def __reduce__(self):  # pickled by Inductor's caches and deep-copied with IR nodes
        return (SpyreTensorLayout, (self.device_size, self.stride_map, self.device_dtype, self.element_arrangement))


def _contiguous(size: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for s in reversed(size):
        strides.append(step)
        step *= max(int(s), 1)
    return list(reversed(strides))


def get_spyre_tensor_layout(tensor: Any) -> SpyreTensorLayout:
    """The default layout of any tensor (a device would answer with the layout it holds)."""
    size = [int(s) for s in tensor.size()]
    return SpyreTensorLayout(size, tensor.dtype)


def encode_constant(value: float, data_format: DataFormats) -> int:
    """The bit pattern of ``value`` in ``data_format``, as an op's constant operand."""
    value = float(value)
    if data_format in (DataFormats.IEEE_FP32,):
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if data_format in (DataFormats.IEEE_FP16, DataFormats.SEN169_FP16):
        return struct.unpack("<H", struct.pack("<e", value if math.isfinite(value) or math.isnan(value) else value))[0]
    if data_format is DataFormats.BFLOAT16:
        return struct.unpack("<I", struct.pack("<f", value))[0] >> 16
    if data_format in (DataFormats.IEEE_INT64, DataFormats.IEEE_INT32, DataFormats.SENINT16, DataFormats.SENINT8):
        return int(value)
    if data_format is DataFormats.BOOL:
        return int(bool(value))
    raise ValueError(f"encode_constant: no encoding for {data_format}")


class SymbolicArg:
    def __init__(self, kind: SymbolicArgKind, tensor_id: int, dim_index: int = -1, value: int = -1) -> None:
        self.kind, self.tensor_id, self.dim_index, self.value = kind, tensor_id, dim_index, value

    def __repr__(self) -> str:
        return f"SymbolicArg({self.kind}, tensor_id={self.tensor_id}, dim_index={self.dim_index}, value={self.value})"


class NativePermutationLayoutSolver:
    """Named in an annotation only: with ``TORCH_SPYRE_NATIVE_PACKER=0`` (``boot``) the
    Python packer runs; an attempt to use this one says so."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the stand-in _C has no native layout solver (TORCH_SPYRE_NATIVE_PACKER=0)")


class JobPlan:
    """What ``prepare_kernel`` returns: no device code exists here, so it cannot run."""

    def __init__(self, spyrecode_dir: str, profiler_name: str | None) -> None:
        self.spyrecode_dir, self.profiler_name = spyrecode_dir, profiler_name

    def num_steps(self) -> int:
        return 0

    def job_allocation_size(self) -> int:
        return 0

    def get_step_type(self, idx: int) -> str:
        raise IndexError(idx)

    def get_step_name(self, idx: int) -> str | None:
        raise IndexError(idx)


class KernelsCannotRun(RuntimeError):
    """A compiled Spyre kernel was launched; there is no device here."""


def prepare_kernel(spyrecode_dir: str, stream: Any = None, profiler_name: str | None = None) -> JobPlan:
    return JobPlan(spyrecode_dir, profiler_name)


def launch_jobplan(job_plan: JobPlan, args: Sequence[Any], symbolic_args: Any = ()) -> None:
    raise KernelsCannotRun(f"no Spyre device: the kernel in {job_plan.spyrecode_dir} cannot run (stand-in _C)")


# -- the kernel-provenance registry: profiler event name -> debug handle ids ---------------------

_EVENT_KEY = re.compile(r"\Aspyre_kernel_v1_[A-Za-z0-9_]+?_(?P<key>[a-z2-7]{16})(?:#[0-9]+)?\Z")
_registry: dict[str, list[str]] = {}
_stats = {"registered": 0, "conflicts": 0}


def extract_kernel_provenance_key(event_name: str) -> str | None:
    match = _EVENT_KEY.match(event_name)
    return match.group("key") if match else None


def register_kernel_provenance(event_base_name: str, debug_handle_ids: Sequence[str]) -> bool:
    key = extract_kernel_provenance_key(event_base_name)
    if key is None:
        return False
    ids = [str(i) for i in debug_handle_ids]
    if key in _registry and _registry[key] != ids:
        _stats["conflicts"] += 1
        return False
    if key not in _registry:
        _stats["registered"] += 1
    _registry[key] = ids
    return True


def lookup_kernel_provenance(key: str) -> list[str] | None:
    ids = _registry.get(key)
    return None if ids is None else list(ids)


def kernel_provenance_registry_stats() -> dict[str, int]:
    return {"entries": len(_registry), **_stats}


# -- runtime entry points: nothing to start, one device index, streams that are no-ops ----------


class _SpyreStreamBase:
    def __init__(self, device: Any = None, priority: int = 0, stream_id: int = 0) -> None:
        self._device, self._priority, self._id = device, priority, stream_id

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def device(self) -> Any:
        import torch

        return self._device if self._device is not None else torch.device("spyre", 0)

    def id(self) -> int:
        return self._id

    def priority(self) -> int:
        return self._priority

    def __repr__(self) -> str:
        return f"<stand-in SpyreStream {self._id}>"


class _Generator:
    """The default generator torch-spyre seeds; a CPU generator holds its state."""

    def __init__(self) -> None:
        import torch

        self._cpu = torch.Generator()

    def manual_seed(self, seed: int) -> _Generator:
        self._cpu.manual_seed(seed)
        return self

    def initial_seed(self) -> int:
        return self._cpu.initial_seed()

    def get_state(self) -> Any:
        return self._cpu.get_state()

    def set_state(self, state: Any) -> None:
        self._cpu.set_state(state)


class _LoggingConfig:
    _instance: _LoggingConfig | None = None

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}
        self.log_file = ""

    @classmethod
    def instance(cls) -> _LoggingConfig:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def initialize_from_python(self, config: Any) -> None:
        self.config = dict(config) if isinstance(config, dict) else {"config": config}

    def set_log_file(self, path: str) -> None:
        self.log_file = path


def build() -> types.ModuleType:
    """A fresh ``torch_spyre._C`` module."""
    module = types.ModuleType("torch_spyre._C", "stand-in for torch-spyre's native extension (spyre-provenance tests)")
    state = {"device": 0, "stream": _SpyreStreamBase(), "runtime": False}
    generators: dict[int, _Generator] = {}

    def _get_default_generator(idx: int = -1) -> _Generator:
        return generators.setdefault(max(int(idx), 0), _Generator())

    def start_runtime() -> None:
        state["runtime"] = True

    def set_device(idx: int) -> None:
        state["device"] = int(idx)

    logging_module = types.ModuleType("torch_spyre._C._logging")
    logging_module.LoggingConfig = _LoggingConfig  # type: ignore[attr-defined]

    def no_device(name: str):
        def call(*args: Any, **kwargs: Any) -> Any:
            raise KernelsCannotRun(f"{name}: no Spyre device here (stand-in _C)")

        call.__name__ = name
        return call

    names: dict[str, Any] = {
        "AIUPTI_ACTIVITY_NAME_MAX_BYTES": AIUPTI_ACTIVITY_NAME_MAX_BYTES,
        "DataFormats": DataFormats,
        "ElementArrangement": ElementArrangement,
        "SymbolicArgKind": SymbolicArgKind,
        "SymbolicArg": SymbolicArg,
        "SpyreStreamError": SpyreStreamError,
        "SpyreDeviceState": SpyreDeviceState,
        "SpyreTensorLayout": SpyreTensorLayout,
        "NativePermutationLayoutSolver": NativePermutationLayoutSolver,
        "JobPlan": JobPlan,
        "_SpyreStreamBase": _SpyreStreamBase,
        "get_device_dtype": get_device_dtype,
        "get_elem_in_stick": get_elem_in_stick,
        "get_spyre_tensor_layout": get_spyre_tensor_layout,
        "encode_constant": encode_constant,
        "prepare_kernel": prepare_kernel,
        "launch_jobplan": launch_jobplan,
        "extract_kernel_provenance_key": extract_kernel_provenance_key,
        "register_kernel_provenance": register_kernel_provenance,
        "lookup_kernel_provenance": lookup_kernel_provenance,
        "kernel_provenance_registry_stats": kernel_provenance_registry_stats,
        "_get_default_generator": _get_default_generator,
        "_logging": logging_module,
        "start_runtime": start_runtime,
        "free_runtime": lambda: None,
        "set_device": set_device,
        "current_device": lambda: state["device"],
        "device_count": lambda: 0,  # with 1, Dynamo asks the absent C++ hooks for a stream
        "get_device_state": lambda: SpyreDeviceState.Ok,
        "current_stream": lambda device=None: state["stream"],
        "default_stream": lambda device=None: state["stream"],
        "get_stream_from_pool": lambda device=None, priority=0: _SpyreStreamBase(device, priority),
        "set_current_stream": lambda stream: state.__setitem__("stream", stream),
        "synchronize": lambda device=None: None,
        "stream_get_error": lambda stream: SpyreStreamError.Success,
        "stream_get_error_string": lambda error: error.name,
        "get_downcast_warning": lambda: False,
        "set_downcast_warning": lambda on: None,
        "set_spyre_tensor_layout": lambda tensor, layout: None,
    }

    def fill_tensor(tensor: Any, value: float) -> Any:  # a tensor of host_memory.register_memory
        tensor.host.fill_(value)
        return tensor

    def copy_tensor(source: Any, destination: Any, non_blocking: bool = False) -> None:
        def host(tensor: Any) -> Any:
            return getattr(tensor, "host", tensor)

        host(destination).copy_(host(source))

    def spyre_empty_with_layout(size: Any, stride: Any, dtype: Any, layout: Any) -> Any:
        import torch

        return torch.empty_strided(tuple(size), tuple(stride), dtype=dtype, device="spyre")

    names["fill_tensor"], names["copy_tensor"] = fill_tensor, copy_tensor
    names["spyre_empty_with_layout"] = spyre_empty_with_layout
    for name in (
        "empty_with_layout",
        "as_strided_with_layout",
        "to_with_layout",
        "reinterpret_tensor",
        "reinterpret_tensor_with_layout",
    ):
        names[name] = no_device(name)
    for name, value in names.items():
        setattr(module, name, value)
    return module
