"""The markdown table: machine facts, the four measurements, and a verdict per target."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import math
import os
import platform
import statistics
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from bench.artifacts import ArtifactResults, SizeResult
from bench.compile_overhead import ARM_NAMES, CompileResults
from bench.whole_process import SECTION as WHOLE_PROCESS_SECTION
from bench.whole_process import WholeProcessResults
from bench.whole_process import render_section as _whole_process_section

if TYPE_CHECKING:
    from bench.audit_overhead import AuditResults
    from bench.compare import CompareResults
    from bench.runtime import RuntimeResults
    from bench.viewer import ViewerResults

TARGET_AB = 1.03
TARGET_FAST = 2.0
TARGET_PEAK = 3.0
TARGET_FLAT = 2.0
MB = 1e6


def machine_facts() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    versions = " · ".join(f"{name} {_version(name)}" for name in ("torch", "msgspec", "jsonschema"))
    project = f"spyre-provenance {_version('spyre-provenance')}"
    commit = _git_commit()
    if commit:
        project += f" ({commit})"
    return (
        f"{cpu}, {cores} cores ({usable} usable){memory} · {platform.system()} {platform.release()} · "
        f"Python {platform.python_version()} · {versions} · {project}"
    )


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _ratio(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "n/a"


def _mb(size: int | None) -> str:
    return "n/a" if size is None else f"{size / MB:,.0f} MB" if size >= 10 * MB else f"{size / MB:.1f} MB"


def _peak_ratio(peak: int | None, size: int) -> float:
    return math.nan if peak is None or not size else peak / size


def _verdict(ok: bool, detail: str) -> str:
    return f"**met** ({detail})" if ok else f"**not met** ({detail})"


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def render(
    compile_results: CompileResults | None,
    artifacts: ArtifactResults,
    *,
    started: dt.datetime,
    elapsed: float,
    quick: bool,
    load: tuple[float | None, float | None] = (None, None),
    audit: AuditResults | None = None,
    whole_process: WholeProcessResults | None = None,
    runtime: RuntimeResults | None = None,
    viewer: ViewerResults | None = None,
    compare: CompareResults | None = None,
) -> str:
    lines: list[str] = []
    add = lines.append
    mode = " (--quick: a smoke run, not a measurement)" if quick else ""
    add(f"### Benchmark run {started:%Y-%m-%d %H:%M} UTC{mode}")
    add("")
    busy = ""
    if None not in load:
        busy = f" 1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the end."
    add(f"Machine: {machine_facts()}. Whole run: {elapsed / 60:.1f} min.{busy}")
    add("")
    verdicts: list[str] = []
    if compile_results is not None:
        verdicts.append(_compile_section(lines, compile_results))
    top = artifacts.sizes[-1]
    verdicts += _throughput_sections(lines, artifacts, top)
    verdicts.append(_scaling_section(lines, artifacts))
    if audit is not None:
        from bench import audit_overhead

        verdicts.append(audit_overhead.render_section(lines, audit))
    if whole_process is not None:
        verdicts.append(_whole_process_section(lines, whole_process, WHOLE_PROCESS_SECTION))
    if runtime is not None:
        from bench import runtime as runtime_bench

        verdicts.append(runtime_bench.render_section(lines, runtime))
    if viewer is not None:
        from bench import viewer as viewer_bench

        verdicts.append(viewer_bench.render_section(lines, viewer))
    if compare is not None:
        from bench import compare as compare_bench

        verdicts.append(compare_bench.render_section(lines, compare))
    add("#### Targets")
    add("")
    lines.extend(f"- {v}" for v in verdicts)
    return "\n".join(lines) + "\n"


def _compile_section(lines: list[str], results: CompileResults) -> str:
    add = lines.append
    add("#### 1. Compile overhead: median wall time, A/B/C interleaved round by round")
    add("")
    add(
        "`torch.compile(model)(x)` on stock Inductor (CPU), fresh Inductor caches every run "
        "(`fresh_cache()`: a new `TORCHINDUCTOR_CACHE_DIR`, in-memory kernel caches cleared), FX-graph and "
        f'AOTAutograd caches off in every arm. A = {ARM_NAMES["A"]} (`spyre_provenance.tracking("inductor")`), '
        f"B = {ARM_NAMES['B']} (`provenance_tracking_level = 1`), C = {ARM_NAMES['C']}. "
        "A/B per round: lowest and highest of the rounds' own ratios (the noise). A/B CPU: ratio of median "
        "CPU times, this process's and its C++ compilers' (the work, without time lost waiting for a core). "
        "Hook's own time: time inside the hook in arm A (median), and as a share of B."
    )
    add("")
    add(
        "| model | graphs | call sites | nodes mapped | rounds | A (s) | B (s) | C (s) | A/B | A/C "
        "| A/B per round | A/B CPU | hook's own time |"
    )
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    summary = []
    for m in results.models:
        per_round = m.round_ratios("A", "B")
        own = _median(m.hook_self)
        add(
            f"| {m.model} | {m.graphs} | {m.call_sites} | {m.post_grad_nodes} | {len(m.times['A'])} | "
            f"{m.median('A'):.2f} | {m.median('B'):.2f} | {m.median('C'):.2f} | {_ratio(m.ratio('A', 'B'))} | "
            f"{_ratio(m.ratio('A', 'C'))} | {min(per_round):.3f}-{max(per_round):.3f} | "
            f"{_ratio(m.cpu_ratio('A', 'B'))} | {own * 1000:.0f} ms ({100 * own / m.median('B'):.1f}%) |"
        )
        summary.append((m.model, m.ratio("A", "B"), m.cpu_ratio("A", "B"), own / m.median("B"), per_round))
    add("")
    add(
        f"Not in the medians: a process's first tracked compile also imports jsonschema and builds the "
        f"schema validators, once: {results.one_time_hook_import * 1000:.0f} ms."
    )
    add("")
    wall = ", ".join(f"{model} {ratio:.3f}" for model, ratio, *_ in summary)
    cpu = ", ".join(f"{ratio:.3f}" for _, _, ratio, *_ in summary)
    own_shares = ", ".join(f"{100 * share:.1f}%" for *_, share, _ in summary)
    detail = f"wall A/B {wall}; CPU A/B {cpu}; the hook's own time {own_shares} of B"
    if all(ratio <= TARGET_AB for _, ratio, *_ in summary):
        return _verdict(True, f"A/B <= {TARGET_AB} on every model: {detail}")
    # a wall-time miss inside the rounds' own spread, while the work (CPU) and the hook's
    # own time say otherwise, is noise this run cannot resolve: say so, with the numbers
    quiet = all(
        cpu_ratio <= TARGET_AB and 1 + share <= TARGET_AB and min(rounds) <= TARGET_AB
        for _, _, cpu_ratio, share, rounds in summary
    )
    if quiet:
        return (
            f"**met on CPU time and on the hook's own time; wall time inconclusive** (A/B <= {TARGET_AB} on "
            f"every model: {detail}; per-round wall ratios vary more than the target's 3%)"
        )
    return _verdict(False, f"A/B <= {TARGET_AB} on every model: {detail}")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _throughput_sections(lines: list[str], results: ArtifactResults, top: SizeResult) -> list[str]:
    add = lines.append
    steps = top.steps
    loads, nogc, fast = steps["loads"].median, steps["loads_nogc"].median, steps["fast"].median
    full_line, full_note = _full_schema(results, top)
    add(
        f"#### 2. Validation throughput: {top.refs:,} node references, {top.kernels:,} kernel keys, "
        f"{_mb(top.size)} on disk"
    )
    add("")
    add(
        f"Median of {results.outer} runs, each in a fresh process. Peak: resident memory above the process "
        "before the file is read (the file's bytes included), `VmHWM` reset through `/proc/self/clear_refs`."
    )
    add("")
    add("| path | time (s) | MB/s | x json.loads | x json.loads, GC paused | peak memory | peak / size |")
    add("|---|---:|---:|---:|---:|---:|---:|")

    def row(label: str, seconds: float, peak: int | None) -> None:
        add(
            f"| {label} | {seconds:.3f} | {top.size / MB / seconds:,.1f} | {_ratio(seconds / loads)} | "
            f"{_ratio(seconds / nogc)} | {_mb(peak)} | {_ratio(_peak_ratio(peak, top.size))} |"
        )

    row("`json.loads` (the floor)", loads, steps["loads"].peak)
    row("`json.loads`, cyclic GC paused", nogc, steps["loads_nogc"].peak)
    row("fast path: `validate_bytes(data)`", fast, steps["fast"].peak)
    if full_line is not None:
        seconds, peak, label = full_line
        row(label, seconds, peak)
    add("")
    if full_note:
        add(full_note)
        add("")

    build = steps["build"]
    build_only = _median(top.build_only)
    add(f"#### 3. Build: {top.kernels:,} kernels, KernelRecords -> mapping -> bytes")
    add("")
    add(
        "Peak: resident memory above the process holding the KernelRecords and the pre/post relation "
        "(the built document and its bytes included)."
    )
    add("")
    add("| step | time (s) | references/s | peak memory | peak / size |")
    add("|---|---:|---:|---:|---:|")
    add(f"| `build_node_mappings` | {build_only:.3f} | {top.refs / build_only:,.0f} | | |")
    add(
        f"| `build_node_mappings` + `to_json_bytes` | {build.median:.3f} | {top.refs / build.median:,.0f} | "
        f"{_mb(build.peak)} | {_ratio(_peak_ratio(build.peak, top.size))} |"
    )
    add("")
    fast_ratio = fast / loads
    build_peak = _peak_ratio(build.peak, top.size)
    fast_peak = _peak_ratio(steps["fast"].peak, top.size)
    return [
        _verdict(
            fast_ratio <= TARGET_FAST,
            f"fast path <= {TARGET_FAST:g}x json.loads: {fast_ratio:.2f}x, "
            f"{fast / nogc:.2f}x json.loads with the GC paused",
        ),
        _verdict(
            build_peak <= TARGET_PEAK and fast_peak <= TARGET_PEAK,
            f"peak memory <= {TARGET_PEAK:g}x the artifact: build {build_peak:.2f}x, fast validation {fast_peak:.2f}x",
        ),
    ]


def _full_schema(results: ArtifactResults, top: SizeResult) -> tuple[tuple[float, int | None, str] | None, str]:
    if "full" in top.steps:
        return (
            top.steps["full"].median,
            top.steps["full"].peak,
            "JSON Schema path: `validate_bytes(data, full=True)`",
        ), ""
    measured = [s for s in results.sizes if "full" in s.steps]
    if not measured:
        return None, ""
    largest = measured[-1]
    per_ref = largest.steps["full"].median / largest.refs
    estimate = per_ref * top.refs
    note = (
        f"\\* JSON Schema path not run at {top.refs:,} references (it would take about {estimate:.0f} s): "
        f"timed at {largest.refs:,} references ({_mb(largest.size)}, {largest.steps['full'].median:.2f} s) and "
        f"scaled by the reference count; its time per reference is flat across the sizes timed (section 4). "
        "Peak memory not measured at full size."
    )
    return (estimate, None, "JSON Schema path: `validate_bytes(data, full=True)` \\*"), note


def _scaling_section(lines: list[str], results: ArtifactResults) -> str:
    add = lines.append
    add("#### 4. Scaling: time per node reference (µs)")
    add("")
    add(
        "| references | kernels | size | build + bytes | json.loads | fast path | JSON Schema path | build peak / size | fast peak / size |"
    )
    add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    series: dict[str, list[float]] = {"build": [], "loads": [], "fast": [], "full": []}
    for s in results.sizes:
        cells = []
        for step in series:
            if step in s.steps:
                per_ref = s.steps[step].median / s.refs * 1e6
                series[step].append(per_ref)
                cells.append(f"{per_ref:.2f}")
            else:
                cells.append("-")
        # below ~10 MB, resident-set deltas are mostly allocator granularity: not shown
        peaks = [
            _ratio(_peak_ratio(s.steps[step].peak, s.size)) if s.size >= 10 * MB else "-" for step in ("build", "fast")
        ]
        add(f"| {s.refs:,} | {s.kernels:,} | {_mb(s.size)} | " + " | ".join(cells) + " | " + " | ".join(peaks) + " |")
    spread = {step: (max(v) / min(v) if v else math.nan) for step, v in series.items()}
    add("| max / min | | | " + " | ".join(_ratio(spread[step]) for step in series) + " | | |")
    add("")
    ours = {"build": spread["build"], "fast path": spread["fast"], "JSON Schema path": spread["full"]}
    ok = all(v <= TARGET_FLAT for v in ours.values() if math.isfinite(v))
    first, last = results.sizes[0].refs, results.sizes[-1].refs
    detail = ", ".join(f"{name} {v:.2f}x" for name, v in ours.items() if math.isfinite(v))
    return _verdict(
        ok, f"time per reference flat within {TARGET_FLAT:g}x from {first:,} to {last:,} references: {detail}"
    )
