"""Real architectures from a model library's own code: Hugging Face ``transformers`` models
built from tiny configs with random weights (never a download), each a ``PATH.py:FACTORY``
as a user would hand it to ``spyre-provenance compile``.

Every factory returns ``(module, example_inputs)`` from a fixed seed, the module in eval
mode (``compile --train`` switches it to train mode itself), with the library's default
dropout left on: training them is what a user does. The models return the library's own
``ModelOutput`` (a dict of tensors), except T5, wrapped to take ``decoder_input_ids`` by
position. Tests: tests/models/test_real_models.py; ``HF_MODELS`` lists them with what each covers.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random weights from configs: nothing to fetch

import torch
import transformers
from torch import nn

SEED = 0
BATCH, SEQ, VOCAB = 2, 8, 128


def _ids(length: int = SEQ) -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, length))


def _images() -> torch.Tensor:
    return torch.randn(BATCH, 3, 32, 32)


def llama():
    """Decoder LLM: RoPE, RMSNorm, SwiGLU, grouped-query attention (4 query, 2 KV heads)."""
    torch.manual_seed(SEED)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        use_cache=False,
        attn_implementation="sdpa",
    )
    return transformers.LlamaForCausalLM(config).eval(), (_ids(),)


def granite():
    """Granite (Llama's layout with embedding, residual, attention and logit multipliers),
    two layers: the second reuses the first one's kernels (one kernel, two call sites)."""
    torch.manual_seed(SEED)
    config = transformers.GraniteConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        use_cache=False,
        attn_implementation="sdpa",
        embedding_multiplier=12.0,
        residual_multiplier=0.22,
        attention_multiplier=0.0078125,
        logits_scaling=8.0,
    )
    return transformers.GraniteForCausalLM(config).eval(), (_ids(),)


def bert():
    """Encoder: BERT for masked LM with its default dropout (hidden and attention 0.1) and
    an attention mask with padding."""
    torch.manual_seed(SEED)
    config = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
        attn_implementation="sdpa",
    )
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, -3:] = 0
    return transformers.BertForMaskedLM(config).eval(), (_ids(), mask)


def gpt2():
    """Decoder: GPT-2 with its default dropout (0.1), two identical layers (one kernel,
    two call sites) and the head tied to the embedding."""
    torch.manual_seed(SEED)
    config = transformers.GPT2Config(
        vocab_size=VOCAB,
        n_positions=32,
        n_embd=32,
        n_layer=2,
        n_head=4,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="sdpa",
    )
    return transformers.GPT2LMHeadModel(config).eval(), (_ids(),)


def gpt2_checkpointed():
    """GPT-2 with transformers' activation (gradient) checkpointing: in training each block runs under
    ``torch.utils.checkpoint``, which Dynamo traces into a subgraph (``wrap_body_<i>``) a
    ``tag_activation_checkpoint`` node holds; the blocks' node names repeat between them and
    the final LayerNorm's (issue 37)."""
    model, inputs = gpt2()
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return model, inputs


class _Decoding(nn.Module):
    """A causal LM called as generation calls it: the prompt, then one token with the KV
    cache the prompt filled (``past_key_values``), returning the logits."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, cache=None) -> torch.Tensor:
        return self.model(input_ids, past_key_values=cache, use_cache=cache is not None).logits


def granite_decode():
    """Granite's prefill and one decode step, two calls and two compiles (``0/0``, ``0/1``):
    the decode step appends to the KV cache (``torch.cat`` in transformers' ``cache_utils``)
    and builds no causal mask; the layers share kernels. The cache comes from an eager
    prefill, so the decode call is what ``generate`` would make."""
    model, (ids,) = granite()
    with torch.no_grad():
        prefill = model(ids, use_cache=True)
    token = prefill.logits[:, -1:].argmax(-1)
    return _Decoding(model), [(ids,), (token, prefill.past_key_values)]


class _Seq2Seq(nn.Module):
    """T5 taking ``(input_ids, decoder_input_ids)`` by position, as ``compile`` calls it."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor):
        return self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids)


def t5():
    """Encoder-decoder: T5 (relative position buckets, T5's RMS norm, dropout 0.1)."""
    torch.manual_seed(SEED)
    config = transformers.T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        use_cache=False,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    return _Seq2Seq(transformers.T5ForConditionalGeneration(config)).eval(), (_ids(), _ids(6))


def vit():
    """Vision transformer: patch embedding (a strided convolution), a CLS token."""
    torch.manual_seed(SEED)
    config = transformers.ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        num_labels=10,
        attn_implementation="sdpa",
    )
    return transformers.ViTForImageClassification(config).eval(), (_images(),)


def _warm_batch_norm(model: nn.Module) -> nn.Module:
    """A few training-mode passes so BatchNorm's running statistics describe real
    activations: fresh ones make an eval-mode output vanishingly small (MobileNetV2's
    logits come out near 1e-26), and then any output would "match" eager."""
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(_images())
    return model.eval()


def resnet():
    """CNN with BatchNorm: ResNet basic blocks (BatchNorm's running statistics are written
    back in training)."""
    torch.manual_seed(SEED)
    config = transformers.ResNetConfig(
        num_channels=3,
        embedding_size=8,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        layer_type="basic",
        hidden_act="relu",
        num_labels=10,
    )
    return _warm_batch_norm(transformers.ResNetForImageClassification(config)), (_images(),)


def convnext():
    """Depthwise CNN: ConvNeXt (7x7 depthwise convolutions, LayerNorm, GELU, layer scale)."""
    torch.manual_seed(SEED)
    config = transformers.ConvNextConfig(
        num_channels=3,
        num_stages=2,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        num_labels=10,
        drop_path_rate=0.0,
    )
    return transformers.ConvNextForImageClassification(config).eval(), (_images(),)


#: name -> what the architecture is there to cover (the factory is the module attribute)
HF_MODELS = {
    "llama": "decoder LLM: RoPE, RMSNorm, grouped-query attention, SwiGLU",
    "granite": "decoder LLM, two layers sharing kernels; Granite's multipliers",
    "bert": "encoder with dropout and a padding mask",
    "gpt2": "decoder with dropout, two identical layers, a tied head",
    "gpt2_checkpointed": "GPT-2 with gradient checkpointing: blocks traced into checkpoint subgraphs in training",
    "t5": "encoder-decoder: relative position bias, dropout",
    "vit": "vision transformer: patch convolution, CLS token",
    "resnet": "CNN with BatchNorm (running statistics written back in training)",
    "convnext": "depthwise CNN: 7x7 depthwise convolutions, LayerNorm",
}
