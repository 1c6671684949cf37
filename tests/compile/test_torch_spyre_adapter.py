"""Contract tests of the torch-spyre adapter against stand-in generations of torch-spyre.

The stand-ins (tests/stand_ins/, all packages named ``torch_spyre``) have torch-spyre's module
paths, class, method names and call order, and run on CPU through real Inductor. Each
generation is compiled once (module-scoped fixture); every compile test reads each result.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import types
import warnings
from typing import Any

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.codegen import common as codegen_common
from torch._inductor.utils import run_and_get_code
from torch._inductor.virtualized import V

import spyre_provenance
from helpers.where import STAND_INS  # tests/ is on sys.path
from spyre_provenance.backends import choose_backend, get_backend
from spyre_provenance.backends import spyre as adapter
from spyre_provenance.backends.spyre import SpyreBackend, available
from spyre_provenance.backends.spyre import opspecs as readers
from spyre_provenance.base.errors import ProvenanceWarning
from spyre_provenance.logs import wrapper_code
from spyre_provenance.model.records import OpSpecRecord

SCHEDULER = "torch_spyre._inductor.scheduler"


@dataclasses.dataclass(frozen=True)
class Generation:
    """One stand-in and what the adapter must find in it (tests/stand_ins/README.md)."""

    folder: str
    comment_owner: str  # the class whose codegen_comment the scheduling resolves to
    writes_comments: bool  # that method takes the handle and writes the comment itself
    by_name: tuple[str, ...] = ()  # modules holding the tracing function by name
    handles: bool = True  # its OpSpecs carry a debug_handle
    ktir: bool = False  # compiled with torch_spyre._inductor.config.ktir_emitter on

    @property
    def prefix(self) -> str:
        return "ktir_" if self.ktir else "sdsc_"


GENERATIONS = {
    # torch-spyre main inherits torch 2.13's BaseScheduling.codegen_comment (lazy import)
    "gen_main": Generation("gen_main", "BaseScheduling", True),
    # the KTIR emitter names kernels ktir_...: nothing may assume sdsc_
    "gen_main-ktir": Generation("gen_main", "BaseScheduling", True, ktir=True),
    "gen_pr3449": Generation("gen_pr3449", "SuperDSCScheduling", True),
    "gen_byname": Generation("gen_byname", "SuperDSCScheduling", True, by_name=(SCHEDULER,)),
    "gen_old": Generation("gen_old", "SuperDSCScheduling", False, handles=False),
}
COMMENT = re.compile(r"^\s*# \[Provenance debug handles\] (?P<key>(?P<name>\S+):\d+)\s*$")
KERNEL_NAME = r"(?:sdsc|ktir)_\w+"  # torch-spyre's two emitters
KERNEL_CALL = re.compile(rf"^\s*(?P<name>{KERNEL_NAME})(\.run)?\(")


def _purge_torch_spyre() -> None:
    """Every stand-in is called torch_spyre: forget whichever was imported last."""
    for name in [m for m in sys.modules if m == "torch_spyre" or m.startswith("torch_spyre.")]:
        del sys.modules[name]


def _use_stand_in(mp: pytest.MonkeyPatch, folder: str) -> None:
    mp.syspath_prepend(str(STAND_INS))  # cpu_body, the stand-ins' shared CPU body
    mp.syspath_prepend(str(STAND_INS / folder))


def seed_mlp() -> torch.nn.Module:
    # softmax adds reductions; torch-spyre main fuses nothing, so each op is a kernel
    return torch.nn.Sequential(
        torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.Softmax(-1)
    )


@dataclasses.dataclass
class Compiled:
    generation: Generation
    backend: SpyreBackend
    session: Any
    out: torch.Tensor
    expected: torch.Tensor
    source: str  # the whole generated wrapper module
    scheduling: type  # what the registry held for "cpu" during the compile
    class_before: dict  # the stand-in class's own attributes before install
    class_after: dict  # ... and after uninstall
    stock: Any  # the registry entry before install
    after: Any  # the registry entry after uninstall
    tracing_modules: tuple
    registrations: list[str] | None  # what PR #3449's sidecar recorded; None without one
    warnings: list

    @property
    def result(self):
        return self.session.results[-1]

    @property
    def code(self) -> str:
        """The wrapper's call() and below."""
        return self.source[self.source.index("def call(") :]

    @property
    def lines(self) -> list[str]:
        return self.code.splitlines()


