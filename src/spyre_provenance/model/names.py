"""Names every layer agrees on: artifacts, torch's records beside them, stages, rules.

Artifact names are as they appear in a TORCH_TRACE envelope (``"artifact": {"name": ...}``);
the enums are the value sets the JSON Schemas list (a test checks each against its schema).

One table, ``ARTIFACT_KINDS``, says of each kind of document where it is written and which
engine reads it; the lists the engines use are read from it.

Pure: imports only the standard library.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Artifact names as they appear in a TORCH_TRACE envelope (``"artifact": {"name": ...}``).
NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
KERNEL_STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
KERNEL_INFORMATION = "kernel_information"
OPSPEC_DEBUG_HANDLES = "spyre_opspec_debug_handles"
DIAGNOSTICS = "spyre_provenance_diagnostics"
AUDIT = "provenance_audit"
# torch's own records of a graph that coverage and tlparse read beside them
PRE_GRAD_GRAPH = "before_pre_grad_graph"  # the graph compile_fx is handed, as tlparse shows it
POST_GRAD_GRAPHS = ("inductor_post_grad_graph", "after_post_grad_graph")  # the name moved in torch 2.8
OUTPUT_CODE = "inductor_output_code"
#: The four maps of a node-mappings document, in upstream's key order.
MAP_FIELDS = ("preToPost", "postToPre", "cppCodeToPost", "postToCppCode")

# The hook's fault stages, in the order a graph passes through them (``FAULT_STAGES``; the
# diagnostics schema lists the same names).
FAULT_STAGES = (
    "record collection",
    "get_kernel_metadata",
    "OpSpec handle reading",
    "build",
    "validate",
    "emit",
    "file write",
)
GRAPH_KINDS = ("inference", "forward", "backward")
#: The rules coverage is judged by (``coverage.judge``), named in violations.
COVERAGE_RULES = ("call-sites", "kernel-link", "node-reach", "opspec-handle", "fused-constituents")
#: Why a post-grad node the mapping lists under a kernel is there although the kernel's
#: schedule does not name it: computed inside the kernel (inlined), or the node reading
#: what a kernel that copies a graph input writes.
INFERRED_REASONS = ("inlined", "consumer")
#: Where a kernel without a stack trace of its own took its source line from: a node its
#: mapping lists for one of INFERRED_REASONS, the value a write-back copies, a reader, or
#: the values it is computed from (a gradient accumulation).
INFERRED_SOURCE_REASONS = ("inlined", "consumer", "write-back", "inputs")
#: Why a post-grad node is linked to pre-grad nodes beyond its from_node chain: the forward
#: op it differentiates (autograd's seq_nr), the value it writes back, the nodes reading it
#: (older writers only: a reader is no evidence), the gradients it sums, the higher-order op
#: holding the subgraph it was traced from.
INFERRED_PRE_GRAD_REASONS = ("seq_nr", "write-back", "consumer", "inputs", "subgraph")

#: A TORCH_TRACE record of the hook's (``{"label": ...}``), one per graph when a session has
#: a label: ``lookup`` and ``annotate`` name the model by it, not by the log's file name
#: (torch names a TORCH_TRACE log at random). Not a provenance artifact: no schema, no file.
MODEL_LABEL = "spyre_provenance_model_label"
#: The module name a model file (``PATH.py:FACTORY``) is loaded under starts so, the rest
#: spelling its path (``compile.examples``); what records a class names it by the file's stem.
FILE_MODEL_MODULE = "spyre_provenance_model_"
#: What ``lookup --format json`` prints: a document with a schema, never a file of a compile.
LOOKUP = "provenance_lookup"
#: What ``annotate --summary --format json`` prints: kernel time per source line and module.
TIME_SUMMARY = "provenance_time_summary"
#: What ``compare --format json`` prints: two compiles side by side per source line.
COMPARE = "provenance_compare"
#: Documents the command line prints (schemas/<name>/, no file name, no detection).
PRINTED_DOCUMENTS = (LOOKUP, TIME_SUMMARY, COMPARE)
#: The viewer's one JSON document, embedded in its page (``model.viewer_records``): a schema
#: held equal to its records, no file of its own, no detection.
VIEWER_DOCUMENT = "spyre_viewer_document"
#: Documents with a schema but no artifact kind: the printed ones and the viewer's.
SCHEMA_ONLY_DOCUMENTS = (*PRINTED_DOCUMENTS, VIEWER_DOCUMENT)

#: The model's source lines that made a graph's kernels, with context, read at compile time
#: (the file may have changed, or be absent, where the viewer's page is opened). A companion
#: document of the viewer (``spyre-provenance view``): written beside a graph's artifacts,
#: with its schema, but neither logged for tlparse nor compared by golden files.
SOURCE_LINES = "spyre_source_lines"
#: Lines of context kept on each side of a source line that made a kernel.
SOURCE_CONTEXT = 3

#: torch-spyre's own provenance (its open PR #3449): the sidecar ``spyre_provenance.json`` and
#: the TORCH_TRACE artifact of that name, which holds the same text. Written by torch-spyre,
#: never by this project: validate checks it, compile cross-checks the hook's artifacts
#: against it, lookup reads it (``validate.spyre_sidecar``, ``runtime.index``).
SPYRE_SIDECAR = "spyre_provenance"


def artifact_file(artifact: str) -> str:
    """The file an artifact is written as, in a graph folder and a golden case."""
    return f"{artifact}.json"


class ArtifactKind(NamedTuple):
    """One kind of document a compile writes: the one place that says where it goes and
    which engine reads it (emit writes it, validate checks it, golden compares it)."""

    #: its record name in a TORCH_TRACE envelope, and its schema folder ``schemas/<name>/``
    name: str
    #: the names torch, tlparse and this project give its files: how validate tells a file's
    #: kind by name (tlparse appends ``_<n>`` before ``.json``)
    file_pattern: str
    #: who writes it: ``torch`` (upstream Inductor), ``hook`` (beside each graph, ``capture.emit``),
    #: ``audit`` (``compile --audit``, one per compile), ``viewer`` (the hook, for the viewer),
    #: ``torch-spyre`` (its own sidecar, PR #3449)
    written_by: tuple[str, ...]
    #: logged into TORCH_TRACE, where validate and tlparse read it
    logged: bool
    #: compared by golden files, graph by graph
    golden: bool
    #: checked by ``validate`` (and the pre-commit hook): files by name, log records by name
    validated: bool
    #: a provenance artifact; False: a companion document only this project's readers use
    provenance: bool = True

    @property
    def file(self) -> str:
        """Its file name in a graph folder, an ``--out`` folder and a golden case."""
        return artifact_file(self.name)


#: Every kind, in the order reports list them.
ARTIFACT_KINDS = (
    ArtifactKind(
        NODE_MAPPINGS, "inductor_provenance_tracking_node_mappings*.json", ("torch", "hook"), True, True, True
    ),
    ArtifactKind(KERNEL_STACK_TRACES, "*kernel_stack_traces*.json", ("torch", "hook"), True, True, True),
    # in AOTInductor packages, not in logs
    ArtifactKind(KERNEL_INFORMATION, "kernel_information.json", ("torch",), False, True, True),
    ArtifactKind(OPSPEC_DEBUG_HANDLES, "spyre_opspec_debug_handles*.json", ("hook",), True, True, True),
    # what went wrong and what was inferred: checked, not compared (paths, timings, faults)
    ArtifactKind(DIAGNOSTICS, "spyre_provenance_diagnostics*.json", ("hook",), True, False, True),
    # compared by golden files as the audit case's whole document (golden.store.AUDIT_FILE)
    ArtifactKind(AUDIT, "provenance_audit*.json", ("audit",), False, False, True),
    ArtifactKind(SOURCE_LINES, "spyre_source_lines*.json", ("viewer",), False, False, True, provenance=False),
    # torch-spyre's own, read by this project's readers: after the diagnostics, whose files
    # this name pattern matches too (a file takes the first kind whose pattern it matches)
    ArtifactKind(SPYRE_SIDECAR, "spyre_provenance*.json", ("torch-spyre",), True, False, True, provenance=False),
)
KINDS = {kind.name: kind for kind in ARTIFACT_KINDS}

#: Every provenance artifact this project reads or writes, in the order reports list them.
ARTIFACTS = tuple(kind.name for kind in ARTIFACT_KINDS if kind.provenance)
#: Documents written beside the artifacts that only this project's own readers use.
COMPANION_DOCUMENTS = tuple(kind.name for kind in ARTIFACT_KINDS if not kind.provenance)
#: The artifacts a TORCH_TRACE log may carry.
LOGGED_ARTIFACTS = frozenset(kind.name for kind in ARTIFACT_KINDS if kind.logged)
#: The artifacts golden files compare graph by graph, in the table's order.
GOLDEN_ARTIFACTS = tuple(kind.name for kind in ARTIFACT_KINDS if kind.golden)
#: File names validate tells a kind by (``detect.artifact_for_filename``), of the kinds it checks.
FILENAME_PATTERNS = {kind.name: kind.file_pattern for kind in ARTIFACT_KINDS if kind.validated}
#: File names that hold no artifact although a kind's pattern takes them: tlparse writes the
#: hook's ``MODEL_LABEL`` record as ``spyre_provenance_model_label_<n>.json``, which the
#: sidecar's ``spyre_provenance*.json`` matches (``run`` puts tlparse's output under OUT).
NOT_ARTIFACT_PATTERNS = (f"{MODEL_LABEL}*.json",)
#: What a compile's eager check compared the eager output with (``CompileReport.compared``):
#: the tracked compile itself, or (its graphs draw random numbers, which compiled code draws
#: differently from eager) a second, untracked compile with Inductor's ``fallback_random``,
#: which draws them as eager does. Here, not beside the compile, so the summary reads it
#: without importing the compile's side.
COMPARED_TRACKED = "tracked"
COMPARED_FALLBACK_RANDOM = "fallback_random"
#: A debug handle's ``transform_history[].kind`` (torch-spyre's ProvenanceTransform).
TRANSFORM_KINDS = ("rewrite", "fusion", "decomposition", "clone", "remap")
#: Whose node mapping the log holds for a graph (diagnostics ``mapping``).
MAPPING_SOURCES = ("hook", "upstream")


def filename_regex() -> str:
    """FILENAME_PATTERNS as one regex over a repository path: ``.pre-commit-hooks.yaml``'s
    ``files``, which a test holds equal to this, so the hook checks every artifact kind."""
    globs = sorted(set(FILENAME_PATTERNS.values()))
    alternatives = "|".join(re.escape(g[: -len(".json")]).replace(r"\*", "[^/]*") for g in globs)
    return rf"(^|/)({alternatives})\.json$"
