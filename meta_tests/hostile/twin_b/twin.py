"""twin_b: a file target that imports ``pe_helper`` from its own folder (concat).
twin_a/twin.py is a file of the same name whose folder holds another ``pe_helper``.
Verdict declared concat: conforms (it sees its own helper, whichever twin ran first)."""

from __future__ import annotations

from pe_helper import build


def table(num_positions, dim):
    return build(num_positions, dim)
