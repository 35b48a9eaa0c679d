"""The encoding families, one package each: conventions, oracle, tolerance, properties,
grid, judge, ``identify`` and hints, adapters, figures. The gate's core finds them through
:mod:`posenc_spec.registry`, which names them in ``GATED``.
"""
