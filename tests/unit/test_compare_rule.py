"""The comparison by source line (``runtime.compare``), on records made by hand: how lines
pair (by code, not number), how a pair is judged, the order, and the printed forms.
The compiles themselves: tests/compile/test_compare.py."""

from __future__ import annotations

import csv
import io
import json

import jsonschema
import msgspec
import pytest

from spyre_provenance.model.compare_records import (
    COMPARE_VERSION,
    STATUSES,
    Comparison,
    CompileLines,
    KernelUse,
    LineUse,
    Side,
)
from spyre_provenance.model.modules import MODULE_FILE, MODULE_MARK
from spyre_provenance.model.names import COMPARE, PRINTED_DOCUMENTS
from spyre_provenance.runtime import compare_render, compare_screen
from spyre_provenance.runtime.compare import compare, pair_files
from spyre_provenance.validate import schemas


def use(line: int, code: str, kernel: str = "sdsc_fused_add_0", opspecs=("add [4]",), ops=("aten.add.Tensor",), **kw):
    file = kw.pop("file", "/m/model.py")
    graph = kw.pop("graph", "m 0/0 inference")
    kernel, calls = kw.pop("kernels_n", (kernel, 1))  # a kernel called once per layer: its call sites
    kernels = [KernelUse(kernel, f"{kernel}:{i + 1}", graph) for i in range(calls)] if kernel else []
    return LineUse(file, line, code, kernels, list(opspecs), list(ops), **kw)


def side(name: str, *lines: LineUse, traces=()) -> CompileLines:
    return CompileLines(Side(name, ["m 0/0 inference"], list(traces)), list(lines))


def by_code(comparison: Comparison) -> dict[str, tuple]:
    return {
        (p.a or p.b).code: (p.status, p.changes, p.a.line if p.a else None, p.b.line if p.b else None)
        for p in comparison.lines
    }


def test_a_line_inserted_above_shifts_the_numbers_below_and_changes_nothing_else():
    before = [use(10, "h = self.fc1(x)"), use(11, "h = torch.relu(h)"), use(12, "return self.fc2(h)")]
    after = [
        use(10, "h = self.fc1(x)"),
        use(11, "h = torch.sigmoid(h)", opspecs=["sigmoid [4]"], ops=["aten.sigmoid.default"]),
        use(12, "h = torch.relu(h)"),
        use(13, "return self.fc2(h)"),
    ]
    done = compare(side("A", *before), side("B", *after))
    assert by_code(done) == {
        "h = torch.sigmoid(h)": ("only_b", [], None, 11),
        "h = self.fc1(x)": ("same", [], 10, 10),
        "h = torch.relu(h)": ("same", [], 11, 12),
        "return self.fc2(h)": ("same", [], 12, 13),
    }
    assert [p.status for p in done.lines][0] == "only_b"  # what changed comes first
    assert not done.same and done.counts == {"changed": 0, "only_a": 0, "only_b": 1, "regrouped": 0, "same": 3}


def test_an_edited_line_pairs_with_its_old_self_and_says_what_changed():
    before = [use(1, "a = x + 1"), use(2, "b = torch.relu(a)", ops=["aten.relu.default"]), use(3, "c = b * 2")]
    after = [use(1, "a = x + 1"), use(2, "b = torch.tanh(a)", ops=["aten.tanh.default"]), use(3, "c = b * 2")]
    done = compare(side("A", *before), side("B", *after))
    assert by_code(done)["b = torch.relu(a)"] == ("changed", ["code", "ops"], 2, 2)
    assert done.lines[0].a.code == "b = torch.relu(a)" and done.lines[0].b.code == "b = torch.tanh(a)"
    assert [p.status for p in done.lines] == ["changed", "same", "same"]


def test_two_branches_of_one_file_are_two_lines_not_one_edited():
    """Prefill's branch and decode's: between the same lines, at other numbers."""
    prefill = [use(12, "h = self.proj(x)"), use(14, "h = torch.softmax(h, dim=1)"), use(17, "return self.out(h)")]
    decode = [use(12, "h = self.proj(x)"), use(16, "h = torch.relu(h)"), use(17, "return self.out(h)")]
    done = compare(side("A", *prefill), side("B", *decode))
    assert by_code(done) == {
        "h = torch.softmax(h, dim=1)": ("only_a", [], 14, None),
        "h = torch.relu(h)": ("only_b", [], None, 16),
        "h = self.proj(x)": ("same", [], 12, 12),
        "return self.out(h)": ("same", [], 17, 17),
    }


