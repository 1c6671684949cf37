"""Like torch-spyre's ``_inductor/__init__.py``: ``_autoload`` registers the scheduling.

The real ``_autoload`` runs from torch's backend autoload entry point; nothing calls this one
(the adapter registers the class itself, for "cpu", in the tests).
"""

from .constants import DEVICE_NAME


def _autoload(device: str = DEVICE_NAME) -> None:
    from torch._inductor.codegen.common import register_backend_for_device
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    from .scheduler import SuperDSCScheduling

    register_backend_for_device(device, SuperDSCScheduling, PythonWrapperCodegen)
