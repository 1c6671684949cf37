"""vLLM's plugin loading, as ``vllm/plugins/__init__.py`` does it (``load_general_plugins``,
``load_plugins_by_group``), for an environment without vLLM (its releases pin another torch;
``--no-deps`` installs it beside this one, and ``vllm_real_loader.py`` runs vLLM's own loader
there): torch is imported first, then every entry point of the group
``vllm.general_plugins`` whose name ``VLLM_PLUGINS`` allows (unset: all; else the
comma-separated names) is loaded and called; vLLM may do so more than once in a process.
Then the process compiles, as a vLLM worker does.

SPYRE_PROVENANCE_OUT is set only now (argv[1]): at start-up it was not, so the start-up hook
did nothing and whatever tracking there is, the plugin started."""

import os
import sys
from importlib.metadata import entry_points

import torch
import torch._inductor.compile_fx  # vLLM's compilation imports Inductor before its workers compile

os.environ["SPYRE_PROVENANCE_OUT"] = sys.argv[1]
allowed = None if "VLLM_PLUGINS" not in os.environ else os.environ["VLLM_PLUGINS"].split(",")
loaded = {}
for plugin in entry_points(group="vllm.general_plugins"):
    if allowed is None or plugin.name in allowed:
        loaded[plugin.name] = plugin.load()
for _ in range(2):  # "plugins can be loaded for multiple times"
    for func in loaded.values():
        func()
print("loaded", sorted(loaded), flush=True)
f = torch.compile(lambda x: torch.sin(x) + 1)
print("result", float(f(torch.ones(4)).sum()), flush=True)
