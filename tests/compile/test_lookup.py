"""``spyre-provenance lookup``: every name form an engineer copies, on real compiles and on
a TORCH_TRACE log torch wrote by itself, checked against the artifact files as written
(the mapping, the stack traces, the OpSpec handles), never against lookup's own helpers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import msgspec
import pytest

from helpers.where import ZOO  # tests/ is on sys.path
from spyre_provenance.model.lookup_records import LOOKUP_VERSION, LookupDocument
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    LOOKUP,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile

ZOO = ZOO / "models.py"
CASES = [
    ("mlp",),
    ("mlp", "--train"),
    ("residual", "--backend", "inductor", "--train"),
    # the zoo's, as tests/models/test_zoo.py compiles them: one kernel at two call sites; two graphs
    (f"{ZOO}:shared_block", "--backend", "reference", "--train"),
    (f"{ZOO}:item_break", "--backend", "reference"),
]
_FRAME = re.compile(r'File "([^"]+)", line ([0-9]+)')


def _graphs(out: Path) -> list[tuple[str, dict, dict, dict | None, str]]:
    """(graph kind, mapping, stack traces, OpSpec handles, compile id) of each graph folder,
    as written."""
    found = []
    for folder in sorted(out.glob("graph_*")):
        docs = {
            a: folder / f"{a}.json" for a in (NODE_MAPPINGS, KERNEL_STACK_TRACES, OPSPEC_DEBUG_HANDLES, DIAGNOSTICS)
        }
        docs = {a: json.loads(p.read_text()) if p.is_file() else None for a, p in docs.items()}
        found.append(
            (
                folder.name.rsplit("_", 1)[1],
                docs[NODE_MAPPINGS],
                docs[KERNEL_STACK_TRACES] or {},
                docs[OPSPEC_DEBUG_HANDLES],
                docs[DIAGNOSTICS]["compile_id"],
            )
        )
    return found


def _by_name(mapping: dict) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for key in mapping["cppCodeToPost"]:
        found.setdefault(key.rpartition(":")[0], []).append(key)
    return found


def _lookup(run_cli, *args: str) -> tuple[int, dict]:
    code, out, err = run_cli("lookup", *args, "--format", "json")
    assert err == "", err
    return code, json.loads(out)


def _expect_site(site: dict, key: str, mapping: dict, traces: dict, handles: dict | None) -> None:
    post = mapping["cppCodeToPost"][key]
    assert site["post_grad_nodes"] == post
    pre = list(dict.fromkeys(p for n in post for p in mapping["postToPre"].get(n, [])))
    assert site["pre_grad_nodes"] == pre
    frames = {(f, int(n)) for t in traces.get(key, []) for f, n in _FRAME.findall(t)}
    assert {(s["file"], s["line"]) for s in site["source"]} == frames
    if frames:  # the user's frame first: the model's file, not torch's
        assert site["source"][0]["user"] and "site-packages" not in site["source"][0]["file"]
    expected = [o["debug_handle"] for o in (handles or {}).get("kernels", {}).get(key, [])]
    assert [o["debug_handle"] for o in site["opspecs"]] == expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c))
def test_every_name_form_finds_every_call_site(compile_case, run_cli, case):
    done = compile_case(*case)
    assert done.returncode == 0, done.stderr[-2000:]
    graphs = _graphs(done.out)
    assert graphs and all(g[1] for g in graphs)
    assert (
        any(len(sites) > 1 for m in (g[1] for g in graphs) for sites in _by_name(m).values())
        or "shared_block" not in case[0]
    )
    for kind, mapping, traces, handles, compile_id in graphs:
        for key in mapping["cppCodeToPost"]:
            name = key.rpartition(":")[0]
            forms = [key, f"graph_3_{key}", name, f"{name}_il7ixi06", f"graph_3_{name}", f"1a2b3c4d_{name}_k3j_9x2q"]
            for form in forms:
                code, doc = _lookup(run_cli, form, "--from", done.out)
                assert code == 0, form
                (answer,) = doc["answers"]
                assert all(m["kernel"] == name for m in answer["matches"]), form
                sites = [
                    (m, s)
                    for m in answer["matches"]
                    for s in m["call_sites"]
                    if s["key"] == key and m["graph"] == kind and m["compile_id"] == compile_id
                ]
                assert len(sites) == 1, (form, answer["matches"])
                match, site = sites[0]
                assert match["model"] == done.out.joinpath("trace").glob("*.log").__next__().stem
                _expect_site(site, key, mapping, traces, handles)
            if handles:
                for opspec in handles["kernels"].get(key, []):
                    code, doc = _lookup(run_cli, opspec["debug_handle"], "--from", done.out)
                    assert code == 0
                    keys = [s["key"] for m in doc["answers"][0]["matches"] for s in m["call_sites"]]
                    assert key in keys


def test_bundle_files_are_the_kernels_bundles(compile_case, run_cli):
    done = compile_case("mlp")
    mapping = _graphs(done.out)[0][1]
    key = next(iter(mapping["cppCodeToPost"]))
    name = key.rpartition(":")[0]
    _, doc = _lookup(run_cli, key, "--from", done.out)
    (site,) = doc["answers"][0]["matches"][0]["call_sites"]
    # the folder the OpSpec artifact records, laid out as torch-spyre main's
    folder = done.out / "sdsc" / "mlp" / "inductor-spyre" / site["bundle_folder"]
    assert site["bundle_folder"].split("_", 1)[1].startswith(f"{name}_")
    on_disk = sorted(folder.glob("sdsc_*.json"))
    assert on_disk and sorted(map(Path, site["bundle_files"])) == on_disk
    # the folder's name, whole or as device errors print it (without its <uuid8>_), names it
    for folder_name in (site["bundle_folder"], site["bundle_folder"].split("_", 1)[1]):
        _, doc = _lookup(run_cli, folder_name, "--from", done.out)
        assert [s["key"] for m in doc["answers"][0]["matches"] for s in m["call_sites"]] == [key], folder_name


@pytest.mark.parametrize("recorded", ["x" * 300, "../../.."], ids=["too-long", "outside"])
def test_a_recorded_bundle_folder_no_folder_can_have_is_no_bundle(compile_case, run_cli, tmp_path, recorded):
    """An OpSpec artifact whose bundle folder cannot be one folder's name under the bundle
    root (longer than a file name, or leading out of it): lookup and view find no bundle
    there, as for a folder that is gone, instead of failing on the name."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(compile_case("mlp").out, out)
    (artifact,) = out.glob(f"graph_*/{OPSPEC_DEBUG_HANDLES}.json")
    (written,) = {b["folder"] for b in json.loads(artifact.read_text())["bundles"].values()}
    for where in (artifact, *out.glob("trace/*.log")):  # the graph folder's copy and the log's
        where.write_text(where.read_text().replace(written, recorded))
    key = next(iter(_graphs(out)[0][1]["cppCodeToPost"]))
    code, doc = _lookup(run_cli, key, "--from", out)
    (site,) = doc["answers"][0]["matches"][0]["call_sites"]
    assert code == 0 and site["bundle_files"] == []
    code, _, err = run_cli("view", out, "-o", tmp_path / "view.html")
    assert (code, err) == (0, "")


