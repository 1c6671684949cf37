"""What a torch other than the goldens' own (2.13.0) really writes differently, per golden case.

``golden check`` on that torch must fail with exactly these changes (every change line matches
one pattern, every pattern matches a line) and the toolchain hint; anything else is a
regression. Keys: (case, torch major.minor). Found by ``make test-torch-next`` and read in the
compiled output of each release.
"""

from __future__ import annotations

import re

_GRAPH = r"(?:rank\d/)?graph_\d\d_\d+-\d+_(?:inference|forward|backward)"

# 2.15 underlines a call's span one character shorter where the callee is an attribute
# (`self.fc1(x)`: 12 carets in 2.13 and 2.14, 11 in 2.15): same frames, same lines, other text,
# at each such line of a kernel (a kernel fused across model lines lists them all)
_CHANGED_AT = r"examples\.py:\d+ `[^`]*`"
CARETS_215 = re.compile(
    _GRAPH + rf": stack traces of \S+: same lines, text changed at {_CHANGED_AT}(?:, {_CHANGED_AT})*"
)

# the collectives end their stack traces in torch's own _functional_collectives.py, whose
# quoted lines read and sit differently in each release
COLLECTIVES_214 = re.compile(
    _GRAPH + r": stack traces of torch\.ops\._c10d_functional\.\w+\.default:\d+: "
    r"same lines, text changed at _functional_collectives\.py:\d+ .*"
)
COLLECTIVES_215 = re.compile(
    _GRAPH + r": stack traces of torch\.ops\._c10d_functional\.\w+\.default:\d+: "
    r"lost _functional_collectives\.py:\d+ `[^`]*`; gained _functional_collectives\.py:\d+ `[^`]*`"
)

OTHER_TORCH_CHANGES: dict[tuple[str, str], tuple[re.Pattern[str], ...]] = {
    ("tensor_parallel", "2.14"): (COLLECTIVES_214,),
    ("mlp", "2.15"): (CARETS_215,),
    ("mlp_fp16", "2.15"): (CARETS_215,),
    ("mlp_inductor", "2.15"): (CARETS_215,),
    ("mlp_train", "2.15"): (CARETS_215,),
    ("residual", "2.15"): (CARETS_215,),
    ("tensor_parallel", "2.15"): (CARETS_215, COLLECTIVES_215),
}


def expected_changes(case: str, torch_version: str) -> tuple[re.Pattern[str], ...] | None:
    """The patterns for ``case`` on ``torch_version`` (``2.15.0+cpu`` -> ``2.15``); None: none known."""
    return OTHER_TORCH_CHANGES.get((case, ".".join(torch_version.split("+")[0].split(".")[:2])))


def unexplained(changes: list[str], patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    """What holds the changes to exactly ``patterns``: lines no pattern explains, and patterns
    that explain no line (as ``pattern: <regex>``); empty when they agree."""
    wrong = [line for line in changes if not any(p.fullmatch(line) for p in patterns)]
    unused = [f"pattern: {p.pattern}" for p in patterns if not any(p.fullmatch(line) for line in changes)]
    return wrong + unused
