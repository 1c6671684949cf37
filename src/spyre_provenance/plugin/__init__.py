"""An entry point: the pytest plugin with the ``provenance_regression`` fixture (``pytest_fixture``, entry point ``pytest11``)."""
