"""A victim: the canary (see canary.py) in a module of its own. Verdict: conforms."""

from canary import canary as table  # noqa: F401