@pytest.fixture(scope="module", params=list(GENERATIONS))
def compiled(request) -> Compiled:
    generation = GENERATIONS[request.param]
    with pytest.MonkeyPatch.context() as mp:
        _purge_torch_spyre()
        _use_stand_in(mp, generation.folder)
        cls = importlib.import_module(SCHEDULER).SuperDSCScheduling
        class_before = dict(vars(cls))
        if generation.ktir:
            mp.setattr(importlib.import_module("torch_spyre._inductor.config"), "ktir_emitter", True)
        codegen_common.init_backend_registration()
        stock = codegen_common.device_codegens["cpu"]
        torch._dynamo.reset()
        torch.manual_seed(0)
        model, x = seed_mlp(), torch.randn(8, 128)
        backend = SpyreBackend(device="cpu")  # the stand-ins compute on CPU
        with (
            warnings.catch_warnings(record=True) as caught,
            torch.no_grad(),
            # a cache hit would skip code generation, and with it the scheduling under test
            inductor_config.patch(fx_graph_cache=False),
            torch._functorch.config.patch(enable_autograd_cache=False),
        ):
            warnings.simplefilter("always")
            with spyre_provenance.tracking(backend) as session:
                scheduling = codegen_common.get_scheduling_for_device("cpu")
                modules = tuple(backend.tracing_modules())
                out, codes = run_and_get_code(torch.compile(model), x)
            expected = model(x)
        after = codegen_common.device_codegens["cpu"]
        artifact = sys.modules.get("torch_spyre._inductor.provenance_artifact")
        registrations = None if artifact is None else list(artifact.REGISTRATIONS)
        class_after = dict(vars(cls))
        _purge_torch_spyre()
    torch._dynamo.reset()
    return Compiled(
        generation,
        backend,
        session,
        out,
        expected,
        codes[0],
        scheduling,
        class_before,
        class_after,
        stock,
        after,
        modules,
        registrations,
        [w for w in caught if issubclass(w.category, ProvenanceWarning)],
    )


def _calls(compiled: Compiled) -> list[tuple[int, str]]:
    return [(i, m["name"]) for i, m in enumerate(map(KERNEL_CALL.match, compiled.lines)) if m]


def _keys(compiled: Compiled) -> list[str]:
    return [m["key"] for m in map(COMMENT.match, compiled.lines) if m]


# --- compile contract, each generation ------------------------------------------------------


@pytest.mark.compile
def test_output_matches_eager(compiled):
    torch.testing.assert_close(compiled.out, compiled.expected)


@pytest.mark.compile
def test_compile_ran_through_the_stand_in_scheduling(compiled):
    assert compiled.scheduling.__name__ == "SuperDSCScheduling"
    assert compiled.scheduling.__module__ == SCHEDULER
    assert len(_calls(compiled)) >= 3  # relu and softmax's reductions: main fuses nothing


@pytest.mark.compile
def test_kernels_are_named_by_the_generations_emitter(compiled):
    names = {name for _, name in _calls(compiled)}
    assert names and all(n.startswith(compiled.generation.prefix) for n in names), names


@pytest.mark.compile
def test_every_call_site_is_a_mapping_key_announced_by_its_comment(compiled):
    # read as tlparse reads the wrapper: each call, extern ones included, and its comment
    sites = wrapper_code.call_sites(compiled.source)
    assert {s.name for s in sites} >= {name for _, name in _calls(compiled)}
    keys = set(compiled.result.node_mappings.cppCodeToPost)
    for site in sites:
        assert site.key is not None and site.key.split(":")[0] == site.name, site
        assert site.key in keys, site


