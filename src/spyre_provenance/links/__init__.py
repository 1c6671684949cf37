"""Pure: records -> node mappings and stack traces, links beyond a kernel's origins, two runs paired, paths redacted (modules: docs/contributing.md)."""
