"""Pure: records -> node mappings and stack traces (``mapping``), links beyond a kernel's origins (``inference``), two runs paired (``pairing``), paths redacted (``redact``)."""
