"""Validation: the JSON Schemas and the rules, on two engines with one verdict.

``schemas``   schema lookup, ``Report``, ``validate``/``validate_bytes`` (the full engine:
              jsonschema), ``check_built_artifacts`` (the emitter's gate), JSON reading
``kinds``     the artifact kinds' records: each kind's schema, decoders, rules, normalizer, filing
``fastpath``  the msgspec engine for large artifacts (``decoding``; each kind's ``decoders``)
``rules``     what no schema can state (inverse maps, unique handles, handle references, ...;
              ``diagnostics_rules``, ``audit_rules``)
``paths``     what ``validate PATH...`` checks: files, TORCH_TRACE logs, folders

Pure: no torch.
"""
