"""``view A --compare B``: two compiles side by side by source line in one page.

The comparison is ``compare``'s, computed by its one rule (``runtime.compare_folders``,
which reads both sides and calls ``runtime.compare.compare``) and embedded as ``compare
--format json`` prints it; the page only shows it. Beside it, the page holds both sides'
graphs (each tagged ``a`` or ``b``, one list of source lines), so a click on a line of the
comparison lights what the line became in a graph of either side.

Pure: no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.model.modules import MODULE_MARK
from spyre_provenance.runtime.compare_folders import compare_folders, split_name
from spyre_provenance.viewer import data, inputs


def build(
    a: str, b: str, timing: Any = None, bundles: list[Path] | None = None, trace: Path | None = None
) -> dict[str, Any]:
    """The document of ``view A --compare B``: A and B as ``compare`` names them (``PATH`` or
    ``PATH:COMPILE_ID``). ``trace`` is A's profiler trace (``--trace``): it times A's call
    sites (``timing``) and A's lines in the comparison, as ``compare --trace-a`` does; the
    traces ``compile --profile`` wrote beside each side's log are found as ``compare`` finds
    them. Raises UnusableInput for a side that cannot be read, before anything is written."""
    comparison = compare_folders(a, b, trace_a=trace)
    sides: list[data.Side] = []
    for side, name in (("a", a), ("b", b)):
        path, compile_id = split_name(name)
        graphs = inputs.graph_folders(path)
        if compile_id is not None:  # the graphs of the compile compare read (it checked it exists)
            graphs = [g for g in graphs if g.compile_id.strip("[]") == compile_id]
        sides.append((side, graphs))
    document = data.document(f"{a} --compare {b}", sides, split_name(a)[0], timing, bundles)
    document["compare"] = msgspec.to_builtins(comparison)
    document["module_mark"] = MODULE_MARK
    return document
