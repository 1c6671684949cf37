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
