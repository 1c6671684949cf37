"""Validation: the JSON Schemas and the rules, on two engines with one verdict.

``schemas``   schema lookup, ``Report``, ``validate``/``validate_bytes`` (the full engine:
              jsonschema), ``check_built_artifacts`` (the emitter's gate), JSON reading
``fastpath``  the msgspec engine for large artifacts
``rules``     what no schema can state (inverse maps, unique handles, handle references, ...)
``paths``     what ``validate PATH...`` checks: files, TORCH_TRACE logs, folders

Pure: no torch.
"""