@pytest.mark.compile
def test_codegen_comment_is_the_generations_own(compiled):
    owner = compiled.scheduling.codegen_comment.__qualname__.split(".")[0]
    assert owner == compiled.generation.comment_owner
    inherited = compiled.generation.comment_owner != "SuperDSCScheduling"
    assert ("codegen_comment" not in compiled.class_before) is inherited


@pytest.mark.compile
def test_generation_is_detected(compiled):
    assert compiled.backend.writes_handle_comments is compiled.generation.writes_comments
    assert tuple(m.__name__ for m in compiled.tracing_modules) == compiled.generation.by_name


@pytest.mark.compile
def test_each_kernel_call_has_exactly_one_handle_comment_right_before_it(compiled):
    lines, keys = compiled.lines, _keys(compiled)
    for i, name in _calls(compiled):
        before = COMMENT.match(lines[i - 1])
        assert before and before["name"] == name, lines[i - 2 : i + 1]
        assert not COMMENT.match(lines[i - 2]), "handle comment written twice"
        assert keys.count(before["key"]) == 1


@pytest.mark.compile
def test_mapping_kernels_are_the_wrapper_comments(compiled):
    keys = _keys(compiled)
    assert len(keys) == len(set(keys))
    assert compiled.result.node_mappings is not None
    assert set(compiled.result.node_mappings.cppCodeToPost) == set(keys)


@pytest.mark.compile
def test_pr3449_sidecar_records_the_handles_of_the_comments(compiled):
    if compiled.generation.folder != "gen_pr3449":
        assert compiled.registrations is None  # no other generation has the PR's module
        return
    # the hook reused the N the PR's override took: its sidecar and the page agree
    kernel_keys = [k for k in _keys(compiled) if re.fullmatch(KERNEL_NAME, k.split(":")[0])]
    assert kernel_keys and compiled.registrations == kernel_keys


@pytest.mark.compile
def test_kernel_records_carry_their_opspecs(compiled):
    kernels = [r for r in compiled.result.records if re.fullmatch(KERNEL_NAME, r.name)]
    assert kernels
    assert any(s.is_reduction for r in kernels for s in r.opspecs or ())
    for record in kernels:
        assert record.opspecs, record.key
        for spec in record.opspecs:
            if compiled.generation.handles:
                assert spec.debug_handle is not None
                assert set(record.post_grad_nodes) <= set(spec.debug_handle.ir_chain)
                assert spec.buffer == spec.debug_handle.ir_chain[-1]  # main's TensorArg.name
            else:
                assert spec.debug_handle is None  # the old OpSpec has no such field


@pytest.mark.compile
def test_handleless_opspecs_are_counted(compiled):
    specs = [s for r in compiled.result.records for s in (r.opspecs or ())]
    diag = compiled.result.diagnostics
    assert diag.opspecs == len(specs)
    assert diag.handleless_opspecs == sum(s.debug_handle is None for s in specs)
    assert diag.handleless_opspecs == (0 if compiled.generation.handles else len(specs))


@pytest.mark.compile
def test_no_faults_and_no_warnings(compiled):
    assert compiled.result.diagnostics.faults == []
    assert compiled.warnings == []


@pytest.mark.compile
def test_uninstall_restores_registration_and_the_class(compiled):
    assert compiled.after is compiled.stock
    assert compiled.class_after == compiled.class_before
    assert compiled.backend.tracing_modules() == ()


# --- no compile -------------------------------------------------------------------------------


def _torch_spyre_modules() -> list[str]:
    return [m for m in sys.modules if m == "torch_spyre" or m.startswith("torch_spyre.")]


