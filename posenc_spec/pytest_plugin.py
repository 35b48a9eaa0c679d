"""pytest options that point the gate's tests at an implementation::

    pytest spec_tests --posenc-target mypkg.encoding:table --posenc-convention vaswani
    pytest spec_tests --posenc-config gate.toml

Each check of the gate (``posenc-spec check``) becomes one test,
``spec_tests/test_gate_target.py::test_gate_check[formula[4096x1024]]`` and so on, judged by
the same engine (:func:`posenc_spec.gate.check_many`). Without ``--posenc-target`` or
``--posenc-config`` those tests skip, saying how to enable them.

The options mirror the command line: ``--posenc-convention``, ``--posenc-layout``,
``--posenc-first``, ``--posenc-freq-shift``, ``--posenc-base``, ``--posenc-offset``,
``--posenc-scale``, ``--posenc-odd``, ``--posenc-api``, ``--posenc-t-max``,
``--posenc-max-positions``, ``--posenc-xfails``, ``--posenc-timeout``. A check listed in
the xfails file is reported as xfail when it fails.

The plugin is registered by this repository's ``conftest.py``; elsewhere load it with
``-p posenc_spec.pytest_plugin``.
"""

from __future__ import annotations

import os

import pytest

from posenc_spec.conventions import FUNCTIONS, LAYOUTS, PRESETS

ENABLE_HINT = ("no implementation to gate: run `pytest spec_tests --posenc-target package.module:fn "
               "--posenc-convention NAME` (or --posenc-config FILE; outside this repository add "
               "-p posenc_spec.pytest_plugin)")

# option destination -> config key
_OPTIONS = {
    "posenc_convention": "convention",
    "posenc_layout": "layout",
    "posenc_first": "first",
    "posenc_freq_shift": "freq_shift",
    "posenc_base": "base",
    "posenc_offset": "offset",
    "posenc_scale": "scale",
    "posenc_odd": "odd",
    "posenc_api": "api",
    "posenc_t_max": "t_max",
    "posenc_max_positions": "max_positions",
    "posenc_timeout": "timeout",
}


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        return float(text)


def pytest_addoption(parser) -> None:
    group = parser.getgroup("posenc-spec", "posenc-spec gate: check an implementation against a convention")
    group.addoption("--posenc-target", metavar="TARGET", default=None,
                    help="package.module:attr or path/to/file.py:attr to gate")
    group.addoption("--posenc-config", metavar="FILE", default=None,
                    help="a TOML file of [[targets]] (or a pyproject.toml with [tool.posenc-spec]) to gate")
    group.addoption("--posenc-convention", metavar="NAME", choices=list(PRESETS), default=None,
                    help=f"declared preset: {', '.join(PRESETS)} (default vaswani)")
    group.addoption("--posenc-layout", choices=LAYOUTS, default=None)
    group.addoption("--posenc-first", choices=FUNCTIONS, default=None)
    group.addoption("--posenc-freq-shift", type=int, choices=(0, 1), default=None)
    group.addoption("--posenc-base", type=_number, default=None)
    group.addoption("--posenc-offset", type=_number, default=None)
    group.addoption("--posenc-scale", type=_number, default=None)
    group.addoption("--posenc-odd", choices=("error", "zero-pad", "ceil", "skip"), default=None)
    group.addoption("--posenc-api", choices=("table", "timesteps"), default=None)
    group.addoption("--posenc-t-max", type=float, default=None)
    group.addoption("--posenc-max-positions", type=int, default=None)
    group.addoption("--posenc-xfails", metavar="FILE", default=None, help="known deviations, one check id per line")
    group.addoption("--posenc-timeout", type=float, default=None, help="seconds per import and per call")


def gate_specs(config) -> list:
    """The GateSpecs the options name; empty when none is named (or the plugin is not loaded)."""
    from posenc_spec.gate.config import ConfigError, make_spec, read_config

    target = config.getoption("posenc_target", default=None)
    config_file = config.getoption("posenc_config", default=None)
    if target is None and config_file is None:
        return []
    flags = {key: config.getoption(dest, default=None) for dest, key in _OPTIONS.items()}
    xfails = config.getoption("posenc_xfails", default=None)
    try:
        if target is not None and config_file is not None:
            raise ConfigError("give either --posenc-target or --posenc-config, not both")
        if target is not None:
            return [make_spec({"target": target, "xfails": xfails and os.path.abspath(xfails), **flags})]
        if xfails is not None:
            raise ConfigError("--posenc-xfails goes with --posenc-target; in a config file use an `xfails` key")
        return read_config(config_file, flags)
    except ValueError as error:
        raise pytest.UsageError(f"posenc-spec gate: {error}") from None


def check_ids(specs) -> list[tuple[int, str]]:
    """``(spec index, check id)`` for every check the specs' reports will hold."""
    return [(index, name) for index, spec in enumerate(specs) for name in spec.plan()]


def param_id(specs, index: int, name: str) -> str:
    """The check id, prefixed by ``target@convention::`` when several targets run."""
    spec = specs[index]
    return name if len(specs) == 1 else f"{spec.target}@{spec.convention.name()}::{name}"
