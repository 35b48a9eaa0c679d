"""Tests of the T5-bucket family (posenc_spec.families.t5buckets)."""
