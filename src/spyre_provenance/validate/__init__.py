"""Validation: the JSON Schemas and the rules, on two engines with one verdict.

``schemas``   schema lookup, ``Report``, ``validate``/``validate_bytes`` (the full engine:
              jsonschema), ``check_built_artifacts`` (the emitter's gate), JSON reading
``kind``      an artifact kind's record, ``Kind``: schema, decoders, rules, normalizer, filing
``kinds/``    the registry, ``KINDS``: one module per kind, each its record and every part of it
``fastpath``  the msgspec engine for large artifacts (``decoding``; each kind's ``fast``)
``rules``     what the kinds' rules share (kernel keys, unique lists, the problems' wording)
``paths``     what ``validate PATH...`` checks: files, TORCH_TRACE logs, folders

Pure: no torch.
"""
