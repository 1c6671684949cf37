"""Reading TORCH_TRACE logs: records, compile ids, payload MD5s, damage by line, streaming."""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from spyre_provenance.logs import tracelog
from spyre_provenance.logs.tracelog import TraceEntry
from spyre_provenance.model.detect import Problem
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS

PREFIX = "V1202 10:56:15.069000 10152 torch/_inductor/compile_fx.py:1624] "
IDS = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
MAPPING = '{"version": 2.0}'


def record(
    envelope: dict[str, Any], payload: str | None = None, *, md5: str | None = None, prefix: str = PREFIX
) -> str:
    """One record as torch's TorchLogsFormatter writes it."""
    envelope = dict(envelope)
    if payload is not None:
        envelope["has_payload"] = md5 or hashlib.md5(payload.encode()).hexdigest()
    text = prefix + json.dumps(envelope)
    if payload is not None:
        text += "".join(f"\n\t{line}" for line in payload.split("\n"))
    return text + "\n"


def artifact(name: str, payload: str, **extra: Any) -> str:
    return record({"artifact": {"name": name, "encoding": "json"}, **IDS, **extra.pop("ids", {})}, payload, **extra)


def read(tmp_path: Path, text: str, **kwargs: Any) -> list[TraceEntry | Problem]:
    log = tmp_path / "dedicated_log_torch_trace_test.log"
    log.write_text(text)
    return list(tracelog.read_trace(log, **kwargs))


def test_captured_log(data_dir: Path) -> None:
    items = list(tracelog.read_trace(data_dir / "logs" / "seed_mlp.log"))
    assert [(e.line, e.name, e.compile_id, e.encoding, e.problems) for e in items] == [
        (21, NODE_MAPPINGS, "[0/0]", "json", ()),
        (23, KERNEL_STACK_TRACES, "[0/0]", "json", ()),
    ]
    assert json.loads(items[0].text)["cppCodeToPost"]["cpp_fused_relu_0:2"] == ["relu"]


def test_every_record_when_no_names_are_given(data_dir: Path) -> None:
    items = list(tracelog.read_trace(data_dir / "logs" / "seed_mlp.log", names=None))
    assert [e.name for e in items] == [
        "chromium_event",
        "torch_version",
        "str",
        "str",
        NODE_MAPPINGS,
        KERNEL_STACK_TRACES,
    ]
    assert all(isinstance(e, TraceEntry) and not e.problems for e in items)
    assert items[2].payload == b"" and items[2].compile_id is None


def test_artifact_payloads_for_the_summary(data_dir: Path) -> None:
    triples = list(tracelog.artifact_payloads(data_dir / "logs" / "seed_mlp.log", names={KERNEL_STACK_TRACES}))
    assert triples == [
        (
            "[0/0]",
            KERNEL_STACK_TRACES,
            '{"extern_kernels.addmm:1": [], "cpp_fused_relu_0:2": [], "extern_kernels.addmm:3": []}',
        )
    ]


@pytest.mark.parametrize(
    "envelope, shown",
    [
        ({"frame_id": 0, "frame_compile_id": 0, "attempt": 0}, "[0/0]"),
        ({"frame_id": 3, "frame_compile_id": 1, "attempt": 2}, "[3/1_2]"),
        ({"frame_id": 0, "frame_compile_id": 0}, "[0/0]"),
        ({"compiled_autograd_id": 2, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}, "[!2/0/1]"),
        ({"frame_compile_id": 4, "attempt": 0}, "[-/4]"),
        ({"attempt": 0}, None),
    ],
)
def test_compile_id_as_tlparse_shows_it(envelope: dict, shown: str | None) -> None:
    assert tracelog.compile_id(envelope) == shown


def test_payload_md5_mismatch_in_an_artifact(tmp_path: Path) -> None:
    text = record({"chromium_event": {}}, "{}") + artifact(NODE_MAPPINGS, MAPPING, md5="0" * 32)
    [entry] = read(tmp_path, text)
    assert entry.line == 3
    assert [p.path for p in entry.problems] == ["line 3"]
    assert "does not match has_payload 00000000000000000000000000000000" in entry.problems[0].message