def test_text_answer_first_and_unknown_name(compile_case, run_cli):
    done = compile_case("mlp")
    key = next(iter(_graphs(done.out)[0][1]["cppCodeToPost"]))
    code, out, _ = run_cli("lookup", key, "--from", done.out)
    assert code == 0 and out.splitlines()[0].startswith(f"{key} (mapping key): 1 kernel")
    name = key.rpartition(":")[0]
    code, out, _ = run_cli("lookup", name[:-3] + "zz", "--from", done.out)
    assert code == 1 and "no kernel" in out and name in out.split("closest known:")[1]


def test_json_answer_agrees_with_its_schema(compile_case, run_cli):
    done = compile_case("mlp", "--train")
    names = [k for g in _graphs(done.out) for k in g[1]["cppCodeToPost"]][:3] + ["no_such_kernel"]
    code, doc = _lookup(run_cli, *names, "--from", done.out)
    assert code == 1
    jsonschema.Draft202012Validator(schemas.load_schema(LOOKUP, LOOKUP_VERSION)).validate(doc)
    typed = msgspec.json.decode(json.dumps(doc), type=LookupDocument, strict=True)
    assert msgspec.to_builtins(typed) == doc


def test_unusable_input_is_one_line(run_cli, tmp_path):
    not_a_log = tmp_path / "x.txt"
    not_a_log.write_text("hello\n")
    for path in (tmp_path / "missing", not_a_log, tmp_path):
        code, out, err = run_cli("lookup", "k", "--from", path)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


# --- a TORCH_TRACE log torch wrote by itself (no hook), provenance tracking on -----------

_UPSTREAM = textwrap.dedent("""
    import torch
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 32)
        def forward(self, x):
            return torch.nn.functional.gelu(self.fc(x)) * 2
    with torch.no_grad():
        torch.compile(M())(torch.randn(4, 16))
""")


@pytest.fixture(scope="module")
def upstream_log(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("upstream")
    env = {
        **os.environ,
        "TORCH_TRACE": str(folder),
        "INDUCTOR_PROVENANCE": "1",
        "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
    }
    subprocess.run([sys.executable, "-c", _UPSTREAM], env=env, check=True, timeout=600, capture_output=True)
    (log,) = folder.glob("*.log")
    return log


def test_a_plain_upstream_log(upstream_log, run_cli, data_dir):
    from spyre_provenance.logs.graphs import (
        read_log_graphs,  # only to find what the log holds
    )

    (graph,) = [g for g in read_log_graphs(upstream_log) if g.node_mappings]
    mapping, traces = graph.node_mappings, graph.stack_traces or {}
    for key in mapping["cppCodeToPost"]:
        name = key.rpartition(":")[0]
        for form in (key, name, f"graph_0_{name}"):
            code, doc = _lookup(run_cli, form, "--from", upstream_log.parent)
            assert code == 0, form
            (match,) = doc["answers"][0]["matches"]
            assert match["graph"] == "inference" and match["compile_id"] == "0/0"
            (site,) = [s for s in match["call_sites"] if s["key"] == key]
            _expect_site(site, key, mapping, traces, None)
    # the seed's log (torch 2.13 wrote it): v2 keys, nothing but the mapping and traces
    code, doc = _lookup(run_cli, "cpp_fused_relu_0", "--from", data_dir / "logs" / "seed_mlp.log")
    assert code == 0 and doc["answers"][0]["matches"][0]["call_sites"][0]["post_grad_nodes"] == ["relu"]
