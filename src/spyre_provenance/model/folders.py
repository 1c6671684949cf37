"""Graph-folder, rank-folder and process-folder names: ``graph_<model>_<order>_<compile id>_<kind>``,
``rank<r>``, ``<program>_rank<r>_local<l>_pid<p>``; one place for the rule writers and readers depend on. Where they go in an
``--out`` folder: ``model.layout``.

Pure: imports nothing of ours.
"""

from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import NamedTuple

GRAPH_PREFIX = "graph_"
# What ``compile --out`` holds besides the graph folders: ``model.layout``
#: A SuperDSC bundle's file in its kernel's folder, one per OpSpec in emission order
#: (torch-spyre's ``generate_bundle``); ``BUNDLE_FILE_RE`` reads the index back.
BUNDLE_FILE = "sdsc_{}.json"
BUNDLE_FILE_RE = re.compile(r"sdsc_([0-9]+)\.json")
#: A kernel's bundle folder as torch-spyre main names it (9a6b71e,
#: ``execution/async_compile.py`` ``get_output_dir``): ``uuid4().hex[:8]``, the kernel's name,
#: and ``tempfile.mkdtemp``'s 8 characters (``[a-z0-9_]``): ``1a2b3c4d_sdsc_fused_neg_0_il7ixi06``.
#: the longest file name the filesystems we write to take (``NAME_MAX``)
NAME_MAX = 255
_BUNDLE_FOLDER = re.compile(r"[0-9a-f]{8}_(?P<kernel>.+)_[a-z0-9_]{8}")
#: ``compile --ranks N`` writes each rank's output into ``rank<r>/`` of ``--out``.
RANK_PREFIX = "rank"
_RANK_FOLDER = re.compile(r"rank(?P<rank>0|[1-9][0-9]*)")
# a label has a non-digit, so it never reads as the compile order "00"
_GRAPH_FOLDER = re.compile(r"graph_(?:(?P<label>[0-9A-Za-z.-]*[A-Za-z.-][0-9A-Za-z.-]*)_)?(?P<rest>[0-9]+_.*)")


def transliterate(text: str) -> str:
    """``text`` in ASCII, one rule for every name the tool derives from a model's: accents
    dropped (``modèle`` -> ``modele``, ``ß`` -> ``ss``), anything else without an ASCII form
    left out (two such names may then agree: ``compile`` refuses a label ``--out`` holds
    for another model)."""
    return unicodedata.normalize("NFKD", text.replace("ß", "ss")).encode("ascii", "ignore").decode("ascii")


def model_label(text: str) -> str:
    """``text`` as a graph-folder label: letters, digits, ``.`` and ``-`` only (an ``_``
    becomes ``-``, non-ASCII is ``transliterate``d), so the label never runs into the folder
    name's ``_``-separated parts."""
    label = re.sub(r"[^0-9A-Za-z.-]+", "-", transliterate(text)).strip("-.") or "model"
    return label if not label.isdigit() else f"model-{label}"


def compile_id_part(compile_id: str) -> str:
    """A compile id as a folder-name part: ``[0/0_1]`` -> ``0-0_1``."""
    return re.sub(r"[^0-9A-Za-z_]+", "-", compile_id).strip("-") or "none"


def graph_folder(index: int, compile_id: str, kind: str | None = None, label: str | None = None) -> str:
    """``graph_00_0-0_forward`` (compile order, compile id, graph kind; sortable, unique),
    ``graph_mlp_00_0-0_forward`` with a model label."""
    prefix = f"{GRAPH_PREFIX}{model_label(label)}_" if label else GRAPH_PREFIX
    return f"{prefix}{index:02d}_{compile_id_part(compile_id)}" + (f"_{kind}" if kind else "")


def is_graph_folder_of(name: str, label: str | None) -> bool:
    """Whether ``name`` is a graph folder of the model ``label`` (None: unlabeled)."""
    match = _GRAPH_FOLDER.fullmatch(name)
    return match is not None and match["label"] == (model_label(label) if label else None)


_GRAPH_FOLDER_REST = re.compile(r"[0-9]+_(?P<cid>.+?)(?:_(?P<kind>inference|forward|backward))?")


def label_and_compile_id(name: str) -> tuple[str | None, str] | None:
    """What ``graph_folder`` wrote into ``name``: the model label (None: unlabeled) and the
    compile id as ``0/0``; None for a name that is no graph folder's."""
    match = _GRAPH_FOLDER.fullmatch(name)
    rest = _GRAPH_FOLDER_REST.fullmatch(match["rest"]) if match else None
    if match is None or rest is None:
        return None
    return match["label"], rest["cid"].replace("-", "/")