def test_a_provenance_record_without_payload_is_no_artifact(tmp_path: Path) -> None:
    # as Inductor logs a cache hit of a graph compiled without provenance tracking: the
    # envelope alone, no has_payload
    empty = record({"artifact": {"name": NODE_MAPPINGS, "encoding": "json"}, **IDS})
    items = read(tmp_path, empty + artifact(KERNEL_STACK_TRACES, "{}"))
    assert items[0] == tracelog.EmptyRecord(1, NODE_MAPPINGS, "[0/0]")
    assert isinstance(items[1], TraceEntry) and items[1].name == KERNEL_STACK_TRACES
    log = tmp_path / "dedicated_log_torch_trace_test.log"
    assert [name for _, name, _ in tracelog.artifact_payloads(log)] == [KERNEL_STACK_TRACES]
    assert tracelog.empty_records_note(2).startswith("2 provenance records on the log are empty: Inductor")


def test_an_empty_payload_logged_as_such_is_still_read(tmp_path: Path) -> None:
    # has_payload present: torch meant a payload, and its emptiness is the artifact's to judge
    [entry] = read(tmp_path, artifact(NODE_MAPPINGS, ""))
    assert isinstance(entry, TraceEntry) and entry.payload == b""


def test_damage_to_other_records_is_reported_too(tmp_path: Path) -> None:
    text = record({"chromium_event": {}, **IDS}, "{}", md5="f" * 32) + artifact(NODE_MAPPINGS, MAPPING)
    problem, entry = read(tmp_path, text)
    assert problem == Problem(
        "line 1",
        f"chromium_event record: payload MD5 {hashlib.md5(b'{}').hexdigest()}"
        f" does not match has_payload {'f' * 32}: the payload is damaged",
    )
    assert isinstance(entry, TraceEntry) and not entry.problems


def test_envelope_that_is_not_json(tmp_path: Path) -> None:
    text = PREFIX + '{"artifact": {"name": \n\t{"version": 2.0}\n\t...\n' + artifact(NODE_MAPPINGS, MAPPING)
    items = read(tmp_path, text)
    assert items[:2] == [
        Problem("line 1", "envelope is not valid JSON"),
        Problem("lines 2-3", "payload line without an envelope before it"),
    ]
    assert isinstance(items[2], TraceEntry) and items[2].line == 4


def test_lines_without_the_glog_prefix_are_merged(tmp_path: Path) -> None:
    text = artifact(NODE_MAPPINGS, MAPPING) + "garbage\nmore garbage\n{}\n" + artifact(NODE_MAPPINGS, MAPPING)
    items = read(tmp_path, text)
    assert [type(i).__name__ for i in items] == ["TraceEntry", "Problem", "TraceEntry"]
    assert items[1] == Problem("lines 3-5", "no glog prefix: not a TORCH_TRACE record")


def test_has_payload_that_is_no_md5(tmp_path: Path) -> None:
    [entry] = read(tmp_path, artifact(NODE_MAPPINGS, MAPPING, md5="A" * 32))  # tlparse wants lowercase
    assert "is not an MD5 hex digest" in entry.problems[0].message


def test_blank_lines_and_crlf_are_skipped_like_tlparse(tmp_path: Path) -> None:
    payload = '{"version":\n2.0}'
    text = artifact(NODE_MAPPINGS, payload).replace("\n\t2.0}", "\n\n\r\n\t2.0}").replace("\n", "\r\n")
    [entry] = read(tmp_path, "\n\n" + text)
    assert entry.payload == payload.encode() and entry.problems == () and entry.line == 3


def test_artifact_envelope_without_compile_ids_is_a_warning_not_damage(tmp_path: Path) -> None:
    text = record({"artifact": {"name": NODE_MAPPINGS, "encoding": "json"}, "frame_id": 0}, MAPPING)
    [entry] = read(tmp_path, text)
    assert entry.compile_id == "[0/-]"
    assert entry.problems == ()
    assert [w.path for w in entry.warnings] == ["line 1"]
    assert entry.warnings[0].message.startswith("partial compile id (frame_id; no frame_compile_id, attempt)")