@pytest.fixture
def no_torch_spyre(monkeypatch):
    """A process without torch_spyre imported or findable, put back as it was afterwards."""
    for name in _torch_spyre_modules():
        monkeypatch.delitem(sys.modules, name)
    if adapter.probe()[0]:
        pytest.skip("a real, usable torch_spyre is installed")
    yield monkeypatch
    _purge_torch_spyre()


#: Small torch_spyre packages that are on the path but no backend: file -> text.
BROKEN = {
    # the real failure: the _inductor modules import the C++ extension, built against IBM's libraries
    "no _C": {"_inductor/scheduler.py": "import torch_spyre._C\n"},
    "raises at import": {"__init__.py": "raise OSError('libdee.so: cannot open shared object file')\n"},
    "dsc.py only": {"_inductor/dsc.py": "class SuperDSCScheduling:\n    pass\n"},
    "no class": {"_inductor/scheduler.py": "class SomethingElse:\n    pass\n"},
}
WHY = {
    "no _C": "torch_spyre imports but its SuperDSCScheduling does not: ModuleNotFoundError: "
    "No module named 'torch_spyre._C'",
    "raises at import": "torch_spyre does not import: OSError: libdee.so: cannot open shared object file",
    "dsc.py only": "torch_spyre imports but its SuperDSCScheduling does not: ModuleNotFoundError: "
    "No module named 'torch_spyre._inductor.scheduler'",
    "no class": "torch_spyre imports but its SuperDSCScheduling does not: RuntimeError: "
    "torch_spyre._inductor.scheduler has no SuperDSCScheduling",
}


def test_probe_without_torch_spyre(no_torch_spyre):
    assert adapter.probe() == (False, "torch_spyre is not installed")
    assert not available()


@pytest.mark.parametrize("case", list(BROKEN))
def test_probe_says_no_to_a_torch_spyre_that_cannot_install_and_leaves_nothing(no_torch_spyre, tmp_path, case):
    files = {"__init__.py": "", "_inductor/__init__.py": "", **BROKEN[case]}
    for name, text in files.items():
        (tmp_path / "torch_spyre" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "torch_spyre" / name).write_text(text)
    no_torch_spyre.syspath_prepend(str(tmp_path))
    assert adapter.probe() == (False, WHY[case])
    assert _torch_spyre_modules() == []  # found, failed, forgotten: no half import left
    assert not available()


@pytest.mark.parametrize("folder", sorted({g.folder for g in GENERATIONS.values()}))
def test_probe_says_yes_to_each_stand_in(no_torch_spyre, folder):
    _use_stand_in(no_torch_spyre, folder)
    usable, why = adapter.probe()
    assert usable and why == f"torch_spyre imports and has {SCHEDULER}.SuperDSCScheduling"
    backend, line = choose_backend("auto")
    assert isinstance(backend, SpyreBackend)
    assert line == f"backend spyre (auto: {why})"


def test_auto_without_torch_spyre_says_reference_and_why(no_torch_spyre):
    backend, line = choose_backend("auto")
    assert backend.name == "reference"
    assert line == "backend reference (auto: torch_spyre is not installed)"
    assert choose_backend("inductor")[1] == "backend inductor (asked for)"


def test_get_backend_spyre_is_the_adapter():
    backend = get_backend("spyre")
    assert isinstance(backend, SpyreBackend)
    assert (backend.name, backend.device) == ("spyre", "spyre")


def _fake_module(codegen_comment):
    class SuperDSCScheduling:
        def define_kernel(self, src_code, node_schedule, kernel):
            return "sdsc_fused_relu_0"

    SuperDSCScheduling.codegen_comment = codegen_comment
    module = types.ModuleType("fake_torch_spyre_scheduler")
    module.SuperDSCScheduling = SuperDSCScheduling
    return module


def _silent(self, node_schedule, kernel_name=None):
    pass


def _takes_handle(self, node_schedule, kernel_name=None):
    import torch._inductor.debug as d
    from torch._inductor.debug import set_kernel_post_grad_provenance_tracing  # noqa: F401

    d._inductor_kernel_provenance_debug_handle += 1  # what the real function does


