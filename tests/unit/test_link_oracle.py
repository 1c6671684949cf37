"""The oracle the zoo's links are held to (tests/helpers/link_oracle.py), on hand-written graphs
as torch prints them: it must find a false link, and accept a higher-order op's link
only through the lines of the subgraphs it names."""

from __future__ import annotations

from helpers import link_oracle
from spyre_provenance.logs.graphs import LoggedGraph

PRE_GRAD = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2]"):
        l_x_ = L_x_

        # File: m.py:5 in forward, code: x = checkpoint(block, x)
        wrap_body_0 = self.wrap_body_0
        tag_activation_checkpoint = torch.ops.higher_order.tag_activation_checkpoint(wrap_body_0, l_x_)
        x: "f32[2]" = tag_activation_checkpoint[0];  tag_activation_checkpoint = None

        # File: m.py:6 in forward, code: return self.head(x)
        linear: "f32[2]" = torch._C._nn.linear(x, w)
        return (linear,)

    class wrap_body_0(torch.nn.Module):
        def forward(self, l_x_: "f32[2]"):
            # File: m.py:2 in block, code: return self.fc(x).relu()
            linear: "f32[2]" = torch._C._nn.linear(l_x_, w)
            relu: "f32[2]" = linear.relu();  linear = None
            return (relu,)
"""

POST_GRAD = """class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[2]"):
        # File: m.py:2 in block, code: return self.fc(x).relu()
        mm: "f32[2]" = torch.ops.aten.mm.default(arg0_1, arg0_1)
        relu: "f32[2]" = torch.ops.aten.relu.default(mm);  mm = None

        # File: m.py:6 in forward, code: return self.head(x)
        mm_1: "f32[2]" = torch.ops.aten.mm.default(relu, relu)
        return (mm_1,)
"""


def judged(post_to_pre: dict[str, list[str]]) -> link_oracle.Verdict:
    graph = LoggedGraph(
        "0/0",
        post_grad_graph=POST_GRAD,
        output_code="...",
        node_mappings={"cppCodeToPost": {"k_block:1": ["mm", "relu"], "k_head:2": ["mm_1"]}, "postToPre": post_to_pre},
    )
    return link_oracle.judge([graph], {"0/0": PRE_GRAD})


def test_a_higher_order_op_is_true_through_its_subgraphs_lines():
    verdict = judged({"mm": ["tag_activation_checkpoint"], "relu": ["tag_activation_checkpoint"]})
    assert (verdict.true, verdict.false, verdict.linked_kernels) == (1, [], 1)


def test_a_reader_on_another_line_is_false():
    """Issue 37's checkpointed model: the block's kernel linked to the head's reader."""
    verdict = judged({"relu": ["tag_activation_checkpoint"], "mm": ["x"], "mm_1": ["relu"]})
    assert len(verdict.false) == 2 and verdict.true == 1


def test_a_repeated_name_is_read_as_the_page_lights_it():
    """tlparse lights a name's last line: the head's ``linear`` reads as the block's."""
    assert link_oracle.read_pre_grad(PRE_GRAD).of("linear") == {"m.py:2"}
    assert judged({"mm_1": ["linear"]}).false


WRITE_BACK_PRE = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2]"):
        l_x_ = L_x_

        # File: m.py:3 in forward, code: h = self.norm(x)
        h: "f32[2]" = torch.nn.functional.batch_norm(l_x_, rm, rv, None, None, True)

        # File: m.py:4 in forward, code: return self.head(h)
        linear: "f32[2]" = torch._C._nn.linear(h, w)
        return (linear,)
"""

WRITE_BACK_POST = """class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[2]", arg1_1: "f32[2]"):
        # File: m.py:3 in forward, code: h = self.norm(x)
        add: "f32[2]" = torch.ops.aten.add.Tensor(arg1_1, arg0_1)

        # File: m.py:4 in forward, code: return self.head(h)
        mm: "f32[2]" = torch.ops.aten.mm.default(add, add)

        copy_: "f32[2]" = torch.ops.aten.copy_.default(arg1_1, add);  arg1_1 = add = None
        return (mm,)
"""


def test_a_write_back_beside_other_lines_is_judged_by_the_value_it_copies():
    """Graph order puts functionalization's write-backs last, in a kernel with later lines:
    the running statistic's copy_ is still the norm's (the value it copies, line 3)."""
    graph = LoggedGraph(
        "0/0",
        post_grad_graph=WRITE_BACK_POST,
        output_code="...",
        node_mappings={
            "cppCodeToPost": {"k_norm:1": ["add"], "k_head:2": ["mm", "copy_"]},
            "postToPre": {"add": ["h"], "mm": ["linear"], "copy_": ["h"]},
        },
    )
    verdict = link_oracle.judge([graph], {"0/0": WRITE_BACK_PRE})
    assert (verdict.true, verdict.false) == (3, [])
    # the head's own line alone does not make the norm true: without the copy it is false
    graph.node_mappings["cppCodeToPost"]["k_head:2"] = ["mm"]
    graph.node_mappings["postToPre"]["mm"] = ["linear", "h"]
    assert len(link_oracle.judge([graph], {"0/0": WRITE_BACK_PRE}).false) == 1
