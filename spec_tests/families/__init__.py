"""Tests of the encoding families, one folder each."""
