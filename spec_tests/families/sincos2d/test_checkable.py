"""No vacuous passes for 2-D sincos: a declaration whose angles float32 cannot resolve at
any call of its grid (a huge offset or scale) is refused before a target runs, since a table
whose every angle is 0 would pass it; every preset, and the options real code uses, stay
checkable."""

from __future__ import annotations

import pytest

from posenc_spec.families.sincos2d.conventions import PRESETS
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError

TARGET = {"target": "pkg.mod:posemb", "api": "sincos2d"}


@pytest.mark.parametrize("options", [{"offset": 1e10}, {"scale": 1e300}, {"scale": 1e-30}])
def test_options_that_leave_no_angle_resolved_are_refused(options):
    """Angles beyond what float32 resolves, or all near 0: one usage error, one line."""
    declaration = declare({**TARGET, **options})
    with pytest.raises(UsageError, match="every angle is 0") as refused:
        declaration.family.assert_checkable(declaration)
    assert len(str(refused.value).splitlines()) == 1


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_checkable(name):
    """Each named convention's grid tells its tables from ones whose every angle is 0."""
    declaration = declare({**TARGET, "convention": name})
    declaration.family.assert_checkable(declaration)


@pytest.mark.parametrize("options", [{"offset": 1.0}, {"scale": 0.5}, {"max_positions": 2}])
def test_ordinary_options_are_checkable(options):
    """Offsets, scales and caps real code uses leave the grid something to check."""
    declaration = declare({**TARGET, **options})
    declaration.family.assert_checkable(declaration)
