"""``backends.reference.core_division`` against torch-spyre main 9a6b71e's own choices,
measured: each case is what main's work division logged (``spyre.inductor.work_division``
at DEBUG, ``op_it_space_splits`` as per-dimension splits) for the zoo's models in fp16
(``tests/zoo/spyre_models.py``, the built-in ``mlp`` and ``residual``), and whether its LX
relayout (``spyre.inductor.lx_relayout``) copied the matmul's result."""

from __future__ import annotations

import pytest

from spyre_provenance.backends.reference.core_division import (
    Dim,
    Matmul,
    compatible,
    core_split,
    default_division,
    matmul_division,
    matmul_division_of,
    pointwise_division,
    relayouts,
    view,
)

STICK = 64  # fp16 elements a stick

#: (where main logged it, the matmul, main's splits of [*batch, M, N, K], copied?)
MAIN_MATMULS = [
    ("gelu_mlp_batched up: the cost model", Matmul((2,), 8, 256, 64, True), (2, 4, 4, 1), True),
    ("gelu_mlp_batched down: N of one stick", Matmul((2,), 8, 64, 256, True), (2, 8, 1, 2), False),
    ("gelu_residual up", Matmul((), 8, 128, 64, True), (8, 2, 1), False),
    ("mlp up: K split", Matmul((), 8, 256, 128, True), (4, 4, 2), False),
    ("mlp down", Matmul((), 8, 128, 256, True), (4, 2, 4), False),
    ("gated_mlp gate", Matmul((), 4, 128, 64, True), (4, 2, 1), False),
    ("gated_mlp down", Matmul((), 4, 64, 128, True), (4, 1, 2), False),
    ("residual up", Matmul((2,), 4, 128, 64, True), (2, 4, 2, 1), False),
    ("residual down", Matmul((2,), 4, 64, 128, True), (2, 4, 1, 2), False),
    ("tied_embedding head", Matmul((2,), 8, 128, 64, True), (2, 8, 2, 1), False),
    ("softmax_attention q @ k^T: a true bmm", Matmul((2,), 64, 64, 64, False), (1, 32, 1, 1), False),
    ("single_head_attention q @ k^T", Matmul((), 64, 64, 64, True), (32, 1, 1), False),
]


@pytest.mark.parametrize(("mm", "splits"), [(m, s) for _, m, s, _ in MAIN_MATMULS], ids=[c[0] for c in MAIN_MATMULS])
def test_a_matmul_divides_as_main_divided_it(mm: Matmul, splits: tuple[int, ...]) -> None:
    assert matmul_division(mm, STICK) == splits


@pytest.mark.parametrize(("mm", "copied"), [(m, c) for _, m, _, c in MAIN_MATMULS], ids=[c[0] for c in MAIN_MATMULS])
def test_main_copies_a_matmul_result_only_where_its_readers_slice_it_otherwise(mm: Matmul, copied: bool) -> None:
    """The matmul's bias add (a pointwise op of its output's shape) reads a copy or not."""
    add = pointwise_division([*mm.batch, mm.m, mm.n], STICK)
    found = relayouts(matmul_division_of(mm, "out", STICK), [add])
    assert (found is not None and found[0] is not None) is copied


@pytest.mark.parametrize(
    ("sizes", "splits"),
    [
        ([2, 8, 256], (1, 8, 4)),  # gelu_mlp_batched's bias add: tokens 8 x hidden 4 (in sticks)
        ([8, 128], (8, 2)),  # gelu_residual's bias add
        ([2, 4, 128], (2, 4, 2)),  # residual's
        ([2, 64, 64], (1, 32, 1)),  # softmax_attention's scale: one stick's worth is no output dim
        ([4, 64], (4, 1)),  # gated_mlp's
    ],
)
def test_a_pointwise_op_divides_as_main_divided_it(sizes: list[int], splits: tuple[int, ...]) -> None:
    dims = [Dim(s) for s in sizes[:-1]] + [Dim(sizes[-1], stick=True, output=sizes[-1] > STICK)]
    assert default_division(dims, STICK) == splits


def test_a_reduced_dimension_takes_the_cores_left_unless_it_is_not_whole_sticks() -> None:
    dims = [Dim(4), Dim(128, stick=True, output=False)]
    assert default_division(dims, STICK) == (4, 2)  # gated_mlp's down projection, K split 2
    assert default_division([Dim(4), Dim(96, stick=True, output=False)], STICK) == (4, 1)


def test_core_split_is_the_largest_divisor_within_the_cores() -> None:
    assert [core_split(8, 32), core_split(12, 8), core_split(7, 4)] == [8, 6, 1]


def test_views_place_cores_in_iteration_order_the_first_fastest() -> None:
    # main's measured views of gelu_mlp_batched's copy (lx_relayout at DEBUG): the matmul
    # core_id % 2 -> batch, // 2 % 4 -> tokens, // 8 % 4 -> hidden; the add core_id % 8 ->
    # tokens, // 8 % 4 -> hidden
    written = view((2, 4, 4, 1), [0, 1, 2, None])
    read = view((1, 8, 4), [0, 1, 2])
    assert written == ((0, 2, 1), (1, 4, 2), (2, 4, 8))
    assert read == ((1, 8, 1), (2, 4, 8))
    assert compatible(written, read, 32)


def test_slices_that_cannot_be_copied_core_to_core_are_not_compatible() -> None:
    whole = view((8, 1), [0, 1])
    assert not compatible(whole, view((4, 1), [0, 1]), 8)  # fewer cores than the writer's
    assert not compatible(view((8, 4), [0, 1]), view((8, 4), [0, None]), 32)  # not one slice a core


def test_a_pointwise_result_is_copied_for_a_matmul_that_reads_it_in_other_slices() -> None:
    """``spyre_models.py:gelu_mlp_wide`` (``[4, 16, 64]``, hidden 512), as main divided it:
    the first matmul batch 4 x hidden 8, its bias add and the GELU tokens 16 x hidden 2,
    the second matmul batch 2 x tokens 16; main copied the matmul's result for the add
    and the GELU's for the second matmul."""
    up, down = Matmul((4,), 16, 512, 64, True), Matmul((4,), 16, 64, 512, True)
    assert matmul_division(up, STICK) == (4, 1, 8, 1)
    assert matmul_division(down, STICK) == (2, 16, 1, 1)
    gelu = pointwise_division([4, 16, 512], STICK)
    assert gelu.splits == (1, 16, 2)
    (copy,) = relayouts(matmul_division_of(up, "out", STICK), [gelu])  # the bias add reads as the GELU
    assert copy == gelu.view()
    (copy,) = relayouts(gelu, [matmul_division_of(down, "left", STICK)])
    assert copy == ((0, 2, 1), (1, 16, 2))  # main: batch core_id % 2, tokens core_id // 2 % 16
    assert relayouts(gelu, [gelu]) == [None]  # the same slices: no copy


def test_no_copy_of_partial_sums_nor_for_a_reader_of_another_core_count() -> None:
    mlp_up = Matmul((), 8, 256, 128, True)  # the built-in mlp: K split 2
    assert relayouts(matmul_division_of(mlp_up, "out", STICK), [pointwise_division([8, 256], STICK)]) is None
    gelu = pointwise_division([2, 8, 256], STICK)  # gelu_mlp_batched: its down matmul splits K
    assert relayouts(gelu, [matmul_division_of(Matmul((2,), 8, 64, 256, True), "left", STICK)]) is None
    assert relayouts(pointwise_division([8, 128], STICK), [pointwise_division([8, 64], STICK)]) is None