def kind_of_folder(name: str) -> str:
    """The graph kind a graph folder's name ends with (``inference``, ``forward``,
    ``backward``), else ``unknown``: what a folder says when no diagnostics do."""
    match = _GRAPH_FOLDER.fullmatch(name)
    rest = _GRAPH_FOLDER_REST.fullmatch(match["rest"]) if match else None
    return rest["kind"] if rest is not None and rest["kind"] else "unknown"


def next_unlabeled_order(names: list[str]) -> int:
    """The first compile order after every unlabeled graph folder among ``names``: where a
    session without a label starts numbering, so a second session (after
    ``torch._dynamo.reset()``, its compile ids start at 0/0 again) never overwrites the
    first's folders."""
    orders = [
        int(match["rest"].split("_", 1)[0])
        for name in names
        if (match := _GRAPH_FOLDER.fullmatch(name)) is not None and match["label"] is None
    ]
    return max(orders) + 1 if orders else 0


def without_label(name: str) -> str:
    """``graph_mlp_00_0-0_forward`` -> ``graph_00_0-0_forward``; other names unchanged."""
    match = _GRAPH_FOLDER.fullmatch(name)
    return f"{GRAPH_PREFIX}{match['rest']}" if match and match["label"] else name


def rank_folder(rank: int) -> str:
    """``rank0``: where rank 0 of a ``compile --ranks N`` run writes its output."""
    return f"{RANK_PREFIX}{rank}"


def rank_of_folder(name: str) -> int | None:
    """``rank1`` -> 1; None for any other name."""
    match = _RANK_FOLDER.fullmatch(name)
    return int(match["rank"]) if match else None


_TLPARSE_RANK_FOLDER = re.compile(r"rank_(?P<rank>0|[1-9][0-9]*)")


def rank_of_path(parts: tuple[str, ...]) -> int | None:
    """The rank of the innermost ``rank<r>`` folder (or tlparse's ``rank_<r>``, in its
    multi-rank report) among a path's parts, else None."""
    for part in reversed(parts):
        match = _RANK_FOLDER.fullmatch(part) or _TLPARSE_RANK_FOLDER.fullmatch(part)
        if match:
            return int(match["rank"])
    return None


def bundle_folder_name(kernel: str, content: bytes) -> str:
    """The reference backend's name for the folder of a kernel's bundles, shaped as torch-spyre
    main's (``<uuid8>_<kernel>_<suffix>``) but derived from the bundles' bytes ``content``
    instead of drawn at random: the uuid8 is the first 8 hex digits of their SHA-256, the
    suffix the next 5 bytes of it in lowercase base32 (``a-z2-7``, inside mkdtemp's alphabet).
    The same bundles give the same folder, byte for byte; two graphs' kernels of one name
    (suffixes restart per graph) with different bundles get two folders."""
    digest = hashlib.sha256(content).digest()
    suffix = base64.b32encode(digest[4:9]).decode("ascii").lower()
    return f"{digest[:4].hex()}_{kernel_in_folder_name(kernel)}_{suffix}"


def kernel_in_folder_name(kernel: str) -> str:
    """The kernel's part of its bundle folder's name: the whole name, or as much of it as
    fits a file name (``NAME_MAX``, 255 bytes, with the 18 of ``<uuid8>_`` and ``_<suffix>``).
    A training graph's one bundle can name every op it runs: gpt2's backward kernel name
    is longer than 240 characters."""
    room = NAME_MAX - len("01234567_") - len("_abcdefgh")
    return kernel.encode("utf-8")[:room].decode("utf-8", "ignore")


def is_one_name(name: str) -> bool:
    """Whether ``name`` can name one folder under a root: one path component (no separator,
    not ``.`` or ``..``) of at most ``NAME_MAX`` bytes. A bundle folder an artifact records is
    looked for only then: a longer name cannot exist, and another would lead out of the root."""
    return (
        name not in ("", ".", "..")
        and "/" not in name
        and "\0" not in name
        and len(name.encode("utf-8", "surrogatepass")) <= NAME_MAX
    )


