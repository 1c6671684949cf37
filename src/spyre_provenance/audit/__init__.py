"""Pure: the provenance audit (``report``): field coverage per stage, where each field drops, what changed."""
