"""Stand-in for torch-spyre, newest generation (see tests/stand_ins/README.md).

The real package loads its C++ extension and renames the PrivateUse1 device to "spyre";
this one only carries the Inductor integration under ``_inductor``.
"""
