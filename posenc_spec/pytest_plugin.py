"""The pytest plugin: the gate's checks as pytest items, in any repository.

Installed with posenc-spec (the ``pytest11`` entry point), it does nothing unless a
``--posenc*`` option is given::

    pytest --posenc-target mypkg.encoding:table --posenc-convention vaswani
    pytest --posenc-config gate.toml
    pytest --posenc                      # the targets of the nearest [tool.posenc-spec]

Each target becomes one item (``posenc::TARGET``), judged by the gate's engine
(:func:`posenc_spec.gate.engine.check_many`); its failure is what ``posenc-spec check``
prints for the target: the verdict, the hint (the slip its tables show, its keys spelled as
the target was declared: ``--posenc-*`` flags for ``--posenc-target``, TOML keys for a
file), one line per failing check kind with its worst call; ``-v`` lists every check. A
target that conforms passes (its known deviations, ``--posenc-xfails``, included), and each
note (a finding on inputs no use produces) is a warning. With ``--posenc-items check`` each
check id of each target is one item instead (``posenc::TARGET::CHECK``, one gate run per
target, made when its first item runs): its failure is the check's one-line reason and
the target's hints, a known deviation an xfail, a check that could not run a skip. Every
option of ``posenc-spec check`` that declares a target has a ``--posenc-*`` twin. Under
pytest-xdist each item carries an ``xdist_group`` mark naming its target, so ``--dist
loadgroup`` keeps a target's items (and its one gate run) on one worker; without
pytest-xdist the plugin registers that mark itself (``--strict-markers`` refuses an unknown
mark). The session's empty node id is left out of each item's, so JUnit XML names a check
item's class ``posenc.TARGET``.

Target names, reasons and usage errors come from targets and the user's files, and pytest
prints them as they are given (on the terminal, in its JUnit XML): each is handed to pytest
as :func:`~posenc_spec.gate.output.destination.shown_line` shows it, so no control
character, escape sequence, line break or bidi override reaches the terminal, and no line
reads as a CI workflow command.
"""

from __future__ import annotations

import argparse
import warnings

import pytest

from posenc_spec.gate.keys import ALIASES, DECLARATION_KEYS, REPEATED, flag, plugin_flag
from posenc_spec.gate.output.destination import shown_line

# option destination -> declaration key (a key's former names too: read as the key, with a note)
_KEYS = {f"posenc_{key}": key for key in (*DECLARATION_KEYS, *ALIASES)}
ITEMS = ("target", "check")  # --posenc-items: one item per target, or per check id of each target


def pytest_addoption(parser) -> None:
    group = parser.getgroup("posenc-spec", "posenc-spec gate: check an implementation against a convention")
    group.addoption("--posenc", action="store_true", default=False,
                    help="gate the targets of the nearest pyproject.toml's [tool.posenc-spec]")
    group.addoption("--posenc-target", metavar="TARGET", default=None,
                    help="package.module:attr or path/to/file.py:attr to gate")
    group.addoption("--posenc-config", metavar="FILE", default=None,
                    help="a TOML file of [[targets]] (or a pyproject.toml with [tool.posenc-spec]) to gate")
    for dest, key in _KEYS.items():
        if key == "strict":  # a switch, as on the command line
            group.addoption(plugin_flag(key), dest=dest, action="store_const", const=True, default=None,
                            help="as posenc-spec check --strict")
            continue
        group.addoption(plugin_flag(key), dest=dest, default=None, metavar="VALUE",
                        action="append" if key in REPEATED else "store",
                        help=argparse.SUPPRESS if key in ALIASES else f"as posenc-spec check {flag(key)}")
    group.addoption("--posenc-xfails", metavar="FILE", default=None, help="known deviations, one check id per line")
    group.addoption("--posenc-max-memory", metavar="SIZE", default=None, help="as posenc-spec check --max-memory")
    group.addoption("--posenc-max-processes", metavar="N", default=None, help="as posenc-spec check --max-processes")
    group.addoption("--posenc-max-file-size", metavar="SIZE", default=None,
                    help="as posenc-spec check --max-file-size")
    group.addoption("--posenc-preload", metavar="MODULE", action="append", default=None,
                    help="as posenc-spec check --preload")
    group.addoption("--posenc-fail-fast", action="store_true", default=False,
                    help="as posenc-spec check --fail-fast")
    group.addoption("--posenc-items", choices=ITEMS, default="target",
                    help="one item per target (default: its failure is the target's summary) or per check id")


def pytest_configure(config) -> None:
    if not config.pluginmanager.hasplugin("xdist"):  # pytest-xdist registers its own mark
        config.addinivalue_line("markers", "xdist_group(name): the pytest-xdist group of a posenc-spec target's checks")


def declarations(config) -> list:
    """The declarations the options name (empty when no ``--posenc*`` option is given)."""
    from posenc_spec.gate.config import Front, select_declarations
    from posenc_spec.gate.errors import UsageError

    target = config.getoption("posenc_target", default=None)
    config_file = config.getoption("posenc_config", default=None)
    nearest = config.getoption("posenc", default=False)
    if target is None and config_file is None and not nearest:
        return []
    flags = {key: config.getoption(dest, default=None) for dest, key in _KEYS.items()}
    front = Front("--posenc-target", "--posenc-config", "--posenc-xfails",
                  others="--posenc-config FILE or --posenc-target TARGET", where="--posenc: ", flags=False,
                  spelling="plugin")
    try:
        if sum(map(bool, (target, config_file, nearest))) > 1:
            raise UsageError("give one of --posenc-target, --posenc-config and --posenc")
        return select_declarations(front, target, config_file, config.getoption("posenc_xfails", default=None),
                                   flags, base_dir=config.invocation_params.dir)[0]
    except UsageError as error:
        raise pytest.UsageError(shown_line(f"posenc-spec: {error}")) from None