def test_a_renamed_kernel_regroups_a_line_with_its_own_opspecs_and_changes_one_without():
    fused = compare(side("A", use(1, "y = x + 1")), side("B", use(1, "y = x + 1", kernel="sdsc_fused_add_mul_0")))
    assert [(p.status, p.changes) for p in fused.lines] == [("regrouped", ["kernels"])]
    assert not fused.same
    stock = compare(
        side("A", use(1, "y = x + 1", kernel="cpp_fused_add_0", opspecs=())),
        side("B", use(1, "y = x + 1", kernel="cpp_fused_add_mul_0", opspecs=())),
    )
    assert [(p.status, p.changes) for p in stock.lines] == [("changed", ["kernels"])]


def test_a_kernel_renumbered_or_another_compile_id_is_the_same_kernel():
    a = side("A", use(1, "y = x + 1", kernel="sdsc_fused_add_0"))
    b = side("B", use(1, "y = x + 1", kernel="sdsc_fused_add_3", graph="m 0/1 inference"))
    assert compare(a, b).same
    backward = side("B", use(1, "y = x + 1", kernel="sdsc_fused_add_0", graph="m 0/0 backward"))
    assert not compare(a, backward).same  # another graph kind is another kernel


def test_a_shape_is_a_change_of_the_opspecs():
    done = compare(side("A", use(1, "h = self.proj(x)", opspecs=["batchmatmul [8, 64, 64]"])),
                   side("B", use(1, "h = self.proj(x)", opspecs=["batchmatmul [2, 64, 64]"])))  # fmt: skip
    assert [(p.status, p.changes) for p in done.lines] == [("changed", ["opspecs"])]


def test_files_pair_by_path_then_by_the_one_file_of_a_name_left():
    assert pair_files(["/v1/model.py", "/v1/util.py"], ["/v2/model.py", "/v1/util.py"]) == [
        ("/v1/model.py", "/v2/model.py"),
        ("/v1/util.py", "/v1/util.py"),
    ]
    # two files of one name left on a side: nothing says which is which
    assert pair_files(["/a/x/m.py", "/a/y/m.py"], ["/b/m.py"]) == [
        ("/a/x/m.py", None),
        ("/a/y/m.py", None),
        (None, "/b/m.py"),
    ]


def test_times_and_their_change():
    a = side("A", use(1, "y = x + 1", time_us=10.0), traces=["a.json"])
    b = side("B", use(1, "y = x + 1", time_us=25.0), traces=["b.json"])
    done = compare(a, b)
    assert done.same and done.lines[0].time_change_us == pytest.approx(15.0)
    untimed = compare(a, side("B", use(1, "y = x + 1")))
    assert untimed.lines[0].time_change_us is None


def test_the_same_lines_are_the_same_compile():
    lines = [use(1, "a = x + 1"), use(2, "b = a * 2", kernel="sdsc_fused_mul_1")]
    done = compare(side("A", *lines), side("B", *lines))
    assert done.same and done.counts["same"] == 2 and set(done.counts) == set(STATUSES)


def _sample() -> Comparison:
    return compare(
        side("A", use(1, "a = x + 1", time_us=1.0), use(2, "b = a * 2", time_us=2.0), traces=["a.json"]),
        side("B", use(1, "a = x + 1", time_us=1.5), use(2, "c = a - 2", ops=["aten.sub.Tensor"], time_us=2.0), traces=["b.json"]),
    )  # fmt: skip


def test_json_is_the_schema_and_the_records():
    assert COMPARE in PRINTED_DOCUMENTS
    text = compare_render.render_json(_sample())
    doc = json.loads(text)
    jsonschema.Draft202012Validator(schemas.load_schema(COMPARE, COMPARE_VERSION)).validate(doc)
    assert msgspec.json.decode(text, type=Comparison) == _sample()
    # the schema closes every object the records hold: a field of one is a field of the other
    schema = schemas.load_schema(COMPARE, COMPARE_VERSION)
    assert set(schema["properties"]) == set(Comparison.__struct_fields__)
    assert set(schema["$defs"]["line"]["properties"]) == set(LineUse.__struct_fields__)
    assert set(schema["$defs"]["side"]["properties"]) == set(Side.__struct_fields__)


