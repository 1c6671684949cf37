"""Reading a kernel name as an engineer copies it into the name the wrapper calls it by.

Forms (REFERENCE.md section 6):

- ``sdsc_fused_addmm_view_4``: the wrapper's name;
- ``sdsc_fused_neg_0_il7ixi06``: with a suffix a runtime or a cache adds;
- ``graph_0_cpp_fused_gelu_0``: with the prefix Inductor's C++ kernel profiling adds
  (``graph_<i>_``, ``i`` the graph's index in the process);
- ``1a2b3c4d_sdsc_fused_addmm_1_k3j_9x2q``: a bundle folder ``<uuid8>_<name>_<mkdtemp 8>``;
- ``sdsc_fused_addmm_1:2``: a mapping key ``name:N``;
- ``5042312524869293591``: an OpSpec debug-handle id;
- ``spyre_kernel_v1_fused_linear_relu_74ncpmgiwkyzoc6d#3``: torch-spyre's device kernel
  event (with or without the runtime's ``#<step>``), and its bare key ``74ncpmgiwkyzoc6d``
  (``model.kernel_keys``);
- ``launch_jobplan:<kernel>``, ``prepare_kernel:<kernel>``, ``dxp_standalone:<kernel>``:
  torch-spyre's CPU spans around a kernel;
- ``.../inductor-spyre/<bundle folder>/spyreCodeDir/launch_spec.json`` (or that folder, or its
  ``spyreCodeDir``): the launch spec torch-spyre's newer code writes beside a compiled kernel
  (``codegen/kernel_launchspec.py``; its ``kernel_name`` is the wrapper's name), and what
  ``spyre launch`` is given; read as the bundle folder's name, and ``lookup`` reads the
  file's ``kernel_name`` where the folder is none it knows (a cache folder is named by its key);
- ``<bundle folder>/spyreCodeDir/bundle.mlir#<step>``: the compute step's name (its
  ``cb_name``, FLEX JSON's ``CBName``, the AIUPTI activity's name) as torch-spyre main's
  ``prepare_kernel`` names it when the kernel has no provenance name
  (``csrc/prepare_kernel.cpp:344-368`` at 9a6b71e: the last two folders of its
  ``spyreCodeDir`` path and ``bundle.mlir``, then ``#<step>``); read as the bundle folder.
  With a provenance name the step is ``<device event>#<step>``, read as an event; a name the
  SpyreCode's own ``ComputeOnDevice`` command carries is read as any kernel name;
- ``<bundle folder> Cmpt Exec`` (``Cmpt Prep``, ``DmaI``, ``DmaO``): the device timeline as
  IBM's trace analyzer (``acelyzer``) names it, by the kernel's bundle folder; and a device
  event as acelyzer renames it, digits dropped (``spyre_kernel_v_fused_add_vsancadvtjfcqcv#``).

A name with a suffix is matched against the names the index knows: exact first, else the
longest known name followed by ``_`` (``addmm_1`` never takes ``addmm_10``'s suffix).
Pure: no torch.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import msgspec

from spyre_provenance.model import kernel_keys

_KEY = re.compile(r"(?P<name>.+):(?P<handle>[1-9][0-9]*)")
_HANDLE_ID = re.compile(r"[0-9]{6,20}")  # 63-bit content hashes, as strings
_PROFILER_PREFIX = re.compile(r"graph_[0-9]+_(?=.)")
_BUNDLE_PREFIX = re.compile(r"[0-9a-f]{8}_(?=.)")
_SPYRE_EVENT_STEP = re.compile(r"#[0-9]+$")  # torch-spyre profiler events end in "#<step>"


#: torch-spyre's device event as IBM's trace analyzer (acelyzer 1.3) renames it (``renamed``):
#: ``spyre_kernel_v_fused_linear_relu_rboeoodiniuupxu#``
_RENAMED_EVENT = re.compile(r"spyre_kernel_v_[A-Za-z_]+#?")
_DIGIT_RUN = re.compile(r"(\D+)(\d+)")


def renamed(name: str) -> str:
    """``name`` as acelyzer 1.3 renames trace events (``RefinementContext._update_event_names``
    without ``--keep_names``): each run of digits dropped, and a ``_`` right before it,
    unless the text before the run ends in ``V``."""
    out, last = [], 0
    for match in _DIGIT_RUN.finditer(name):
        out.append(match[1].removesuffix("_") + (match[2] if match[1].endswith("V") else ""))
        last = match.end()
    return "".join(out) + name[last:]


#: torch-spyre's CPU spans (``record_function``) around a kernel's launch, plan and device compile
CPU_SPANS = ("launch_jobplan:", "prepare_kernel:", "dxp_standalone:")
#: the device-timeline event kinds of IBM's trace analyzer, after the bundle folder's name
DEVICE_TIMELINE = re.compile(r"(?P<folder>\S.*) (?:Cmpt Exec|Cmpt Prep|DmaI|DmaO)")


class Query(msgspec.Struct, frozen=True):
    text: str
    form: str  # one of model.lookup_records.QUERY_FORMS
    name: str  # the kernel name or bundle folder part ("" for a handle id or a provenance key)
    handle: int | None = None
    provenance_key: str | None = None  # torch-spyre's key, for an event or a bare key
    renamed_event: str | None = None  # a device event as acelyzer renamed it (``renamed``)
    launch_spec: str | None = None  # the launch_spec.json a compiled kernel's path names


def parse(text: str) -> Query:
    """What kind of name ``text`` is (the candidate kernel names come from ``candidates``)."""
    text = text.strip()
    if _HANDLE_ID.fullmatch(text):  # before keys: a key is never all digits, an id always is
        return Query(text, "handle", "")
    event_key = kernel_keys.key_of_event(text)
    if event_key is not None:
        return Query(text, "event", "", provenance_key=event_key)
    if _RENAMED_EVENT.fullmatch(text):  # as acelyzer renames it: the key's digits dropped too
        return Query(text, "event", "", renamed_event=text.removesuffix("#"))
    if kernel_keys.KEY_RE.fullmatch(text):
        return Query(text, "provenance_key", "", provenance_key=text)
    for span in CPU_SPANS:
        if text.startswith(span) and len(text) > len(span):
            return Query(text, "cpu_span", text[len(span) :])
    timeline = DEVICE_TIMELINE.fullmatch(text)
    if timeline:
        return Query(text, "device_timeline", timeline["folder"])
    step = COMPUTE_STEP.fullmatch(text)
    if step:
        return Query(text, "kernel", step["folder"])
    spec = launch_spec_of(text)
    if spec is not None:
        return Query(text, "kernel", spec[0], launch_spec=spec[1])
    key = _KEY.fullmatch(text)
    if key:
        return Query(text, "key", key["name"], int(key["handle"]))
    return Query(text, "kernel", _SPYRE_EVENT_STEP.sub("", text))


#: torch-spyre's names of a compiled kernel's code folder and the launch spec in it
#: (``codegen/kernel_launchspec.py``: ``SPYRECODE_DIR``, ``LAUNCH_SPEC_FILE``)
SPYRECODE_DIR = "spyreCodeDir"
LAUNCH_SPEC_FILE = "launch_spec.json"
#: the folder torch-spyre writes every kernel's bundle folder in (``get_output_dir``)
BUNDLE_ROOT = "inductor-spyre"
#: a compute step's ``cb_name`` without a provenance name (``prepare_kernel.cpp:363-366``)
COMPUTE_STEP = re.compile(rf"(?:.*[/\\])?(?P<folder>[^/\\]+)[/\\]{SPYRECODE_DIR}[/\\]bundle\.mlir(?:#[0-9]+)?")


def launch_spec_of(text: str) -> tuple[str, str] | None:
    """A path to a compiled kernel's launch spec, its ``spyreCodeDir``, or its bundle folder
    (``.../inductor-spyre/<folder>``): (the bundle folder's name, the launch spec's path);
    None for any other text. ``/`` or ``\\`` separated; nothing is read here."""
    parts = [p for p in re.split(r"[/\\]+", text) if p]
    if len(parts) < 2:
        return None
    spec = text if parts[-1] == LAUNCH_SPEC_FILE else None
    folder = parts[:-1] if spec is not None else parts
    if folder and folder[-1] == SPYRECODE_DIR:
        folder = folder[:-1]
    elif spec is None and parts[-2] != BUNDLE_ROOT:
        return None
    if not folder:
        return None
    if spec is None:
        spec = f"{text.rstrip('/').rstrip(chr(92))}/{SPYRECODE_DIR}/{LAUNCH_SPEC_FILE}"
        if parts[-1] == SPYRECODE_DIR:
            spec = f"{text.rstrip('/').rstrip(chr(92))}/{LAUNCH_SPEC_FILE}"
    return folder[-1], spec


def without_uuid(folder: str) -> str | None:
    """A bundle folder's name without its ``<uuid8>_`` prefix: ``<kernel>_<mkdtemp 8>``, the
    name device errors print (torch-spyre #1234); None when it has no such prefix."""
    return folder[9:] if _BUNDLE_PREFIX.match(folder) else None


def has_profiler_prefix(name: str) -> bool:
    """Whether ``name`` is named as Inductor's C++ kernel profiling names a kernel event."""
    return _PROFILER_PREFIX.match(name) is not None


def candidates(name: str) -> list[str]:
    """``name`` and what it is with a profiler or bundle-folder prefix taken off, in that order."""
    found = [name]
    for prefix in (_PROFILER_PREFIX, _BUNDLE_PREFIX):
        for known in list(found):
            stripped = prefix.sub("", known, count=1) if prefix.match(known) else None
            if stripped and stripped not in found:
                found.append(stripped)
    return found


def resolve(name: str, known: Collection[str]) -> list[str]:
    """The known kernel names ``name`` stands for: an exact match of a candidate, else the
    longest known name that a candidate starts with followed by ``_`` (a runtime suffix)."""
    options = candidates(name)
    exact = [c for c in options if c in known]
    if exact:
        return exact[:1]
    best: list[str] = []
    for option in options:
        prefixes = [k for k in known if option.startswith(k + "_")]
        if prefixes:
            longest = max(len(k) for k in prefixes)
            best = [k for k in prefixes if len(k) == longest]
            break
    return sorted(best)
