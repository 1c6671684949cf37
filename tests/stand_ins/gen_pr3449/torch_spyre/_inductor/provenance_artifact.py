"""Like PR #3449's ``provenance_artifact.record_kernel_registration``, reduced to what tests read.

The PR keeps ``(kernel_name, ordinal)`` registrations on the GraphLowering and publishes them,
with the handles, to a ``spyre_provenance.json`` sidecar keyed ``"{kernel_name}:{ordinal}"``.
Stand-in: the aliases go to ``REGISTRATIONS``, which stands for that sidecar.
"""

from __future__ import annotations

REGISTRATIONS: list[str] = []


def record_kernel_registration(graph: object, kernel_name: str, ordinal: int | None) -> None:
    if ordinal is None:  # provenance tracking off: Inductor handed out no handle
        return
    REGISTRATIONS.append(f"{kernel_name}:{ordinal}")