def test_json_that_breaks_the_schema_is_never_printed():
    broken = msgspec.structs.replace(_sample(), version=99)
    with pytest.raises((AssertionError, FileNotFoundError, OSError)):
        compare_render.render_json(broken)


def test_csv_one_row_per_pair_and_text_names_each_status():
    rows = list(csv.DictReader(io.StringIO(compare_render.render_csv(_sample()))))
    assert [(r["status"], r["code_a"], r["code_b"], r["time_change_us"]) for r in rows] == [
        ("changed", "b = a * 2", "c = a - 2", "0.000"),
        ("same", "a = x + 1", "a = x + 1", "0.500"),
    ]
    text = compare_render.render_text(_sample())
    assert "lines: 1 changed, 0 only in A, 0 only in B, 0 regrouped, 1 same: the compiles differ" in text
    assert "changed     /m/model.py:2 -> 2  b = a * 2 -> c = a - 2  [2.0 us -> 2.0 us, +0.0 us]" in text


def test_unusable_sides_are_one_line_and_exit_2(run_cli, tmp_path):
    code, out, err = run_cli("compare", tmp_path / "nowhere", tmp_path)
    assert code == 2 and out == "" and err.count("\n") == 1 and "nowhere: no such file or folder" in err
    code, _, err = run_cli("compare", tmp_path, tmp_path)
    assert code == 2 and err.count("\n") == 1 and "no kernel call sites found" in err


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Two small ``--out`` folders as make bench writes them (bench/compare.py): B has one
    line inserted after the first."""
    from bench import compare as compare_bench

    root = tmp_path_factory.mktemp("synthetic")
    compare_bench.write_out(root / "a", 6, inserted=False)
    compare_bench.write_out(root / "b", 6, inserted=True)
    compare_bench.write_out(root / "with:colon", 6, inserted=False)
    return root


def test_a_path_with_a_colon_is_a_path_and_a_compile_id_after_it_picks_one(synthetic, run_cli):
    odd = synthetic / "with:colon"
    code, out, err = run_cli("compare", odd, synthetic / "a", "--format", "json")
    assert code == 0 and json.loads(out)["same"], err
    code, out, err = run_cli("compare", f"{odd}:0/0", f"{synthetic / 'b'}:[0/0]", "--format", "json")
    assert code == 1, err
    assert json.loads(out)["counts"]["only_b"] == 1 and json.loads(out)["a"]["name"] == f"{odd}:0/0"
    code, _, err = run_cli("compare", f"{odd}:", synthetic / "b")
    assert code == 2 and "no compile id after the colon" in err and err.count("\n") == 1


def test_a_trace_that_is_none_is_unusable_input(synthetic, run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    code, out, err = run_cli("compare", synthetic / "a", synthetic / "b", "--trace-a", bad)
    assert code == 2 and out == "" and err.count("\n") == 1 and str(bad) in err


def test_own_ops_from_post_grad_nodes_regroup_a_line_and_kernel_wide_ops_change_it():
    """Stock Inductor records no OpSpecs: where the log's post-grad graph told a line's nodes
    apart, a renamed kernel regroups the line; where nothing did, the kernels count."""
    a = use(1, "y = x + 1", kernel="cpp_fused_add_0", opspecs=(), ops_from="post-grad nodes")
    b = use(1, "y = x + 1", kernel="cpp_fused_add_cat_0", opspecs=(), ops_from="post-grad nodes")
    assert [(p.status, p.changes) for p in compare(side("A", a), side("B", b)).lines] == [("regrouped", ["kernels"])]
    wide = msgspec.structs.replace(b, ops_from="kernels")
    assert [(p.status, p.changes) for p in compare(side("A", a), side("B", wide)).lines] == [("changed", ["kernels"])]
    cat = msgspec.structs.replace(b, ops=["aten.add.Tensor", "aten.cat.default"])
    assert [(p.status, p.changes) for p in compare(side("A", a), side("B", cat)).lines] == [
        ("changed", ["ops", "kernels"])
    ]


def _layers(kernel: str, count: int, graph: str = "m 0/1 inference") -> list[KernelUse]:
    return [KernelUse(kernel, f"{kernel}:{i}", graph) for i in range(count)]


def test_a_kernel_called_per_layer_is_named_once_with_its_count():
    assert compare_render.kernel_groups(_layers("cpp_fused_cat_2", 5)) == "cpp_fused_cat_2 ×5 (m 0/1 inference)"
    alike = [KernelUse("cpp_fused_add_4", "k:1", "g"), KernelUse("cpp_fused_add_8", "k:2", "g")]
    assert compare_render.kernel_groups(alike, graphs=False) == "cpp_fused_add_{4,8}"
    assert compare_render.kernel_groups(alike * 2, graphs=False) == "cpp_fused_add_{4,8} ×4"
    long = compare_render.kernel_groups(_layers("cpp_fused_" + "x" * 100 + "_3", 2), width=40, graphs=False)
    assert long.endswith("xx_3 ×2") and "…" in long and len(long) == 40 + len(" ×2")


def _decode_like(changed: int, regrouped: int, same: int) -> Comparison:
    """A prefill/decode-shaped comparison: ``changed`` lines only in B, a mask file's lines
    only in A, ``regrouped`` lines in kernels that were renamed, each kernel called per layer."""
    prefill, decode = [], []
    for n in range(regrouped + same):
        kernel = "cpp_fused_mul_1" if n < regrouped else "cpp_fused_mm_9"
        own = {"opspecs": (), "ops": ["aten.mul"], "ops_from": "post-grad nodes", "graph": "m 0/0 inference"}
        prefill.append(use(n + 1, f"h{n} = h * {n}", **own, kernels_n=(kernel, 5)))
        decode.append(use(n + 1, f"h{n} = h * {n}", **{**own, "graph": "m 0/1 inference"},
                          kernels_n=("cpp_fused_cat_mul_1" if n < regrouped else kernel, 5)))  # fmt: skip
    for n in range(changed):
        decode.append(use(500 + n, f"k{n} = torch.cat([k{n}, x])", opspecs=(), ops=["aten.cat"], file="/m/cache.py",
                          ops_from="post-grad nodes", graph="m 0/1 inference", kernels_n=("cpp_fused_cat_mul_1", 5)))  # fmt: skip
    for n in range(12):
        prefill.append(use(700 + n, f"mask{n} = q <= kv", opspecs=(), ops=["aten.le"], file="/m/masking.py",
                           ops_from="post-grad nodes", graph="m 0/0 inference"))  # fmt: skip
    return compare(side("A", *prefill), side("B", *decode))


def test_the_screen_names_what_changed_and_fits_while_all_lists_every_line():
    from spyre_provenance.runtime import compare_screen

    done = _decode_like(changed=2, regrouped=30, same=40)
    screen = compare_screen.render(done)
    rows = screen.splitlines()
    assert len(rows) <= 60 and len(compare_render.render_text(done).splitlines()) > 100
    assert "only in B   cache.py:500  k0 = torch.cat([k0, x])" in rows
    assert "    ops aten.cat · in cpp_fused_cat_mul_1 ×5" in rows
    assert "only in A   masking.py:700  12 lines: 700, 701, 702 +9 more" in rows  # a file's one-sided lines, one row
    (regrouped,) = [r for r in rows if r.startswith("  30 lines: model.py:1, :2, :3 +27 more")]
    assert regrouped.endswith("kernels cpp_fused_mul_1 ×5 -> cpp_fused_cat_mul_1 ×5")
    assert "same: 40 lines (code, own OpSpecs and ops, kernels)" in rows
    assert "not shown" not in screen
    many = compare_screen.render(_decode_like(changed=4, regrouped=0, same=0))
    assert "not shown" not in many and many.count("only in B   cache.py:") == 4


def test_the_screen_says_what_it_left_out():
    from spyre_provenance.runtime import compare_screen

    before = [use(n, f"y{n} = x + {n}", ops=["aten.add"]) for n in range(1, 40)]
    after = [use(n, f"y{n} = x + {n}", ops=["aten.sub"]) for n in range(1, 40)]
    after.append(use(3, "k = torch.cat([k, x])", ops=["aten.cat"], file="/m/zz_cache.py"))
    screen = compare_screen.render(compare(side("A", *before), side("B", *after)))
    assert len(screen.splitlines()) <= 60
    assert "ops -aten.add  +aten.sub" in screen
    # a line on one side only comes first, though its file comes last and the screen is full
    assert screen.splitlines()[4] == "only in B   zz_cache.py:3  k = torch.cat([k, x])"
    shown = screen.count("changed     model.py:")
    assert 0 < shown < 39
    assert screen.splitlines()[-1] == (
        f"not shown: {39 - shown} changed or one-sided lines; --all lists every line, kernels named in full"
        " (--format json and csv always do)"
    )


def test_a_logged_post_grad_graph_gives_each_node_its_printed_frame():
    from spyre_provenance.logs.post_grad import node_frames

    text = """class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[2, 8][8, 1]cpu"):
        # File: /m/model.py:12 in forward, code: h = x * 2
        mul: "f32[2, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(arg0_1, 2)

        # File: /m/cache.py:3 in update, code: k = torch.cat([k, h], dim=-2)
        cat: "f32[4, 8][8, 1]cpu" = torch.ops.aten.cat.default([mul, mul])
        # No stacktrace found for following nodes
        clone: "f32[4, 8][8, 1]cpu" = torch.ops.aten.clone.default(cat)
        return (clone,)