def kernel_of_bundle_folder(name: str) -> str | None:
    """The kernel a bundle folder named as torch-spyre main names it is of; None for a name
    of another shape."""
    match = _BUNDLE_FOLDER.fullmatch(name)
    return match["kernel"] if match else None


# --- the processes of a run (``spyre-provenance run``, ``SPYRE_PROVENANCE_OUT``) ---------------

#: ``<program>[_rank<R>][_local<L>]_pid<P>[-<N>]``: one folder per tracked process under a
#: run's ``OUT``. The program is a label (no ``_``), so the parts never run into each other.
#: ``-<N>``: the N-th process of that name to claim a folder in ``OUT`` (pids repeat: in a
#: container the program is pid 1 on every start).
_PROCESS_FOLDER = re.compile(
    r"(?P<program>[0-9A-Za-z.-]+)(?:_rank(?P<rank>0|[1-9][0-9]*))?(?:_local(?P<local>0|[1-9][0-9]*))?"
    r"_pid(?P<pid>[1-9][0-9]*)(?:-(?P<claim>[2-9]|[1-9][0-9]+))?"
)


class ProcessFolder(NamedTuple):
    """What a tracked process's folder name says: the program, torchrun's ``RANK`` and
    ``LOCAL_RANK`` (None: not a torchrun worker), the pid, and which claim of that name
    it is (1: the first, whose name has no ``-<N>``)."""

    program: str
    rank: int | None
    local_rank: int | None
    pid: int
    claim: int = 1

    @property
    def name(self) -> str:
        rank = "" if self.rank is None else f"_rank{self.rank}"
        local = "" if self.local_rank is None else f"_local{self.local_rank}"
        again = "" if self.claim == 1 else f"-{self.claim}"
        return f"{model_label(self.program)}{rank}{local}_pid{self.pid}{again}"

    @property
    def order(self) -> tuple[bool, int, int, str, int, int]:
        """Ranks first in rank order, then the other processes by program and pid."""
        return (self.rank is None, self.rank or 0, self.local_rank or 0, self.program, self.pid, self.claim)


def process_folder(program: str, pid: int, environ: Mapping[str, str]) -> ProcessFolder:
    """The folder of the process ``pid`` running ``program`` (``program_label``), its ranks
    read from torchrun's ``RANK`` and ``LOCAL_RANK`` in ``environ`` (a value that is no
    rank is left out, never guessed)."""
    return ProcessFolder(model_label(program), _rank(environ.get("RANK")), _rank(environ.get("LOCAL_RANK")), pid)


def _rank(value: str | None) -> int | None:
    return int(value) if value is not None and value.isascii() and value.isdigit() and len(value) < 10 else None


def process_of_folder(name: str) -> ProcessFolder | None:
    """``train_rank1_local1_pid4242`` -> its parts; None for any other name."""
    match = _PROCESS_FOLDER.fullmatch(name)
    if match is None:
        return None
    rank, local = match["rank"], match["local"]
    return ProcessFolder(
        match["program"],
        None if rank is None else int(rank),
        None if local is None else int(local),
        int(match["pid"]),
        int(match["claim"] or 1),
    )


def program_label(argv: Sequence[str], orig_argv: Sequence[str]) -> str:
    """What a person calls the program a process runs, as a label: ``train`` for
    ``python train.py``, ``torch.distributed.run`` for ``python -m torch.distributed.run``,
    ``torchrun`` for the console script, ``python-c`` for ``python -c``, ``python`` for an
    interactive interpreter. ``argv`` is ``sys.argv`` (a spawned worker has its parent's),
    ``orig_argv`` the interpreter's own (``sys.orig_argv``): it tells ``-m`` apart."""
    first = argv[0] if argv else ""
    module = _module_option(orig_argv)
    if module is not None and first not in ("-c", ""):
        return model_label(module)
    if first == "-c":
        return "python-c"
    if first in ("", "-"):
        return "python"
    stem = first.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return model_label(stem[:-3] if stem.endswith(".py") else stem)


def _module_option(orig_argv: Sequence[str]) -> str | None:
    """The X of ``-m X`` among the interpreter's options (``-mX`` too), else None."""
    args = iter(orig_argv[1:])
    for arg in args:
        if arg == "-m":
            return next(args, None)
        if arg.startswith("-m") and not arg.startswith("--"):
            return arg[2:]
        if arg in ("-c", "-") or not arg.startswith("-"):
            return None  # the program starts here: what follows is its own
        if arg in ("-X", "-W"):
            next(args, None)  # the option's own value
    return None
