"""What the ALiBi gate tests share: small targets written to a file, as a user's module is."""

from __future__ import annotations

import pytest

from spec_tests.families.alibi.user_targets import TARGETS


@pytest.fixture
def impl(tmp_path, monkeypatch):
    """The targets as ``impl.py`` in a folder of its own, the working directory."""
    (tmp_path / "impl.py").write_text(TARGETS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path