"""
    frames = node_frames(text)
    assert {n: (f.file, f.line, f.code) for n, f in frames.items()} == {
        "mul": ("/m/model.py", 12, "h = x * 2"),
        "cat": ("/m/cache.py", 3, "k = torch.cat([k, h], dim=-2)"),
    }


def module(name: str, kernel: str = "cpp_fused_add_0", ops=("aten.add",)) -> LineUse:
    """A place named by its module (``model.modules``): no file, line 0, its name for code."""
    return use(0, name, kernel, opspecs=(), ops=ops, file=MODULE_FILE, ops_from="kernels", evidence="module")


def test_modules_pair_by_path_and_a_path_on_one_side_is_never_paired_by_position():
    before = [module("layers.10: Linear"), module("layers.2: GELU", "cpp_fused_gelu_1"), module("norm: LayerNorm")]
    after = [
        module("layers.10: Linear"),
        module("layers.2: ReLU", "cpp_fused_relu_1", ops=["aten.relu"]),
        module("head: Linear"),
        module("proj: Linear"),
    ]
    done = compare(side("A", *before), side("B", *after))
    assert by_code(done) == {
        "layers.2: GELU": ("changed", ["code", "ops", "kernels"], 0, 0),
        "norm: LayerNorm": ("only_a", [], 0, None),
        "head: Linear": ("only_b", [], None, 0),
        "proj: Linear": ("only_b", [], None, 0),
        "layers.10: Linear": ("same", [], 0, 0),
    }
    # modules in path order, numbers as numbers; each printed as module evidence, never a line
    assert [p.a.code for p in done.lines if p.status == "same"] == ["layers.10: Linear"]
    text = compare_render.render_text(done)
    assert f"changed     module layers.2: GELU -> layers.2: ReLU  {MODULE_MARK}" in text
    assert "modules: 1 changed, 1 only in A, 2 only in B, 0 regrouped, 1 same" in text
    assert "(module):0" not in text and "(module):0" not in compare_screen.render(done)
    rows = list(csv.DictReader(io.StringIO(compare_render.render_csv(done))))
    assert {r["evidence"] for r in rows} == {"module"}
    pairs = json.loads(compare_render.render_json(done))["lines"]
    assert [(p["a"] or p["b"])["code"] for p in pairs][:4] == [
        "head: Linear",  # what changed first, in path order
        "layers.2: GELU",
        "norm: LayerNorm",
        "proj: Linear",
    ]
    assert {u["evidence"] for p in pairs for u in (p["a"], p["b"]) if u} == {"module"}


def test_lines_and_modules_of_one_compile_are_counted_apart():
    a = side("A", use(3, "h = self.layers(x)"), module("layers.10: Linear"), module("layers.9: Linear"))
    done = compare(a, a)
    assert [(p.a.evidence, p.a.code) for p in done.lines] == [  # a path's numbers in number order
        ("module", "layers.9: Linear"),
        ("module", "layers.10: Linear"),
        ("line", "h = self.layers(x)"),
    ]
    assert "same: 3 lines and modules" in compare_screen.render(done)
    assert compare_render.header(done)[2].startswith("lines and modules: 0 changed")
