"""The one rule naming a kernel by its modules where no frame is the user's (``model.modules``)."""

from __future__ import annotations

from spyre_provenance.model.modules import ModuleCall, module_names, module_path, read_module_stacks, recorded_stack

TORCH_ONLY = 'File "/venv/site-packages/torch/nn/parallel/distributed.py", line 1890, in forward\n    x'
USERS = 'File "/home/me/model.py", line 12, in forward\n    x = self.attn(x)'
SEQ = ModuleCall("", "torch.nn.modules.container.Sequential")
LINEAR = ModuleCall("0", "torch.nn.modules.linear.Linear")
GELU = ModuleCall("1", "torch.nn.modules.activation.GELU")


def test_dynamo_names_read_as_paths_from_the_compiled_module() -> None:
    assert module_path("L['fn'].layers.0.self_attn") == "layers.0.self_attn"
    assert module_path("L['self']") == ""
    assert module_path("L['self'].blocks[2]['ffn']") == "blocks.2.ffn"
    assert module_path('G["model"].head') == "head"


def test_a_node_stack_is_recorded_as_path_and_qualified_class() -> None:
    class Linear:  # a class object, as Dynamo keeps it
        pass

    stack = {"a": ("L['fn']", "<class 'torch.nn.modules.container.Sequential'>"), "b": ("L['fn'].0", Linear)}
    assert recorded_stack(stack) == [
        ["", "torch.nn.modules.container.Sequential"],
        ["0", f"{__name__}.test_a_node_stack_is_recorded_as_path_and_qualified_class.<locals>.Linear"],
    ]
    assert recorded_stack(None) == []


def test_names_say_path_and_class() -> None:
    assert LINEAR.name == "0: Linear"
    assert SEQ.name == "Sequential"
    assert ModuleCall("layers.3.self_attn", "torch.nn.modules.activation.MultiheadAttention").name == (
        "layers.3.self_attn: MultiheadAttention"
    )


def test_modules_name_a_call_site_only_where_no_frame_is_the_user_s() -> None:
    stacks = [[SEQ, LINEAR], [SEQ, GELU], [SEQ, LINEAR]]
    named = module_names([TORCH_ONLY], stacks)
    assert named is not None
    assert named.own == [LINEAR, GELU] and named.enclosing == [SEQ]
    assert module_names([], stacks) is not None  # no frame at all: none is the user's either
    assert module_names([USERS, TORCH_ONLY], stacks) is None  # the user's line names it
    assert module_names([TORCH_ONLY], None) is None  # nothing recorded: nothing claimed
    assert module_names([TORCH_ONLY], []) is None


def test_diagnostics_give_their_recorded_stacks() -> None:
    doc = {"module_stacks": {"k:1": [[["", SEQ.cls], ["0", LINEAR.cls]]]}}
    assert read_module_stacks(doc) == {"k:1": [[SEQ, LINEAR]]}
    assert read_module_stacks({"version": 5}) == {}
    assert read_module_stacks(None) == {}


def test_a_model_files_class_is_named_by_the_files_stem_not_its_path(tmp_path) -> None:
    """A ``PATH.py:FACTORY`` model is loaded under a module name spelling the file's whole
    path; recorded under it, the diagnostics would hold the path (past ``--redact-paths``)
    and differ by where the file lives."""
    from spyre_provenance.compile.examples import load_model

    model_file = tmp_path / "deep" / "my_model.py"
    model_file.parent.mkdir()
    model_file.write_text(
        "import torch\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
        "def build(dtype=torch.float32):\n    return Block(), (torch.zeros(2, dtype=dtype),)\n"
    )
    module, _ = load_model(f"{model_file}:build")
    recorded = recorded_stack({"L__self__": ("L['self']", type(module))})
    assert recorded == [["", "my_model.Block"]]
    text = recorded_stack({"L__self__": ("L['self']", f"<class '{type(module).__module__}.Block'>")})
    assert text == [["", "my_model.Block"]]


def test_a_damaged_stack_entry_is_passed_over_not_a_crash() -> None:
    """``lookup`` and the summaries read diagnostics from logs without validating them: an
    entry whose class is not a string (a hand-edited log) must not reach ``.name``."""
    doc = {"module_stacks": {"k": [[["0", "torch.nn.Linear"], ["1", None], [2, "x"]]]}}
    assert [[m.name for m in stack] for stack in read_module_stacks(doc)["k"]] == [["0: Linear"]]
