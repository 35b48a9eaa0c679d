"""Tests of the ALiBi family: oracle, bounds, properties, conventions and real code."""
