"""The gate's checks as tests, on the implementation named on the command line::

    pytest spec_tests --posenc-target mypkg.encoding:table --posenc-convention vaswani

One test per check id of ``posenc-spec check`` (see :mod:`posenc_spec.gate.grid`), all judged
by one engine run. Without ``--posenc-target`` (or ``--posenc-config``) they skip.
"""

from __future__ import annotations

import pytest

from posenc_spec import pytest_plugin
from posenc_spec.gate import check_many


def pytest_generate_tests(metafunc):
    if "gate_check" not in metafunc.fixturenames:
        return
    specs = pytest_plugin.gate_specs(metafunc.config)
    if not specs:
        skipped = pytest.param(None, marks=pytest.mark.skip(reason=pytest_plugin.ENABLE_HINT))
        metafunc.parametrize("gate_check", [skipped], ids=["no-target"])
        return
    pairs = pytest_plugin.check_ids(specs)
    metafunc.parametrize("gate_check", pairs, ids=[pytest_plugin.param_id(specs, *pair) for pair in pairs])


@pytest.fixture(scope="module")
def gate_reports(request):
    return check_many(pytest_plugin.gate_specs(request.config))


def test_gate_check(gate_check, gate_reports):
    """The target passes this check of the gate, or fails it as a declared known deviation."""
    index, name = gate_check
    report = gate_reports[index]
    result = report.result(name)
    if name in report.excused:
        pytest.xfail(f"{report.target}: {name}: {result.message}")
    assert result.passed, f"{report.target} under {report.convention.name()}: {name}: {result.message}"
