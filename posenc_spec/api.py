"""posenc-spec from Python: gate the function you have, from a notebook, a script or a test.

::

    import posenc_spec

    report = posenc_spec.check(my_table, convention="vaswani", max_positions=512)
    report.conforms            # True or False; bool(report) is the same
    print(report)              # what ``posenc-spec check`` prints for this target
    report.failures()          # the failed checks: .name, .status, .message, .worst
    report.plot()              # the diagnostic figures of a failing table (matplotlib)
    report.hints               # the slips its values show: .slips, .text, .keys (keyword -> value)

``target`` is an import path (``"pkg.mod:fn"``, ``"path/file.py:fn"``, relative to the
working directory), run exactly as ``posenc-spec check TARGET`` runs it, or a callable
object: a function defined in a notebook cell or in a script's ``__main__``, a closure, a
lambda, a bound method, a ``functools.partial``, an instance with ``__call__``. A callable
runs in the gate's sealed child too, forked from the calling process
(:mod:`posenc_spec.gate.callables` says what that child sees and what the limits count);
a JAX callable after this process started JAX's backend (which a fork cannot use) runs by
its import path in a fresh interpreter, and one that has none is refused, saying what to do
(:func:`~posenc_spec.gate.callables.past_started_jax`).

The keyword arguments are the keys of a ``[tool.posenc-spec]`` target
(:mod:`posenc_spec.gate.declaration`: ``convention``, ``api``, ``odd``, ``max_positions``,
``timeout``, ``xfails``, ``against``, ``base``, ``rope_parameters`` as a dict, ...;
former names of keys too, each with a note once: docs/keys.md)
and the run's options (:data:`RUN_KEYS`: ``max_memory``, ``max_processes``,
``max_file_size``, ``preload``, ``fail_fast``, ``jobs``). Numbers are numbers: a number
given as text (``max_positions="2048"``) is refused, as in a TOML file.

Errors: a ``target`` that is neither a string nor callable raises :class:`TypeError`; a key
that does not exist, a value of the wrong type or out of range, a missing file, or a
preload that cannot be imported raises :class:`~posenc_spec.gate.errors.UsageError` (a
:class:`ValueError`) whose message is the one line ``posenc-spec check`` prints for it, raised
from :func:`check` itself. What the target does (raise, exit, crash, hang, fail to import)
is never an exception here: it is the report's verdict.

The Python API leaves the process it runs in as it is (the command line makes its own
process undumpable; a notebook kernel keeps its settings).
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io

from .gate.errors import UsageError
from .gate.keys import DECLARATION_KEYS

RUN_KEYS = ("jobs", "max_memory", "max_processes", "max_file_size", "preload", "fail_fast")
DECLARED_KEYS = (*DECLARATION_KEYS, "xfails")
_VERDICTS = {"conforms": "conforms", "does-not-conform": "does not conform", "error": "cannot be imported"}


def check(target, /, **keys) -> Report:
    """Check ``target`` against what ``keys`` declare; the :class:`Report` (see the module
    docstring). Import-path targets get a run of their own, as on the command line;
    a callable is run in a child forked from this process."""
    if not isinstance(target, str) and not callable(target):
        raise TypeError(f"target must be an import path such as 'pkg.mod:fn' or 'path/file.py:fn', or a callable; "
                        f"got {type(target).__name__}")
    try:
        return _check(target, keys)
    except UsageError as error:  # raised here, in one line, not from deep inside the gate
        raise UsageError(str(error)) from None


def _check(target, keys: dict) -> Report:
    from .gate import callables
    from .gate.declaration import declare, refuse_quoted_numbers, refuse_unknown_keys
    from .gate.engine import check_many

    refuse_unknown_keys(keys, (*DECLARED_KEYS, *RUN_KEYS))
    declared = {key: value for key, value in keys.items() if key not in RUN_KEYS}
    refuse_quoted_numbers(declared)
    options = _run_options({key: value for key, value in keys.items() if key in RUN_KEYS})
    path = None if isinstance(target, str) else callables.past_started_jax(target, declared.get("framework"),
                                                                            declared.get("keras_backend"))
    if isinstance(target, str) or path is not None:
        declaration = dataclasses.replace(declare({"target": path or target, **declared}), spelling="python")
        report = check_many([declaration], options, keep_table=True)[0]
        if path is not None:
            report.warnings.append(f"{path} ran in a fresh interpreter, by its import path: this process has "
                                   "started JAX's backend, which a process forked from it cannot use")
        return Report(report)
    with callables.registered(target) as registered:
        name = callables.label(target)
        declaration = dataclasses.replace(declare({"target": registered, **declared}), written=name,
                                          spelling="python")
        if declaration.formula:
            declaration.family.assert_checkable(declaration)  # before anything is forked
        with callables.caller_template(options.preload) as root:
            report = check_many([declaration], options, keep_table=True, root=root)[0]
    return Report(_renamed(report, registered, name))


def _run_options(given: dict):
    from .gate.options import run_options
    from .gate.values import fail

    for key in ("jobs", "max_processes"):
        if isinstance(given.get(key), str):
            fail(key, "a number", given[key])
    fail_fast = given.get("fail_fast", False)
    if not isinstance(fail_fast, bool):
        fail("fail_fast", "True or False", fail_fast)
    return run_options(given.get("jobs", 1), None, given.get("max_memory"), given.get("max_processes"),
                       preload=given.get("preload"), fail_fast=fail_fast, max_file_size=given.get("max_file_size"),
                       flags=False)


def _renamed(report, registered: str, name: str):
    """The report with the private name a callable ran under replaced by its own name."""
    report.checks = [dataclasses.replace(check, message=f"{name}, in a child forked from this process")
                     if check.name == "import" and check.status == "passed"
                     else dataclasses.replace(check, message=check.message.replace(registered, name))
                     for check in report.checks]
    report.warnings = [warning.replace(registered, name) for warning in report.warnings]
    return report


@dataclasses.dataclass(frozen=True)
class Hint:
    """The slip a failing target's values show: ``slips`` its ids (several when the values
    cannot tell them apart; docs/checks.md lists them), ``text`` what it says, written with
    :func:`check`'s keywords, and ``keys`` the keyword arguments (name -> value) that declare
    what the code computes, for when it was meant (empty where no key can: the advice,
    applied, conforms, and a hint never advises a value the gate hands the target)."""

    slips: tuple[str, ...]
    text: str
    keys: dict = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


class Report:
    """The verdict on one target, as ``posenc-spec check`` gives it.

    ``verdict`` is ``"conforms"``, ``"does-not-conform"`` or ``"error"`` (the target could not
    be imported); ``conforms`` (and ``bool(report)``) whether it conforms; ``checks`` every
    check of the plan in order (each a :class:`~posenc_spec.results.CheckResult`: ``name``,
    ``status``, ``message``, ``worst``); :meth:`failures` the failed ones; ``worst`` the
    worst element of each failed check that has one (index, actual, expected, error,
    tolerance); ``hints`` the slips its values show (each a :class:`Hint`: the slip ids, the
    text in this API's keywords, the keys to pass to declare what the code computes);
    ``advice`` the cause common to many failed checks with its likely fix;
    ``nearest`` the member of the family the target computes when a formula check failed;
    ``warnings``; ``where`` the file and line of the target's function. ``str(report)`` is
    the command's text (every line printable: control characters escaped), :meth:`text`
    with ``verbose=True`` lists every check, and a notebook shows it as HTML (escaped).
    ``gate_report`` is the gate's own :class:`~posenc_spec.gate.report.GateReport`.
    """

    def __init__(self, gate_report):
        self.gate_report = gate_report

    @property
    def name(self) -> str:
        """The target as written, or a callable's ``module:qualname``."""
        return self.gate_report.declaration.name

    @property
    def verdict(self) -> str:
        return self.gate_report.status

    @property
    def conforms(self) -> bool:
        return self.gate_report.conforms

    def __bool__(self) -> bool:
        return self.conforms

    @property
    def checks(self) -> list:
        return list(self.gate_report.checks)

    def failures(self) -> list:
        return self.gate_report.failures()

    def result(self, check_id: str):
        """The check named ``check_id`` (``formula[50x8]``); :class:`KeyError` if the plan has none."""
        return self.gate_report.result(check_id)

    @property
    def worst(self) -> dict:
        return {check.name: check.worst for check in self.failures() if check.worst is not None}

    @property
    def hints(self) -> list[Hint]:
        return [Hint(hint.slips, hint.text("python"), dict(hint.declare)) for hint in self.gate_report.hints]

    @property
    def advice(self) -> list[str]:
        return list(self.gate_report.advice)

    @property
    def nearest(self) -> str | None:
        nearest = self.gate_report.nearest
        return None if nearest is None else nearest["message"]

    @property
    def warnings(self) -> list[str]:
        return list(self.gate_report.warnings)

    @property
    def where(self) -> tuple | None:
        return self.gate_report.where

    def text(self, verbose: bool = False) -> str:
        """What ``posenc-spec check`` prints for this target (``-v`` with ``verbose``)."""
        from .gate.output.destination import emit
        from .gate.output.text import summary_lines

        buffer = io.StringIO()
        emit(summary_lines(self.gate_report, verbose), buffer)
        return buffer.getvalue().rstrip("\n")

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        counts = self.gate_report.counts()
        return (f"<posenc_spec.Report {self.text().splitlines()[0]!s}: {_VERDICTS[self.verdict]}, "
                f"{len(self.checks)} checks, {counts['failed']} failed>")

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.conforms else "#cf222e"
        verdict = html.escape(_VERDICTS[self.verdict])
        return (f'<div class="posenc-spec-report"><strong style="color: {colour}">{verdict}</strong>'
                f"<pre>{html.escape(self.text())}</pre></div>")

    def plot(self) -> Figures:
        """The diagnostic figures its family draws of the table the gate kept (a failing
        sinusoidal table: the size whose formula check failed worst, else the largest size
        with every property check; ``heatmap``, ``row_profiles``, ``similarity`` and
        ``difference``, each element's error as a multiple of its tolerance), as matplotlib
        figures, shown inline in a notebook, saved nowhere. :class:`ValueError` when there
        is no such table: the target conforms, could not be imported, returned no table, or
        its family keeps none (``posenc-spec plot TARGET --api API`` draws those)."""
        if self.gate_report.kept is None:
            raise ValueError(f"{self.name}: no table to draw: {self._no_table()}")
        from .figures.gate_plots import report_figures

        return Figures(report_figures(self.gate_report))

    def _no_table(self) -> str:
        if self.conforms:
            return "it conforms"
        if self.verdict == "error":
            return "it could not be imported"
        declaration = self.gate_report.declaration
        if not declaration.family.report_figures:
            return f"the {declaration.api} API is drawn by posenc-spec plot TARGET --api {declaration.api}"
        return "no call returned a table"


class Figures(dict):
    """Figures by name (a dict of matplotlib figures) that a notebook shows as images."""

    def _repr_html_(self) -> str:
        from .figures.style import png_bytes

        return "".join(f"<figure><img alt=\"{html.escape(name)}\" src=\"data:image/png;base64,"
                       f"{base64.b64encode(png_bytes(figure)).decode('ascii')}\"/>"
                       f"<figcaption>{html.escape(name)}</figcaption></figure>" for name, figure in self.items())