def test_records_of_no_compile_get_no_warning(tmp_path: Path) -> None:
    # torch_version, chromium events and such belong to no compile: tlparse expects no ids
    text = record({"chromium_event": {}}, "{}") + artifact(NODE_MAPPINGS, MAPPING)
    items = read(tmp_path, text, names=None)
    assert [i.warnings for i in items] == [(), ()]


# What tlparse 0.4.3 does with each envelope, as measured: the seed log with only its mapping
# record's ids changed, rendered with ``tlparse -i``; "files" is the folder the mapping's file
# went to, "page" the page built from that folder (none: no page shows the mapping).
COMPILE_IDS = {
    "complete": ({"frame_id": 0, "frame_compile_id": 0, "attempt": 0}, None),
    "a retry": ({"frame_id": 0, "frame_compile_id": 0, "attempt": 1}, None),
    "compiled autograd": ({"compiled_autograd_id": 1, "attempt": 0}, None),
    "none (AOTInductor)": (
        {},
        "no compile id in the envelope (frame_id, frame_compile_id, attempt), as torch logs"
        " AOTInductor compiles: tlparse files it under -_-_-_- with every record that has none,"
        " and builds provenance_tracking_-_-_-_-.html from that folder",
    ),
    "all null": ({"frame_id": None, "frame_compile_id": None, "attempt": None}, "no compile id in the envelope"),
    "no attempt": (
        {"frame_id": 0, "frame_compile_id": 0},
        "partial compile id (frame_id, frame_compile_id; no attempt): tlparse files it under -_0_0_-"
        " but builds the page provenance_tracking_-_0_0_0.html from -_0_0_0: the page will be empty",
    ),
    "null attempt": ({"frame_id": 0, "frame_compile_id": 0, "attempt": None}, "tlparse files it under -_0_0_- but"),
    "frame only": (
        {"frame_id": 0},
        "partial compile id (frame_id; no frame_compile_id, attempt): tlparse files it under -_0_-_-,"
        " apart from the records that carry all three: provenance_tracking_-_0_-_-.html will be empty",
    ),
    "attempt only": ({"attempt": 0}, "tlparse files it under -_-_-_0, apart from the records that carry all three"),
    "frame compile id only": (
        {"frame_compile_id": 0},
        "files it under -_-_0_- but builds the page provenance_tracking_-_-_0_0.html",
    ),
    "a string": (
        {"frame_id": "0", "frame_compile_id": 0, "attempt": 0},
        'frame_id "0" is not a compile id number (an integer 0 to 4294967295): tlparse files the record'
        " under unknown_1, and no provenance page shows it",
    ),
    "a float": ({"frame_id": 0.0, "frame_compile_id": 0, "attempt": 0}, "frame_id 0.0 is not a compile id number"),
    "negative": (
        {"frame_id": 0, "frame_compile_id": -1, "attempt": 0},
        "frame_compile_id -1 is not a compile id number",
    ),
    "a boolean": ({"frame_id": 0, "frame_compile_id": 0, "attempt": False}, "attempt false is not a compile id number"),
    "beyond u32": ({"frame_id": 2**32, "frame_compile_id": 0, "attempt": 0}, "frame_id 4294967296 is not"),
}


@pytest.mark.parametrize("case", COMPILE_IDS)
def test_compile_id_warnings_say_where_tlparse_files_the_record(tmp_path: Path, case: str) -> None:
    ids, expected = COMPILE_IDS[case]
    [entry] = read(tmp_path, record({"artifact": {"name": NODE_MAPPINGS, "encoding": "json"}, **ids}, MAPPING))
    assert entry.problems == ()
    if expected is None:
        assert entry.warnings == ()
    else:
        [warning] = entry.warnings
        assert warning.path == "line 1" and expected in warning.message, warning.message


