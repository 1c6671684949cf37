"""vLLM's own plugin loader, as every vLLM process runs it: ``vllm.plugins.load_general_plugins``
(vLLM installed with ``--no-deps`` beside this torch; importing its plugin loader needs no GPU).
It loads the entry points of ``vllm.general_plugins`` that ``VLLM_PLUGINS`` allows (unset:
all; else the comma-separated names) and calls each, with no ``try`` around the call: a
plugin that raises stops the process. Then the process compiles, as a vLLM worker does.

argv[1]: SPYRE_PROVENANCE_OUT, set only now: the start-up hook saw no variable, so whatever
tracking there is, vLLM's call of the plugin started it. argv[2:]: what to do to the
environment first (``tests/attach/test_vllm_loader.py``, ``HOSTILE``).
"""

import os
import sys
import warnings

import torch
import torch._inductor.compile_fx as compile_fx

os.environ["SPYRE_PROVENANCE_OUT"] = sys.argv[1]
home = os.getcwd()
for what in sys.argv[2:]:
    if what == "no-stderr":
        sys.stderr = None
    elif what == "closed-stderr":
        sys.stderr.close()
    elif what == "warnings-are-errors":
        warnings.simplefilter("error")
    elif what == "no-attach":  # the package's attaching module cannot be imported
        sys.modules["spyre_provenance.capture.attach"] = None
    elif what == "cwd-gone":  # a relative OUT in a folder that no longer exists
        os.makedirs("gone", exist_ok=True)
        os.chdir("gone")
        os.rmdir(os.path.abspath("."))
    elif what.startswith("env:"):
        name, _, value = what[4:].partition("=")
        os.environ[name] = value

from vllm.plugins import load_general_plugins  # noqa: E402 - after the environment is set

load_general_plugins()
load_general_plugins()  # "plugins can be loaded for multiple times": vLLM's second call is a no-op
if "cwd-gone" in sys.argv[2:]:  # back where Inductor can build (it writes relative to the cwd)
    os.chdir(home)
if "unset-after" in sys.argv[2:]:  # the program drops the variable after vLLM started tracking
    del os.environ["SPYRE_PROVENANCE_OUT"]
print("tracking", bool(getattr(compile_fx.compile_fx, "_spyre_provenance_attached", False)), flush=True)
f = torch.compile(lambda x: torch.sin(x) + 1)
print("result", float(f(torch.ones(4)).sum()), flush=True)
