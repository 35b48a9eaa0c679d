"""Targets whose module imports transformers' rope utilities, and that change them in a call:
``ROPE_INIT_FUNCTIONS``, which every rotary embedding of the caller's models looks its
frequencies up in, an entry's function in place, or a public function of the module. Each
call first checks that the utilities are as the module found them (it raises otherwise:
only if the gate puts them back between calls does the next call succeed), then changes
them; each must fail ``global-state`` (alone) naming what it changed. Adding a rope type,
or reaching transformers' lazily imported submodules, changes nothing: those conform, as
does ``rope_table``, run after the others. See ``meta_tests/hostile/test_patched_functions.py``.
"""

from __future__ import annotations

import transformers
from hostile_tables import vaswani
from transformers import modeling_rope_utils

INIT_FUNCTIONS = dict(modeling_rope_utils.ROPE_INIT_FUNCTIONS)
LINEAR = INIT_FUNCTIONS["linear"]
LINEAR_PARTS = (LINEAR.__code__, LINEAR.__defaults__)
VALIDATION = modeling_rope_utils.rope_config_validation


def _table_if_unchanged(num_positions, dim):
    """The vaswani table, once the rope utilities are as this module found them."""
    table = modeling_rope_utils.ROPE_INIT_FUNCTIONS
    if (any(table.get(name) is not function for name, function in INIT_FUNCTIONS.items())
            or (LINEAR.__code__, LINEAR.__defaults__) != LINEAR_PARTS
            or modeling_rope_utils.rope_config_validation is not VALIDATION):
        raise RuntimeError("transformers' rope utilities were left changed by an earlier call")
    return vaswani(num_positions, dim)


def rebinds_a_rope_init_function(num_positions, dim):
    """Makes the linear rope type compute the dynamic one's frequencies."""
    table = _table_if_unchanged(num_positions, dim)
    modeling_rope_utils.ROPE_INIT_FUNCTIONS["linear"] = INIT_FUNCTIONS["dynamic"]
    return table


def removes_a_rope_type(num_positions, dim):
    """Removes the yarn rope type: a later yarn model fails to build."""
    table = _table_if_unchanged(num_positions, dim)
    del modeling_rope_utils.ROPE_INIT_FUNCTIONS["yarn"]
    return table


def changes_a_rope_init_function_in_place(num_positions, dim):
    """Gives the linear rope type's function the dynamic one's code, the entry kept."""
    table = _table_if_unchanged(num_positions, dim)
    LINEAR.__code__ = INIT_FUNCTIONS["dynamic"].__code__
    return table


def rebinds_rope_config_validation(num_positions, dim):
    """Rebinds the module's public ``rope_config_validation`` to one that accepts anything."""
    table = _table_if_unchanged(num_positions, dim)
    modeling_rope_utils.rope_config_validation = lambda *arguments, **options: None
    return table


def adds_a_rope_type(num_positions, dim):
    """Adds a rope type of its own, replacing none. Verdict: conforms."""
    modeling_rope_utils.ROPE_INIT_FUNCTIONS["posenc_hostile"] = LINEAR
    return _table_if_unchanged(num_positions, dim)


def reaches_a_lazy_submodule(num_positions, dim):
    """Reaches ``transformers.models.llama`` through transformers' lazy module, which imports
    it and binds it on first access. Verdict: conforms."""
    assert transformers.models.llama.LlamaConfig.model_type == "llama"
    return _table_if_unchanged(num_positions, dim)


def rope_table(num_positions, dim):
    """A correct table, computed once the rope utilities are as this module found them, run
    after the targets that change them. Verdict: conforms."""
    return _table_if_unchanged(num_positions, dim)
