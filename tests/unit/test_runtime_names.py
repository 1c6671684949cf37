"""How a run-time name is read (``runtime.kernel_names.parse``): every form torch-spyre, its
profiler and IBM's trace analyzer produce, told apart from the project's own forms."""

from __future__ import annotations

import pytest

from helpers.compute_step import cb_name  # tests/ is on sys.path
from spyre_provenance.model.lookup_records import QUERY_FORMS
from spyre_provenance.runtime import kernel_names

KEY = "74ncpmgiwkyzoc6d"


@pytest.mark.parametrize(
    ("text", "form", "name", "key"),
    [
        (f"spyre_kernel_v1_fused_linear_relu_{KEY}#3", "event", "", KEY),
        (f"spyre_kernel_v1_fused_linear_relu_{KEY}", "event", "", KEY),
        (KEY, "provenance_key", "", KEY),
        ("launch_jobplan:sdsc_fused_linear_relu_0", "cpu_span", "sdsc_fused_linear_relu_0", None),
        ("prepare_kernel:sdsc_fused_linear_relu_0", "cpu_span", "sdsc_fused_linear_relu_0", None),
        ("dxp_standalone:sdsc_fused_linear_relu_0", "cpu_span", "sdsc_fused_linear_relu_0", None),
        ("1a2b3c4d_sdsc_fused_add_0_k3j_9x2q Cmpt Exec", "device_timeline", "1a2b3c4d_sdsc_fused_add_0_k3j_9x2q", None),
        ("1a2b3c4d_sdsc_fused_add_0_k3j_9x2q DmaI", "device_timeline", "1a2b3c4d_sdsc_fused_add_0_k3j_9x2q", None),
        ("sdsc_fused_add_0:2", "key", "sdsc_fused_add_0", None),
        ("5042312524869293591", "handle", "", None),
        ("2345672345672345", "handle", "", None),  # all digits: an id, even in the key alphabet
        ("graph_0_sdsc_fused_add_0", "kernel", "graph_0_sdsc_fused_add_0", None),
        ("sdsc_fused_neg_0_il7ixi06", "kernel", "sdsc_fused_neg_0_il7ixi06", None),
        # a version torch-spyre does not write, or a key of the wrong width: no event
        (f"spyre_kernel_v2_fused_add_{KEY}", "kernel", f"spyre_kernel_v2_fused_add_{KEY}", None),
    ],
)
def test_forms(text, form, name, key):
    query = kernel_names.parse(text)
    assert (query.form, query.name, query.provenance_key) == (form, name, key)
    assert query.form in QUERY_FORMS


def test_an_event_acelyzer_renamed():
    """acelyzer 1.3 drops each run of digits and a ``_`` right before it."""
    assert kernel_names.renamed("spyre_kernel_v1_fused_add_linear_silu_2gmrvchacwi4ab5c#1") == (
        "spyre_kernel_v_fused_add_linear_silugmrvchacwiabc#"
    )
    query = kernel_names.parse("spyre_kernel_v_fused_linear_relu_rboeoodiniuupxu#")
    assert (query.form, query.provenance_key, query.renamed_event) == (
        "event",
        None,
        "spyre_kernel_v_fused_linear_relu_rboeoodiniuupxu",
    )


def test_bundle_folder_without_its_uuid():
    assert kernel_names.without_uuid("1a2b3c4d_sdsc_fused_add_0_k3j_9x2q") == "sdsc_fused_add_0_k3j_9x2q"
    assert kernel_names.without_uuid("sdsc_fused_add_0") is None


def test_an_acelyzer_summary_csv_is_read_by_kernel(tmp_path):
    """acelyzer 1.3's ``<name>_summary.csv``: tab-separated, padded, the kernel in ``Name``
    (its header as ``pipeline/stats.py`` writes it)."""
    from spyre_provenance.runtime.time_summary import read_acelyzer_csv

    path = tmp_path / "x_summary.csv"
    path.write_text(
        "Time  \t Total Time\t Calls\t    Mean  \t  Median  \t    Min    \t   Max   \t   StDev  \t  pid\t Name \n"
        "12.5\t 40.0\t 4\t 10.0\t 10.0\t 9.0\t 11.0\t 0.8\t 0\t 1a2b3c4d_sdsc_fused_add_0_k3j_9x2q Cmpt Exec\n"
        "1.0\t 3.0\t 1\t 3.0\t 3.0\t 3.0\t 3.0\t 0.0\t 0\t sdsc_fused_mul_1\n"
    )
    rows = read_acelyzer_csv(path)
    assert set(rows) == {"1a2b3c4d_sdsc_fused_add_0_k3j_9x2q", "sdsc_fused_mul_1"}
    assert rows["sdsc_fused_mul_1"]["Total Time"] == "3.0" and rows["sdsc_fused_mul_1"]["Calls"] == "1"


FOLDER = "1a2b3c4d_sdsc_fused_add_0_k3j9x2q1"


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        (f"/c/inductor-spyre/{FOLDER}/spyreCodeDir/launch_spec.json", None),
        (f"/c/inductor-spyre/{FOLDER}/spyreCodeDir", f"/c/inductor-spyre/{FOLDER}/spyreCodeDir/launch_spec.json"),
        (f"/c/inductor-spyre/{FOLDER}/", f"/c/inductor-spyre/{FOLDER}/spyreCodeDir/launch_spec.json"),
        (f"{FOLDER}/launch_spec.json", None),  # spyre launch also takes a spec beside the folder's files
    ],
)
def test_a_compiled_kernels_path_is_its_bundle_folder_and_launch_spec(text, spec):
    """torch-spyre's newer code writes ``<folder>/spyreCodeDir/launch_spec.json`` per kernel
    (``codegen/kernel_launchspec.py``): its paths read as the bundle folder, with the spec's
    path for lookup to read the kernel's name from."""
    query = kernel_names.parse(text)
    assert (query.form, query.name, query.launch_spec) == ("kernel", FOLDER, spec or text)


@pytest.mark.parametrize("text", ["a/b", "sdsc_fused_add_0", "launch_spec.json", "/x/y/z.json"])
def test_other_paths_are_no_launch_spec(text):
    assert kernel_names.parse(text).launch_spec is None


@pytest.mark.parametrize("step", [0, 3])
def test_a_compute_steps_cb_name_is_its_bundle_folder_or_its_event(step):
    query = kernel_names.parse(cb_name(f"/root/.cache/inductor-spyre/{FOLDER}", step))
    assert (query.form, query.name, query.launch_spec) == ("kernel", FOLDER, None)
    event = f"spyre_kernel_v1_fused_linear_relu_{KEY}"
    query = kernel_names.parse(cb_name(f"/root/.cache/inductor-spyre/{FOLDER}", step, event))
    assert (query.form, query.provenance_key) == ("event", KEY)


@pytest.mark.parametrize(
    "text", ["spyreCodeDir/bundle.mlir#0", f"{FOLDER}/bundle.mlir#0", f"{FOLDER}/spyreCodeDir/x.mlir#0"]
)
def test_other_mlir_paths_are_no_compute_step(text):
    assert kernel_names.parse(text).name != FOLDER