def test_detection_reads_codegen_comment():
    assert adapter.detect_generation(_fake_module(_takes_handle).SuperDSCScheduling)[0]
    assert not adapter.detect_generation(_fake_module(_silent).SuperDSCScheduling)[0]


@pytest.mark.parametrize("codegen_comment, recorded", [(_silent, 1), (_takes_handle, 0)])
def test_old_generation_wrapper_records_only_when_nothing_took_a_handle(monkeypatch, codegen_comment, recorded):
    import torch._inductor.debug as inductor_debug

    monkeypatch.setattr(inductor_debug, adapter.HANDLE_COUNTER, 0)
    calls = []

    class Recorder:  # the seam a backend is handed at install (backends.base.CallSiteRecorder)
        def record_call_site(self, node_schedule, kernel_name):
            calls.append((node_schedule, kernel_name))

    # force the wrapper even for the handle-taking method: the counter guard must hold
    monkeypatch.setattr(adapter, "detect_generation", lambda cls: (False, []))
    module = _fake_module(codegen_comment)
    backend = SpyreBackend(module=module, device="spyre_test")
    backend.install(Recorder())
    try:
        module.SuperDSCScheduling().codegen_comment(["node"], "sdsc_fused_relu_0")
        module.SuperDSCScheduling().codegen_comment(["node"], None)  # no name: never recorded
    finally:
        backend.uninstall()
    assert len(calls) == recorded
    assert module.SuperDSCScheduling.codegen_comment is codegen_comment


@dataclasses.dataclass
class OldOpSpec:  # torch-spyre before Phase 2: no debug_handle attribute at all
    op: str
    is_reduction: bool
    iteration_space: dict
    args: list
    op_info: dict


@dataclasses.dataclass
class LoopSpec:
    count: int
    body: list


def test_opspecs_kept_at_define_kernel_and_converted(monkeypatch):
    module = _fake_module(_silent)
    backend = SpyreBackend(module=module, device="spyre_test")
    none_handle = types.SimpleNamespace(
        op="add", is_reduction=False, iteration_space={}, args=[], op_info={}, debug_handle=None
    )
    old_spec = OldOpSpec("relufwd", False, {"c0": (2048, 1)}, [], {})
    unimplemented = types.SimpleNamespace(op="topk")  # torch-spyre's UnimplementedOp: only op
    kernel = types.SimpleNamespace(op_specs=[old_spec, LoopSpec(2, [none_handle, unimplemented])])
    graph = types.SimpleNamespace()
    backend.install()
    try:
        assert codegen_common.get_scheduling_for_device("spyre_test") is module.SuperDSCScheduling
        with V.set_graph_handler(graph):
            name = module.SuperDSCScheduling().define_kernel("src", ["node"], kernel)
            got = backend.opspecs_for(name, ["node"])
            assert backend.opspecs_for("sdsc_other_1", ["node"]) is None
    finally:
        backend.uninstall()
    assert got == [
        OpSpecRecord(op="relufwd", is_reduction=False, iteration_space=[2048], debug_handle=None),
        # a generation with the field, holding None: the handle was lost, and the record says so
        OpSpecRecord(
            op="add",
            is_reduction=False,
            iteration_space=[],
            debug_handle=None,
            missing_handle="the backend built no debug handle for it",
        ),
        # an op torch-spyre cannot lower is kept, handleless, and says why: the hook counts it
        OpSpecRecord(op="topk", is_reduction=False, missing_handle=readers.UNIMPLEMENTED),
    ]
    assert got[0].missing_handle is None  # an OpSpec of a generation without handles
    assert "spyre_test" not in codegen_common.device_codegens
    assert "define_kernel" in module.SuperDSCScheduling.__dict__
    assert not hasattr(module.SuperDSCScheduling.define_kernel, "__wrapped__")