def test_rank_prefix(tmp_path: Path) -> None:
    [entry] = read(tmp_path, artifact(NODE_MAPPINGS, MAPPING, prefix="[rank3]:" + PREFIX))
    assert entry.name == NODE_MAPPINGS and not entry.problems


def test_reads_a_binary_stream() -> None:
    stream = io.BytesIO(artifact(NODE_MAPPINGS, MAPPING).encode())
    [entry] = tracelog.read_trace(stream)
    assert entry.payload == MAPPING.encode()


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, True),  # the captured log
        ("\n\n" + PREFIX + "{}\n", True),
        ('{"version": 2.0}', False),
        ("", False),
        ("\x00\xff\xfe binary", False),
    ],
)
def test_looks_like_trace_log(tmp_path: Path, data_dir: Path, content: str | None, expected: bool) -> None:
    path = data_dir / "logs" / "seed_mlp.log"
    if content is not None:
        path = tmp_path / "x.log"
        path.write_text(content, encoding="latin-1")
    assert tracelog.looks_like_trace_log(path) is expected


def test_streams_payloads_it_was_not_asked_for(tmp_path: Path) -> None:
    """A 20 MB payload of another record is hashed line by line, never held."""
    big = "\n".join("x" * 1000 for _ in range(20_000))
    log = tmp_path / "big.log"
    log.write_text(record({"inductor_output_code": {}, **IDS}, big) + artifact(NODE_MAPPINGS, MAPPING))
    tracemalloc.start()
    try:
        [entry] = tracelog.read_trace(log)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert entry.payload == MAPPING.encode()
    assert peak < 2 * 2**20, peak


def test_one_rule_splits_a_compile_id_into_graphs():
    """Forward then backward under one compile id; another id interleaved; the records
    after a graph's code stay with it."""
    from spyre_provenance.logs.tracelog import GraphSplitter

    splitter = GraphSplitter()
    log = [
        ("[0/0]", "dynamo_start"),
        ("[0/0]", "inductor_post_grad_graph"),
        ("[0/0]", "inductor_output_code"),
        ("[1/0]", "inductor_post_grad_graph"),
        ("[0/0]", "inductor_provenance_tracking_node_mappings"),
        ("[0/0]", "inductor_post_grad_graph"),  # the backward
        ("[0/0]", "inductor_post_grad_graph"),  # no code yet: still the backward
        ("[0/0]", "inductor_output_code"),
        ("[0/0]", "inductor_output_code"),  # code after code: a third graph
    ]
    assert [splitter.place(cid, name) for cid, name in log] == [
        (0, True),
        (0, False),
        (0, False),
        (0, True),
        (0, False),
        (1, True),
        (1, False),
        (1, False),
        (2, True),
    ]


def test_a_log_is_read_once_inside_reading_each_log_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run``'s end reads a process's log for its line and for its viewer page: inside
    ``reading_each_log_once`` an unchanged log is parsed once, a changed one again, and
    outside it every call parses."""
    from spyre_provenance.logs import graphs

    log = tmp_path / "dedicated_log_torch_trace_test.log"
    log.write_text(artifact(NODE_MAPPINGS, MAPPING))
    parsed: list[str] = []
    real = tracelog.artifact_payloads
    monkeypatch.setattr(tracelog, "artifact_payloads", lambda *a, **k: parsed.append("x") or real(*a, **k))
    with graphs.reading_each_log_once():
        first, second = graphs.read_log_graphs(log), graphs.read_log_graphs(log)
        assert len(parsed) == 1 and first == second and first is not second
        with open(log, "a") as fh:  # the log grows: its size says so
            fh.write(artifact(NODE_MAPPINGS, '{"version": 2.0, "preToPost": {}}', ids={"frame_id": 1}))
        assert len(graphs.read_log_graphs(log)) == 2 and len(parsed) == 2
    graphs.read_log_graphs(log), graphs.read_log_graphs(log)
    assert len(parsed) == 4
