"""``spyre-provenance diff A B``: what moved between two sets of provenance artifacts.

A and B are each an artifact JSON file, a graph folder, a compile ``--out`` folder, a golden
case folder, or a TORCH_TRACE log. Both are normalized (``golden.normalize``) and compared
structurally; one line per change, A being the old side:

    kernel renamed: sdsc_fused_mm_t_1:2 -> sdsc_fused_addmm_t_1:2 (same post-grad nodes)
    kernel sdsc_fused_addmm_relu_t_0:1: post-grad nodes lost: add
    pre-grad node linear: linked post-grad nodes gained: add_1
    OpSpec sdsc_fused_addmm_relu_t_0:1 buf2 (relufwd): lost its debug handle

Exit 0: same provenance; 1: different; 2: unusable input (one line on stderr).
"""

from __future__ import annotations

import argparse

from spyre_provenance import golden
from spyre_provenance.base.errors import UnusableInput, Verdict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", metavar="A", help="old side: artifact file, graph folder, compile --out, golden case, or log"
    )
    parser.add_argument("b", metavar="B", help="new side: same kinds as A")
    parser.add_argument(
        "--root",
        action="append",
        default=None,
        metavar="DIR",
        help="project root: absolute paths under it compare as relative (repeatable; "
        "default: this source checkout, else the current folder)",
    )


def run(args: argparse.Namespace) -> int:
    a, b = golden.load(args.a), golden.load(args.b)
    if _single_file(a) != _single_file(b):
        raise UnusableInput(args.b, "compare a file with a file, a folder with a folder")
    if _single_file(a):
        (kind_a,), (kind_b,) = a.graphs[""], b.graphs[""]
        if kind_a != kind_b:
            raise UnusableInput(args.b, f"is {kind_b}, while {args.a} is {kind_a}: nothing to compare")
    roots = golden.Roots.default(*(args.root or []))
    comparison = golden.differences(a, b, roots, labels=(args.a, args.b))
    print(golden.render(comparison, args.a, args.b))
    return Verdict.judge(wanting=[] if comparison.equal else [f"{args.a} and {args.b} differ"]).exit_code


def _single_file(p: golden.Provenance) -> bool:
    return list(p.graphs) == [""]
