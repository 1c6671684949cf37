"""``model.layout``: one value names every path under an ``--out`` folder, and no other
module of ``src/`` spells one (the folder names, or the constants behind them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spyre_provenance.model.folders import bundle_folder_name, kernel_of_bundle_folder
from spyre_provenance.model.layout import Layout, bundle_files, kernel_bundle_folder

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "spyre_provenance"
#: the layout itself and the folder-name rules it is made of
ALLOWED = {"model/layout.py", "model/folders.py"}
#: an out folder's part as a path: joined (``/ "trace"``), globbed (``glob("rank*")``),
#: compared with a folder's name (``.name == "trace"``), or its constant named
OUT_PATH = re.compile(
    r'/\s*"(?:trace|sdsc|tlparse|profile|view\.html|inductor-spyre)"'
    r'|glob\("(?:trace|sdsc|tlparse|profile|rank)[/*]'
    r'|\.name\s*==\s*"(?:trace|sdsc|tlparse|profile)"'
    r"|\b(?:TRACE_FOLDER|SDSC_FOLDER|SPYRE_BUNDLES_FOLDER|TLPARSE_FOLDER|PROFILE_FOLDER|RANK_PREFIX|MODEL_SUFFIX"
    r"|rank_folder)\b"
)


def offenders(text: str) -> list[str]:
    return [m.group(0) for m in OUT_PATH.finditer(text)]


def test_no_module_but_the_layout_spells_a_path_of_the_out_folder():
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ALLOWED and (hits := offenders(path.read_text(encoding="utf-8")))
    }
    assert found == {}


@pytest.mark.parametrize(
    "line",
    [
        'log = out / "trace" / f"{label}.log"',
        'for p in self.out.glob("rank*"):',
        'if log.parent.name == "trace":',
        "bundles = out / folders.SDSC_FOLDER / model",
        'folder = bundle_dir / "inductor-spyre" / name',
    ],
)
def test_the_check_finds_a_spelled_path(line):
    assert offenders(line)


def test_every_path_of_a_model_is_under_its_out_folder_and_named_after_its_label(tmp_path):
    layout = Layout(tmp_path, "mlp")
    paths = [
        layout.trace_log,
        layout.model_marker,
        layout.graph_folder(0, "0/0", "inference"),
        layout.bundle_root,
        layout.pages,
        layout.profile_trace,
        layout.profile_raw,
    ]
    assert all(p.is_relative_to(tmp_path) and "mlp" in p.name for p in paths)
    assert layout.rank(1).trace_log == tmp_path / "rank1" / "trace" / "mlp.log"
    assert Layout.of_log(layout.trace_log, "mlp") == layout
    assert Layout.of_log(tmp_path / "mlp.log") is None


def test_a_reader_without_the_label_cannot_name_a_models_own_path(tmp_path):
    with pytest.raises(ValueError, match="needs its label"):
        _ = Layout(tmp_path).trace_log


def test_bundles_are_laid_out_as_torch_spyre_mains(tmp_path):
    """``<bundle root>/inductor-spyre/<uuid8>_<kernel>_<suffix>/`` (torch-spyre main 9a6b71e,
    ``execution/async_compile.py`` ``get_output_dir``), for a model's root and torch-spyre's
    ``cache_dir()`` alike; the reference backend's name comes from the bundles' bytes."""
    name = bundle_folder_name("sdsc_fused_linear_relu_0", b'{"0_batchmatmul": {}}')
    assert re.fullmatch(r"[0-9a-f]{8}_sdsc_fused_linear_relu_0_[a-z2-7]{8}", name)
    assert name == bundle_folder_name("sdsc_fused_linear_relu_0", b'{"0_batchmatmul": {}}')
    assert name != bundle_folder_name("sdsc_fused_linear_relu_0", b'{"0_add": {}}')
    layout = Layout(tmp_path, "mlp")
    assert layout.bundle_folder(name) == tmp_path / "sdsc" / "mlp" / "inductor-spyre" / name
    assert kernel_bundle_folder(tmp_path / "cache", name) == tmp_path / "cache" / "inductor-spyre" / name
    # torch-spyre's own names (random uuid8 and mkdtemp suffix) and the reference's read alike
    assert kernel_of_bundle_folder(name) == "sdsc_fused_linear_relu_0"
    assert kernel_of_bundle_folder("1a2b3c4d_sdsc_fused_neg_0_il7ixi06") == "sdsc_fused_neg_0"
    assert kernel_of_bundle_folder("sdsc_fused_neg_0") is None


def test_a_kernel_name_too_long_for_a_file_name_is_cut_in_its_folder_name(tmp_path):
    """A training graph's one bundle can name every op it runs (gpt2's backward kernel is
    longer than 240 characters): its folder is still a name the filesystem takes, and golden
    still reads the kernel from it."""
    from spyre_provenance.links.portable import bundle_folder_kernel
    from spyre_provenance.model.folders import NAME_MAX

    kernel = "sdsc_fused_" + "_".join(f"op{i}" for i in range(80)) + "_0"
    name = bundle_folder_name(kernel, b"{}")
    assert len(kernel) > NAME_MAX >= len(name.encode())
    (tmp_path / name).mkdir()  # the filesystem takes it
    assert kernel.startswith(kernel_of_bundle_folder(name))
    assert bundle_folder_kernel(name, kernel) == kernel
    short = bundle_folder_name("sdsc_fused_neg_0", b"{}")
    assert kernel_of_bundle_folder(short) == "sdsc_fused_neg_0"  # whole when it fits


def test_a_recorded_bundle_folder_is_looked_for_only_when_it_can_be_one_folder():
    from spyre_provenance.model.folders import NAME_MAX, is_one_name

    assert is_one_name(bundle_folder_name("sdsc_fused_neg_0", b"{}"))
    assert is_one_name("sdsc_fused_neg_0") and is_one_name("x" * NAME_MAX)
    for name in ("", ".", "..", "../x", "a/b", "/abs", "x" * (NAME_MAX + 1), "a\0b"):
        assert not is_one_name(name), name


def test_bundle_folders_name_their_model(tmp_path):
    for label, kernel in (("mlp", "sdsc_a_0"), ("mlp", "sdsc_b_0"), ("residual", "sdsc_a_0")):
        Layout(tmp_path, label).bundle_folder(bundle_folder_name(kernel, label.encode())).mkdir(parents=True)
    mine = Layout(tmp_path, "mlp").bundle_folders()
    assert sorted(kernel_of_bundle_folder(p.name) for _, p in mine) == ["sdsc_a_0", "sdsc_b_0"]
    assert {label for label, _ in mine} == {None}
    every = Layout(tmp_path).bundle_folders()
    assert sorted((label, kernel_of_bundle_folder(p.name)) for label, p in every) == [
        ("mlp", "sdsc_a_0"),
        ("mlp", "sdsc_b_0"),
        ("residual", "sdsc_a_0"),
    ]


def test_a_folders_bundles_in_index_order(tmp_path):
    for name in ("sdsc_10.json", "sdsc_2.json", "sdsc_0.json", "bundle.mlir", "sdsc_x.json"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in bundle_files(tmp_path)] == ["sdsc_0.json", "sdsc_2.json", "sdsc_10.json"]
    assert bundle_files(tmp_path / "absent") == []