def run_options_of(config):
    """The run options the ``--posenc-max-*`` and ``--posenc-preload`` options give, validated
    (the preloaded modules imported) before any item runs."""
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.options import run_options
    from posenc_spec.gate.sandbox import check_preload

    try:
        options = run_options(1, None, config.getoption("posenc_max_memory"), config.getoption("posenc_max_processes"),
                              preload=config.getoption("posenc_preload"),
                              max_file_size=config.getoption("posenc_max_file_size"),
                              fail_fast=config.getoption("posenc_fail_fast"))
        check_preload(options.preload)
    except UsageError as error:
        raise pytest.UsageError(shown_line(f"posenc-spec: {error}")) from None
    return options


class GateFailure(Exception):
    """A target that does not conform, or a failed check: the text is the whole failure report."""


class GateNote(pytest.PytestWarning):
    """A ``noted`` check: a finding on inputs no use produces, not a failure (``strict``
    makes it one)."""


class _GateItem(pytest.Item):
    """An item judged by one gate run of its target (shared by the target's items)."""

    def __init__(self, *, declaration, runs: dict, options, **kwargs):
        super().__init__(**kwargs)
        self.declaration, self.runs, self.options = declaration, runs, options
        self.add_marker(pytest.mark.xdist_group(shown_line(declaration.name)))  # xdist appends it to the id

    def _report(self):
        key = id(self.declaration)
        if key not in self.runs:
            from posenc_spec.gate.engine import check_many

            self.runs[key] = check_many([self.declaration], self.options)[0]
        return self.runs[key]

    def _said(self, check) -> str:
        return shown_line(f"{self.declaration.name} under {self.declaration.convention_name()}: {check.name}: "
                          f"{check.message}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GateFailure):
            said = str(excinfo.value)
            # --tb=line: one line per failure (the verdict, or the check's reason)
            return said.partition("\n")[0] if self.config.getoption("tbstyle", "auto") == "line" else said
        return super().repr_failure(excinfo, style)


class TargetItem(_GateItem):
    """One target: passes when it conforms; its failure is the target's summary, as
    ``posenc-spec check`` prints it (every check with ``-v``)."""

    def runtest(self) -> None:
        from posenc_spec.gate.output.text import declared, summary_lines, verdict

        report = self._report()
        if report.status != "conforms":
            _, *rest = summary_lines(report, self.config.getoption("verbose") > 0)
            # The verdict first: pytest's short summary (-r) shows a failure's first line, and
            # the section's title already names the target.
            first = f"{verdict(report)}  {declared(report)}"
            raise GateFailure("\n".join(shown_line(line) for line in (first, *rest)))
        for check in report.checks:
            if check.status == "noted":  # passes, and the warnings summary says it
                warnings.warn(GateNote(self._said(check)), stacklevel=1)

    def reportinfo(self):
        return shown_line(self.declaration.target.rpartition(":")[0]), None, shown_line(self.declaration.name)


class CheckItem(_GateItem):
    """One check of one target (``--posenc-items check``)."""

    def __init__(self, *, check_id: str, **kwargs):
        super().__init__(**kwargs)
        self.check_id = check_id

    def runtest(self) -> None:
        report = self._report()
        result = report.result(self.check_id)
        said = self._said(result)
        if result.status == "xfailed":
            pytest.xfail(said)
        if result.status == "noted":  # passes, and the warnings summary says it
            warnings.warn(GateNote(said), stacklevel=1)
        if result.status == "skipped":
            pytest.skip(said)
        if result.status == "failed":
            spelled = report.declaration.spelling_for
            hinted = [shown_line(f"  hint: {hint.text(spelled(dict(hint.declare)))}") for hint in report.hints]
            raise GateFailure("\n".join([said, *hinted]))

    def reportinfo(self):
        return shown_line(self.declaration.target.rpartition(":")[0]), None, \
            shown_line(f"{self.declaration.name}::{self.check_id}")


def pytest_collection_modifyitems(session, config, items) -> None:
    from posenc_spec.gate.engine import plan

    runs: dict = {}
    found = declarations(config)
    options = run_options_of(config) if found else None
    per_check = config.getoption("posenc_items", default="target") == "check"
    for declaration in found:
        prefix = declaration.name if len(found) == 1 else f"{declaration.name}@{declaration.convention_name()}"
        if not per_check:
            name = shown_line(f"posenc::{prefix}")
            items.append(TargetItem.from_parent(session, name=name, nodeid=name, declaration=declaration, runs=runs,
                                                options=options))
            continue
        for check_id in plan(declaration):
            name = shown_line(f"posenc::{prefix}::{check_id}")
            # The node id without the session's empty one before it: JUnit's class is then
            # posenc.TARGET, not .posenc.TARGET.
            items.append(CheckItem.from_parent(session, name=name, nodeid=name, declaration=declaration,
                                              check_id=check_id, runs=runs, options=options))
