"""A user's transformers training script, unmodified: a tiny Llama from a config (random
weights, never a download), compiled, one training step. Prints the loss before and after."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

torch.manual_seed(0)
config = transformers.LlamaConfig(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=32,
    use_cache=False,
    attn_implementation="sdpa",
)
model = transformers.LlamaForCausalLM(config)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ids = torch.randint(0, 128, (2, 8))
step = torch.compile(model)
loss = step(input_ids=ids, labels=ids).loss
loss.backward()
optimizer.step()
print(f"loss {loss.item():.6f}", flush=True)
