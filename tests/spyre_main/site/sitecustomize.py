"""Put on ``PYTHONPATH`` (``tests/spyre_main/run_booted.py`` does), this boots torch-spyre
main on the stand-in and installs the route in every Python process that starts, so a
command that compiles in processes of its own (``spyre-provenance golden update``) compiles
on torch-spyre main. Does nothing without ``$SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE``."""

import os

if os.environ.get("SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE"):
    from spyre_main import boot, route

    boot.boot_from_env()
    route.install()
