"""torch-spyre main's real Inductor backend in the suite, on the project's stand-in for its
native extension (``native``): where its source is (``locate``), bringing it up in a
process (``boot``), the route to it (``route``), the compile worker (``server``) and the
fixtures (``conftest``). Tests here carry the marker ``spyre_main``."""
