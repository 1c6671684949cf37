"""The package's version, written once: here, in the lowest layer, so any module reads it
without an import up to the package root (``capture.audit_probe`` stamps it on an audit,
``cli`` prints it for ``--version``).

pyproject reads it ([tool.hatch.version]), the public API re-exports it as
``spyre_provenance.__version__``, and CHANGELOG.md's newest released heading must equal it
(tests/unit/test_docs.py).
"""

__version__ = "0.1.0"
