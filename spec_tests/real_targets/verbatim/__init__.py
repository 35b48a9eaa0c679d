"""Real position-encoding code that cannot be installed here, copied verbatim or, where its
header says so, transcribed (each file names its source, version and licence). The gate
imports these files as targets with no wrapper: what they declare is in
``spec_tests/core/test_gate_as_written.py``."""
