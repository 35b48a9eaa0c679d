"""Tests of the encoding families, one package each."""
