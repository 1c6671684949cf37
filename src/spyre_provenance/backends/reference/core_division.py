"""How torch-spyre main (9a6b71e) divides an op's work among a card's cores, and when that
makes it copy an op's result for a reader: its LX relayout ``identity``.

Main keeps a tensor in a core's scratchpad (LX) between the op that writes it and the ops
that read it, each core holding the slice it computed. Where a reader divides the tensor
among the same cores in other slices, main copies it, slice to slice
(``_inductor/scratchpad/lx_relayout.py:218-353``, the copy made at ``:356-371``). Which
slices an op's cores take comes from its work division (``_inductor/work_division.py``).
This module is that decision, in the sizes of the ops' iteration spaces, for the op kinds
it models (``scratchpad.lx_relayout_copies`` applies it to a graph):

- a matmul ``[*batch, M, N, K]`` (on its result, or on its left operand ``[*batch, M,
  K]``): main's cost model (``work_division.py:1656-1753``, ``_matmul_split_cost``
  ``:1200-1325``, the planner ``:1367-1499``), or main's default division where the
  model finds nothing better or does not apply;
- a pointwise op (on its result, or on a tensor of its shape it reads element for
  element): main's default division (``_default_split``, ``work_division.py:1001-1049``):
  the output's dimensions, largest (in sticks, for the stick dimension) first, each the
  largest divisor of the cores left, then one reduced dimension.

Not modelled (no copy is made): other writers or readers (a reduction, a matmul's right
operand, a reader through a view or a broadcast), tensors other than 2-byte floats, sizes
of 1, symbolic sizes, main's span limit (``MAX_SPAN_BYTES``, 256 MB a core, far above the
reference's models), work-division hints, and whether main's scratchpad planner finds
room in LX for both tensors (it drops the copy where it does not:
``scratchpad/allocator.py:269-297``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import msgspec

#: main's core count, ``config.sencores`` (``_inductor/config.py:68``, SENCORES, default 32)
MAX_CORES = 32
#: bytes in a stick, the unit of a tensor's innermost dimension on a card (64 fp16 elements)
STICK_BYTES = 128


class Dim(msgspec.Struct, frozen=True):
    """One dimension of an op's iteration space, in elements."""

    size: int
    #: indexes a tensor's innermost dimension: divided in whole sticks
    stick: bool = False
    #: one of the output's dimensions (else one the op reduces)
    output: bool = True


class Matmul(msgspec.Struct, frozen=True):
    """A matmul ``[*batch, M, K] @ [*batch, K, N]`` (elements), as main's ``batchmatmul``."""

    batch: tuple[int, ...]
    m: int
    n: int
    k: int
    #: the right operand has no batch of its own (a linear's weight): loaded once
    shared_weight: bool

    def dims(self, elems_per_stick: int) -> list[Dim]:
        """Its iteration space ``[*batch, M, N, K]`` (the order main's OpSpec says)."""
        rows = [Dim(size) for size in (*self.batch, self.m)]
        return [*rows, stick_dim(self.n, elems_per_stick), Dim(self.k, stick=True, output=False)]


def stick_dim(size: int, elems_per_stick: int) -> Dim:
    """An output's stick dimension. Main finds an output's dimensions in its coordinates
    on the card, the stick's index among them (``work_division.py:623``); one stick's
    worth or less has the index 0 always, so that dimension counts as one the op reduces
    (main's log orders it after the reduced ones: ``priorities=[d1, d0, d3, d2]`` for
    ``[2, 8, 64, 256]``), and the matmul planner, which needs it, keeps the default."""
    return Dim(size, stick=True, output=size > elems_per_stick)


# --- the default division (work_division.py:168-282, 605-638, 1001-1049) ------------------


def core_split(size: int, cores: int) -> int:
    """The largest divisor of ``size`` not above ``cores`` (``work_division.py:168-181``)."""
    return next(i for i in range(max(cores, 1), 0, -1) if size % i == 0)


