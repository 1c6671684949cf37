"""What the kinds' rules share, beyond their JSON Schemas: checks and the problems' wording.

The schema files (``schemas/<artifact>/v<N>.schema.json``) state shapes; ``model.wire`` the
typed form both engines decode into; each kind's module (``validate/kinds/``) its own rules,
its record's ``rules``. This module holds what several kinds (and the full engine's wording
of jsonschema's errors, ``validate.schemas``) share: kernel keys ``<kernel>:<N>`` with N
unique, no list naming one thing twice, the first duplicate by JSON equality, and the
messages both engines word alike (a missing node-mapping map, a kernel_information v2
dimension or dtype pair). It names no kind.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from spyre_provenance.model.detect import (
    HANDLE_ID_PATTERN,
    KERNEL_KEY_RE,
    Problem,
    key_path,
    quote,
    split_key,
)
from spyre_provenance.model.names import MAP_FIELDS
from spyre_provenance.model.records import NodeMap

HANDLE_ID_RE = re.compile(HANDLE_ID_PATTERN)

MSG_KERNEL_KEY = 'not a kernel key "<kernel>:<N>" (N a positive integer)'
MSG_BARE_NAME = 'has a ":<N>" debug handle suffix, which version 1 kernel names do not have'
MSG_HANDLE_ID = "not a handle id (a decimal string without leading zeros)"
MSG_DUPLICATE_KEY = "duplicate key (JSON readers keep only one of the values)"
MSG_EMPTY = "must not be empty"


def missing_maps(schema: int, present: Iterable[str]) -> list[Problem]:
    """The node-mapping maps a document lacks, one problem each (in upstream's key order).

    torch wrote what each schema requires: version 1 (create_node_mapping, torch 2.7/2.8)
    all four maps; version 2.0 (dump_inductor_provenance_info, 2.9+) all four or none.
    """
    have = set(present)
    missing = [name for name in MAP_FIELDS if name not in have]
    if schema == 2 and len(missing) == len(MAP_FIELDS):
        return []
    why = MSG_ALL_MAPS if schema == 1 else MSG_MAPS_TOGETHER
    return [Problem("$", f"missing required key {quote(name)} {why}") for name in missing]


MSG_ALL_MAPS = "(version 1 has all four maps)"
MSG_MAPS_TOGETHER = "(version 2.0 has all four maps or none)"


# kernel_information v2: the pairs torch writes together (the schema's dependentRequired)
KERNEL_INFO_PAIRS = {
    "input_shapes": "input_dtypes",
    "input_dtypes": "input_shapes",
    "output_shape": "output_dtype",
    "output_dtype": "output_shape",
}
DTYPE_PATTERN = r"^torch\.[a-z][a-z0-9_]*$"  # the schema's, applied as jsonschema does (re.search)
DTYPE_RE = re.compile(DTYPE_PATTERN)
MSG_DTYPE = 'not a torch dtype ("torch.float32", ...)'


def bad_dim(value: Any) -> str:
    return f"expected a size (an integer >= 0) or a symbolic one (a non-empty string), got {quote(value)}"


def missing_partner(field: str, partners: Iterable[str]) -> str:
    return f"has {quote(field)} without {' and '.join(map(quote, partners))} (torch writes them together)"


# --- checks kinds share -----------------------------------------------------------------------


def check_kernel_keys(keys: Iterable[str], path: str, v2: bool, problems: list[Problem]) -> None:
    """v2: every key is ``<kernel>:<N>`` and no N is used twice. v1: no key has a handle."""
    owner: dict[int, str] = {}
    for key in keys:
        has_handle = bool(KERNEL_KEY_RE.search(key))
        if not v2:
            if has_handle:
                problems.append(Problem(key_path(path, key), MSG_BARE_NAME))
        elif not has_handle:
            problems.append(Problem(key_path(path, key), MSG_KERNEL_KEY))
        else:
            handle = int(split_key(key)[1])
            first = owner.setdefault(handle, key)
            if first != key:
                message = f"debug handle {handle} is also used by {quote(first)}"
                problems.append(Problem(key_path(path, key), message))


def check_unique_lists(mapping: NodeMap, path: str, problems: list[Problem]) -> None:
    for key, names in mapping.items():
        if len(names) > 1 and len(set(names)) != len(names):
            problems.append(Problem(key_path(path, key), f"duplicate entry {quote(first_duplicate(names))}"))


# --- small helpers shared with the validators -----------------------------------------------

NO_DUPLICATE: Any = object()


def first_duplicate(items: Iterable[Any]) -> Any:
    """The first item equal to an earlier one (JSON equality: 1 == 1.0, 1 != true), else NO_DUPLICATE."""
    seen: set[Any] = set()
    for item in items:
        key = json.dumps(item, sort_keys=True) if isinstance(item, (dict, list)) else (isinstance(item, bool), item)
        if key in seen:
            return item
        seen.add(key)
    return NO_DUPLICATE
