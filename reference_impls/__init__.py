"""The reference implementations, re-exported from the package that ships them.

The code lives in :mod:`posenc_spec.families.sinusoidal.references` (inside the package, so that an installed
posenc-spec checks them as its built-in default and a wheel installs nothing outside
``posenc_spec``); this folder keeps the repository's own import names.
"""