def _sticks(dim: Dim, elems_per_stick: int) -> int:
    """A dimension's size as work division counts it: sticks for a stick dimension
    (``adjust_it_space_for_sticks``, ``work_division.py:285-370``)."""
    return -(-dim.size // elems_per_stick) if dim.stick else dim.size


def default_division(dims: Sequence[Dim], elems_per_stick: int, max_cores: int = MAX_CORES) -> tuple[int, ...]:
    """Each dimension's split by main's default: output dimensions largest first (a stable
    sort, so ties keep the iteration order), then one reduced dimension for the cores
    left, never a stick dimension that is not whole sticks (``work_division_constraints.py:
    135-149``)."""
    sizes = [_sticks(d, elems_per_stick) for d in dims]
    splits = [1] * len(dims)
    left = max_cores
    for i in sorted((i for i, d in enumerate(dims) if d.output), key=lambda i: -sizes[i]):
        if left <= 1:
            break
        splits[i] = core_split(sizes[i], left)
        left //= splits[i]
    reduced = [i for i, d in enumerate(dims) if not d.output and not (d.stick and d.size % elems_per_stick)]
    best, best_split = None, 1
    for i in sorted(reduced, key=lambda i: -sizes[i]) if left > 1 else ():
        if (split := core_split(sizes[i], left)) > best_split:
            best, best_split = i, split
    if best is not None:
        splits[best] = best_split
    return tuple(splits)


# --- the matmul cost model (work_division.py:1170-1499, 1338-1499) ------------------------

_PEAK_MACS_PER_US_CORE = 98.304e12 / 2 / 32 / 1e6
_HBM_BYTES_PER_US = 204.8 * 1000


def _log2_over(value: float, reference: float) -> float:
    """``log2(value / reference)`` where positive, else 0."""
    return max(0.0, math.log2(value / reference))


def matmul_cost(axes: tuple[tuple[int, int], ...], max_cores: int = MAX_CORES, shared_weight: bool = False) -> float:
    """Main's estimated time (microseconds) of a matmul with ``axes`` = ((B, b), (M, m),
    (N, n), (K, k)), sizes in elements and their splits (``_matmul_split_cost``,
    ``work_division.py:1200-1325``): compute derated for short row tiles, HBM traffic with
    its broadcast contention, partial sums of a split K, and its penalties on tile shapes."""
    (big_b, b), (big_m, m), (big_n, n), (big_k, k) = axes
    cores = b * m * n * k
    if cores == 0 or cores > max_cores:
        return math.inf
    rows_per_core = big_m // m
    cols_per_core = big_n // n
    passes = max(1.0, rows_per_core / 8)  # 8 rows a PT pass
    efficiency = min(1.0, (passes / 5) ** 0.25)
    compute = big_b * big_m * big_n * big_k / cores / (_PEAK_MACS_PER_US_CORE * efficiency)
    weights = 1 if shared_weight else big_b
    moved = (big_b * big_m * big_k + weights * big_k * big_n + big_b * big_m * big_n) * 2
    cohort = max(m, n) if shared_weight else n
    memory = moved / _HBM_BYTES_PER_US * max(1.0, (cohort / 8) ** 0.75)
    psum = max(0, k - 1) * (big_b * big_m * big_n) / max(1, b * m * n) * (1e-3 if shared_weight else 1e-4)
    target_rows = max(4, min(max_cores // 2, max(1, big_m // 32)))
    penalties = _log2_over(target_rows, max(1, m)) * 10.0 + _log2_over(16, max(1, rows_per_core)) * 30.0
    penalties += _log2_over(max(1, cols_per_core), 512) * 25.0
    filled = 1.0 if rows_per_core >= 16 else 0.0
    deep = _log2_over(max(1, big_k), max(1, big_n))
    if shared_weight:
        penalties += filled * _log2_over(4096, max(1, big_n)) * _log2_over(max(1, cols_per_core), 128) * 5.0
        penalties += deep * math.log2(n) * 10.0 if n > 1 else 0.0
    else:
        penalties += filled * deep * math.log2(n) * 20.0 if n > 1 else 0.0
        penalties += math.log2(max(1, b)) * 10.0
    penalties += _log2_over(max_cores, cores) * 150.0
    return compute + memory + psum + penalties


def matmul_division(mm: Matmul, elems_per_stick: int, max_cores: int = MAX_CORES) -> tuple[int, ...]:
    """The splits of ``[*batch, M, N, K]`` main gives a matmul: the cheapest by its cost
    model, searched batch, M, N, K in ascending divisors (the first cheapest wins), unless
    it uses fewer cores than the default division, which it then keeps
    (``work_division.py:1441-1491``)."""
    default = default_division(mm.dims(elems_per_stick), elems_per_stick, max_cores)
    if mm.n <= elems_per_stick:  # no N among the output's coordinates (``stick_dim``): :1394-1401
        return default
    n_sticks, k_sticks = -(-mm.n // elems_per_stick), -(-mm.k // elems_per_stick)
    big_b = math.prod(mm.batch)
    best, best_cost = None, math.inf
    for batch in itertools.product(*(_divisors(size) for size in mm.batch)):
        for m, n, k in itertools.product(_divisors(mm.m), _divisors(n_sticks), _divisors(k_sticks)):
            if math.prod(batch) * m * n * k > max_cores:
                continue
            axes = (
                (big_b, math.prod(batch)),
                (mm.m, m),
                (n_sticks * elems_per_stick, n),
                (k_sticks * elems_per_stick, k),
            )
            cost = matmul_cost(axes, max_cores, shared_weight=mm.shared_weight or not mm.batch)
            if cost < best_cost:
                best, best_cost = (*batch, m, n, k), cost
    if best is None or math.prod(best) < math.prod(default):
        return default
    return best


def _divisors(size: int) -> list[int]:
    return [d for d in range(1, size + 1) if size % d == 0]


# --- per-core views and the relayout (pass_utils.py:1569-1868, lx_relayout.py:138-194) ----

#: a tensor's division among cores: per divided dimension of the tensor, (dimension,
#: split, stride of its slot in the core id): core c holds slot (c // stride) % split
View = tuple[tuple[int, int, int], ...]


def view(splits: Sequence[int], tensor_dims: Sequence[int | None]) -> View:
    """How an op with ``splits`` over its iteration space divides a tensor whose dimension
    ``tensor_dims[i]`` its dimension ``i`` indexes (None: not the tensor's). Cores take
    the slots of the split dimensions in iteration order, the first fastest
    (``core_mapping.py:25-68``); a dimension not the tensor's keeps its place in that order."""
    found, stride = [], 1
    for split, dim in zip(splits, tensor_dims, strict=True):
        if split > 1 and dim is not None:
            found.append((dim, split, stride))
        stride *= split
    return tuple(sorted(found))


def _slots(divided: View, cores: int) -> list[dict[int, int]]:
    return [{dim: core // stride % split for dim, split, stride in divided} for core in range(cores)]


def compatible(source: View, destination: View, cores: int) -> bool:
    """Whether main can copy ``source``'s slices into ``destination``'s core to core
    (``_compatible_partitions``, ``lx_relayout.py:159-194``): each divides the tensor
    among all ``cores``, one slice a core, and every core sends to and receives from
    as many cores as every other."""
    splits = [{dim: split for dim, split, _ in v} for v in (source, destination)]
    rows = [_slots(v, cores) for v in (source, destination)]
    if any(math.prod(s.values()) != cores for s in splits):
        return False
    if any(len({tuple(sorted(r.items())) for r in row}) != cores for row in rows):
        return False
    dims = set(splits[0]) | set(splits[1])

    def overlap(a: dict[int, int], b: dict[int, int]) -> bool:
        def one(dim: int) -> bool:
            x, xn, y, yn = a.get(dim, 0), splits[0].get(dim, 1), b.get(dim, 0), splits[1].get(dim, 1)
            return x * yn < (y + 1) * xn and y * xn < (x + 1) * yn

        return all(one(dim) for dim in dims)

    edges = [(s, d) for s in range(cores) for d in range(cores) if overlap(rows[0][s], rows[1][d])]
    fan_out = {sum(1 for s, _ in edges if s == core) for core in range(cores)}
    fan_in = {sum(1 for _, d in edges if d == core) for core in range(cores)}
    return bool(edges) and len(fan_out) == 1 and len(fan_in) == 1


class Division(msgspec.Struct, frozen=True):
    """How an op divides a tensor it writes or reads among the cores."""

    #: each iteration dimension's split
    splits: tuple[int, ...]
    #: the tensor's dimension each iteration dimension indexes (None: none of the tensor's)
    tensor_dims: tuple[int | None, ...]
    #: a reduced dimension is split: each core holds partial sums (``pass_utils.py:1752``)
    partial: bool = False

    @property
    def cores(self) -> int:
        return math.prod(self.splits)

    def view(self) -> View:
        return view(self.splits, self.tensor_dims)


def pointwise_division(shape: Sequence[int], elems_per_stick: int, max_cores: int = MAX_CORES) -> Division:
    """A pointwise op of ``shape`` (its stick the last dimension) on its own output, or on
    a tensor of that shape it reads element for element: main's default division."""
    dims = [*(Dim(size) for size in shape[:-1]), stick_dim(shape[-1], elems_per_stick)]
    splits = default_division(dims, elems_per_stick, max_cores)
    return Division(splits, tuple(range(len(shape))))


def matmul_division_of(mm: Matmul, operand: str, elems_per_stick: int, max_cores: int = MAX_CORES) -> Division:
    """A matmul on its result (``operand="out"``, ``[*batch, M, N]``) or on its left
    operand (``"left"``, ``[*batch, M, K]``); partial where K is split."""
    splits = matmul_division(mm, elems_per_stick, max_cores)
    rows = tuple(range(len(mm.batch) + 1))
    last = len(rows)
    dims = (*rows, last, None) if operand == "out" else (*rows, None, last)
    return Division(splits, dims, partial=splits[-1] > 1)


def relayouts(writer: Division, readers: Sequence[Division]) -> list[View | None] | None:
    """Per reader of a tensor, the view of the copy main makes for it (None: it reads the
    tensor as written), or None for all when main makes no copy of this tensor
    (``collect_lx_relayout_plans``, ``lx_relayout.py:234-345``): never of partial sums;
    none when a reader holds partial sums, uses another number of cores, or divides the
    tensor in slices that cannot be copied core to core. Readers with the same view share
    one copy (``:336-345``)."""
    if writer.partial:
        return None
    written, found = writer.view(), []
    for reader in readers:
        if reader.partial or reader.cores != writer.cores:
            return None
        read = reader.view()
        if read != written and not compatible(written, read, writer.cores):
            return None
        found.append(None if read == written else read)
    return found
