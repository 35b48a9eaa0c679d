"""The encoding families, one package each: conventions, oracles, tolerances and properties."""
