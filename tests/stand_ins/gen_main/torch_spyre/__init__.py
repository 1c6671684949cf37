"""Stand-in for torch-spyre main (see tests/stand_ins/README.md).

The real package loads its C++ extension ``torch_spyre._C`` and renames the PrivateUse1
device to "spyre"; this one carries the Inductor integration under ``_inductor`` and a
Python ``_C`` holding the one enum the OpSpecs use.
"""
