"""``identify`` agrees with ``check``: on correct corpus entries it names the declared member and
check accepts it; on a wrong entry whose caches are another member, it names that member, the
one the hint declares."""

from __future__ import annotations

import pytest

from meta_tests.corpus.mrope_registry import MROPE_ENTRIES
from posenc_spec.families.mrope.identify import Identification, member_of
from posenc_spec.families.mrope.keys import NAMES
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.options import run_options

CALL_KEYS = ("signature", "init", "method", "kwargs", "head_dim", "mrope_patch", "model_config")
# entry -> the member identify names (None: the entry's own declared convention)
EXPECTED = {"qwen3_vl_interleaved": None, "flux_complex": None, "hunyuan_dit_2d": None,
            "theta_ten_thousand": "axes_theta", "qwen3_contiguous": "mrope_interleaved"}


def _identify(entry):
    table = entry.config_table()
    flags = {NAMES.aliases.get(key, key): value for key, value in table.items()
             if NAMES.aliases.get(key, key) in CALL_KEYS}
    call = declare({"target": table["target"], "api": table["api"]})
    return Identification(call, flags).run(run_options(jobs=1))


@pytest.mark.parametrize("entry", [entry for entry in MROPE_ENTRIES if entry.id in EXPECTED],
                         ids=lambda entry: entry.id)
def test_identify_names_what_check_accepts(entry):
    """The member identify names is one check accepts on the whole grid: the declared one for a correct
    entry, the member whose field the slip changed for a wrong one."""
    answer = _identify(entry)
    declared = entry.declaration().spec.convention
    assert answer["check"] == "conforms", answer["message"]
    member = member_of(answer["convention"])
    changed = EXPECTED[entry.id]
    if changed is None:
        assert member == declared, answer["message"]
    else:
        differs = {key for key, value in member.as_dict().items() if declared.as_dict()[key] != value}
        assert differs == {changed}, answer["message"]
