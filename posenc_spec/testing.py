"""Assertions for a user's own tests: the gate's verdict as a test's.

::

    from posenc_spec.testing import assert_conforms

    def test_my_encoding():
        assert_conforms(my_table, convention="vaswani", max_positions=512)

:func:`assert_conforms` takes what :func:`posenc_spec.check` takes.
"""

from __future__ import annotations

from .api import Report, check


def assert_conforms(target, /, **keys) -> Report:
    """The :class:`~posenc_spec.api.Report` on ``target`` when it conforms; else
    :class:`AssertionError` whose message is what ``posenc-spec check`` prints for it: the
    target and its declaration, the failed checks with their reasons and worst elements, the
    advice, the nearest convention and the verdict. Bad keys raise as :func:`posenc_spec.check` does."""
    __tracebackhide__ = True  # pytest shows the failure at the caller's line
    report = check(target, **keys)
    if not report.conforms:
        raise AssertionError(report.text())
    return report
