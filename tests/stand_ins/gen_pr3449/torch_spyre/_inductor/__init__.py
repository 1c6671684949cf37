"""Like torch-spyre's ``_inductor/__init__.py``; modules this folder lacks come from gen_main.

The real ``_autoload`` runs from torch's backend autoload entry point; nothing calls this one
(the adapter registers the class itself, for "cpu", in the tests).
"""

from pathlib import Path

__path__.append(str(Path(__file__).parents[3] / "gen_main" / "torch_spyre" / "_inductor"))

from .constants import DEVICE_NAME  # noqa: E402 - found through the path above


def _autoload(device: str = DEVICE_NAME) -> None:
    from torch._inductor.codegen.common import register_backend_for_device
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    from .scheduler import SuperDSCScheduling

    register_backend_for_device(device, SuperDSCScheduling, PythonWrapperCodegen)
