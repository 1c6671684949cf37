"""A synthetic, valid, deterministic v2 mapping of any size, built the way the hook builds one.

``refs`` node references means ``refs`` entries in ``cppCodeToPost``: ``refs / 10`` kernel
call sites, each computing 10 post-grad nodes; every post-grad node is computed by two
neighbouring call sites (fusion duplicates work like that) and comes from one pre-grad node,
which has two post-grad nodes. The document then holds ``3 * refs`` list entries in all:
``refs`` in each of cppCodeToPost and postToCppCode, ``refs / 2`` in each of preToPost and
postToPre. Names look like Inductor's; 1M references make ~108 MB of JSON.
"""

from __future__ import annotations

from spyre_provenance.model.records import KernelRecord, NodeMap

REFS_PER_KERNEL = 10
SHARED_BY = 2  # call sites per post-grad node

_POST_OPS = ("convert_element_type", "native_layer_norm", "add_tensor", "mul", "addmm", "permute", "view", "gelu")
_KERNELS = ("cpp_fused_add_native_layer_norm", "cpp_fused_gelu_mul", "cpp_fused__softmax_div", "extern_kernels.addmm")
_PRE_OPS = ("attn_qkv", "norm1", "add", "mlp_up", "gelu", "mlp_down", "norm2", "proj")


def sizes(refs: int) -> tuple[int, int, int]:
    """(kernel call sites, post-grad nodes, pre-grad nodes) for ``refs`` references."""
    kernels = max(1, refs // REFS_PER_KERNEL)
    posts = kernels * REFS_PER_KERNEL // SHARED_BY
    return kernels, posts, (posts + 1) // 2


def post_name(i: int) -> str:
    return f"{_POST_OPS[i % len(_POST_OPS)]}_{i}"


def pre_name(i: int) -> str:
    return f"l__self___layers_{i // len(_PRE_OPS)}_{_PRE_OPS[i % len(_PRE_OPS)]}"


def records(refs: int) -> list[KernelRecord]:
    """Call sites in handle order (N = 1, 2, ...), as the hook collects them."""
    kernels, posts, _ = sizes(refs)
    names = [post_name(i) for i in range(posts)]
    step = REFS_PER_KERNEL // SHARED_BY
    out = []
    for k in range(kernels):
        base = _KERNELS[k % len(_KERNELS)]
        is_extern = base.startswith("extern_kernels.")
        out.append(
            KernelRecord(
                name=base if is_extern else f"{base}_{k}",
                handle=k + 1,
                post_grad_nodes=[names[(k * step + j) % posts] for j in range(REFS_PER_KERNEL)],
                is_extern=is_extern,
            )
        )
    return out


def relation(refs: int) -> tuple[NodeMap, NodeMap]:
    """(preToPost, postToPre): post-grad node i comes from pre-grad node i // 2."""
    _, posts, _ = sizes(refs)
    pre_to_post: NodeMap = {}
    post_to_pre: NodeMap = {}
    for i in range(posts):
        post, pre = post_name(i), pre_name(i // 2)
        pre_to_post.setdefault(pre, []).append(post)
        post_to_pre[post] = [pre]
    return pre_to_post, post_to_pre
