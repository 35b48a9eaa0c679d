"""Encoding families, one package each: conventions, oracles, tolerances, properties and calls."""
