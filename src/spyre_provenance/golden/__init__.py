"""Golden provenance: cases, normalization, storage, the structural diff, the regression check.

A *golden case* is a folder ``golden/<case>/`` laid out like a compile's ``--out``::

    manifest.json                       how it was made: model, backend, dtype, train, torch
    graph_00_0-0_inference/             one folder per compiled graph, in compile order
        inductor_provenance_tracking_node_mappings.json
        inductor_provenance_tracking_kernel_stack_traces.json
        spyre_opspec_debug_handles.json  (backends with OpSpecs)
    superdsc_bundle_handles.json        (backends with bundles) each bundle's debug_handle_

An *audit case* (``Case.audit``) holds ``manifest.json`` and ``provenance_audit.json`` only,
compared by its counts (``spyre_provenance.audit.report.changes_between``).

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

The commands (``diff``, ``golden``) and the pytest plugin are thin layers over this folder, so
all three write and read the same bytes. Pure: no torch import.
"""

from spyre_provenance.golden.cases import (
    CASES,
    MANIFEST,
    Case,
    case_manifest,
    make_manifest,
    manifest_hints,
    select_cases,
    source_checkout,
    torch_version,
)
from spyre_provenance.golden.diff import Change, Differences, differences, render
from spyre_provenance.golden.normalize import (
    BUNDLE_HANDLES,
    Roots,
    dumps,
    normalize,
    normalize_bundle_handles,
    normalize_path,
    normalize_text,
)
from spyre_provenance.golden.store import (
    ARTIFACT_FILES,
    BUNDLE_HANDLES_FILE,
    Provenance,
    fresh_case,
    graph_names,
    load,
    read_case,
    stale_files,
    write_case,
)
from spyre_provenance.links.portable import handle_id

__all__ = [
    "ARTIFACT_FILES",
    "BUNDLE_HANDLES_FILE",
    "BUNDLE_HANDLES",
    "CASES",
    "MANIFEST",
    "Case",
    "Change",
    "Differences",
    "Provenance",
    "Roots",
    "case_manifest",
    "differences",
    "dumps",
    "fresh_case",
    "graph_names",
    "handle_id",
    "load",
    "make_manifest",
    "manifest_hints",
    "normalize",
    "normalize_bundle_handles",
    "normalize_path",
    "normalize_text",
    "read_case",
    "render",
    "select_cases",
    "source_checkout",
    "stale_files",
    "torch_version",
    "write_case",
]
