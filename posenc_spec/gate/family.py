"""What the gate's core asks of an encoding family, and of a family's declaration.

The core (declarations, engine, runner, child, report, outputs, regression, CLI, plugin)
knows no family by name: it finds the family of a declaration's ``api`` in the registry
(:mod:`posenc_spec.registry`) and asks it through :class:`Family`. A family is one
package, ``posenc_spec/families/<name>/``, holding everything one encoding needs: its
conventions, oracle, tolerance, properties, grid, judge, ``identify`` fit and hints, and
what its figures need. Two modules of it are the core's way in:

- ``keys.py`` (imports nothing): :class:`FamilyKeys`, the names a declaration of the family
  is made of, so that the CLI and the plugin name their options without importing NumPy;
- ``family.py``: ``FAMILY``, an instance of a :class:`Family` subclass.

A family's validated declaration is its *spec* (:class:`Spec`): the declared convention
and how the target's API is shaped. The core keeps it as ``Declaration.spec`` and hands
it back to the family; it reads only :class:`Spec`'s methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# The core's types a family is handed, named here without importing them (each of their
# modules imports this one): a declaration (posenc_spec.gate.declaration.Declaration), the
# engine's results (posenc_spec.gate.judge.Results), a report and the table it keeps
# (posenc_spec.gate.report.GateReport, KeptTable).
Declaration = Results = GateReport = KeptTable = Any


@dataclass(frozen=True)
class FamilyKeys:
    """The names a family's declarations are made of (no behaviour: ``keys.py`` imports nothing).

    ``apis``: the APIs the family owns, the first its default; ``keys``: the declaration
    keys it owns (each also a ``--`` flag, :data:`flags` for those spelled otherwise), in the
    order the docs list them; ``number_keys``: those whose values are numbers; ``repeated``:
    those given once per ``KEY=VALUE`` item on the command line; ``signatures``: per API, the
    signatures real code has (the first the canonical call); ``sizes``: per API, the
    ``"{name}"`` sizes ``init`` and ``kwargs`` may name; ``roles``: per API, what a call
    description (the ``call`` key, :mod:`posenc_spec.gate.described`) may hand the target, each
    documented on the family's page (an API without roles takes no description); ``presets``:
    per API, the signatures a call description says, each as one (``"fn(num_heads, key_length)"``,
    ``fn`` the target): the child makes their calls as it makes a description's, with ``init``,
    ``method`` and ``kwargs`` spliced in (the others keep the family's own adapters);
    ``noun``: what a declaration of the family declares (for "``--base`` declares a
    sinusoidal table"); ``config_key``: the key
    naming a model config ``init = "config"`` builds an object from; ``help``: per key, the
    flag's metavar and help; ``group``: the title of the flags' group in ``--help``;
    ``identify_keys``: the keys ``identify`` reads to call a target (how it is called and
    what it returns; the others it finds), with ``identify_help`` where their help differs;
    ``adapters``: the family's child-side ``adapters.py`` makes every call of its targets
    (``adapt(target, how, maker)``: the requests carry the canonical arguments, ints, floats
    and arrays; the adapter makes the call real code takes, with tuples, flags, dtypes or
    modules, in the sealed child); ``slips``: the slips its hints name, with their words;
    ``check_ids``: its check ids as ``check --help`` lists them (every id its plans hold);
    ``x_layouts``: the layouts the core's ``x_layout`` key takes for its calls, for ``--help``;
    ``builtin``: the family's reference implementations ``check --builtin`` checks, each a
    target table as ``[tool.posenc-spec]`` holds one; ``title`` and ``page``: what the
    README's table of families calls it and the document (``docs/...md#anchor``) it links;
    ``aliases``: the family's former names of its keys (old -> key), still read, each with a
    note (:func:`posenc_spec.gate.declaration.renamed`), and ``alias_values``: per former
    name, the values it took that the key spells otherwise (old value -> value).

    A key may belong to several families (``base``, ``convention``): one name per concept
    (docs/keys.md); each family validates it in its own terms."""

    name: str
    noun: str
    apis: tuple[str, ...]
    keys: tuple[str, ...]
    signatures: dict[str, tuple[str, ...]]
    sizes: dict[str, tuple[str, ...]]
    roles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    presets: dict[str, dict[str, str]] = field(default_factory=dict)
    number_keys: tuple[str, ...] = ()
    repeated: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)
    config_key: str | None = None
    help: dict[str, tuple[str, str]] = field(default_factory=dict)
    group: str = ""
    identify_keys: tuple[str, ...] = ()
    identify_help: dict[str, tuple[str, str]] = field(default_factory=dict)
    adapters: bool = False
    slips: dict[str, str] = field(default_factory=dict)
    check_ids: str = ""
    x_layouts: str = ""
    builtin: tuple[dict, ...] = ()
    title: str = ""
    page: str = ""
    aliases: dict[str, str] = field(default_factory=dict)
    alias_values: dict[str, dict[str, str]] = field(default_factory=dict)


class Spec(Protocol):
    """A family's validated declaration (frozen and hashable: turns and caches key on it)."""

    preset: str  # the name reports give the declared convention ("vaswani", "llama3")

    def describe(self) -> str:
        """The declared convention in a few words, for headers and messages."""

    def as_dict(self) -> dict:
        """The declared convention's fields for the JSON report (``odd`` among them)."""

    def header_parts(self) -> list[str]:
        """What the text report's header says about the convention."""

    def child_sizes(self) -> dict:
        """The declared sizes ``init`` and ``kwargs`` may name beyond the call's own."""

    def child_options(self) -> dict:
        """What the child's adapters read besides the signature (``x_layout``, ``config``)."""


@dataclass(frozen=True)
class Context:
    """What a family's :meth:`Family.declare` gets besides its keys: ``name(key)`` names a key
    in messages (its flag on the command line), ``where`` prefixes other messages,
    ``base_dir`` resolves relative paths, ``calling`` is the validated signature."""

    api: str
    name: Any
    where: str
    base_dir: Any
    max_positions: int | None
    t_max: float
    calling: Any


class FamilyJudge(Protocol):
    """Checks of one target, call after call, added to the engine's :class:`Results`."""

    def judge(self, probe, outcome) -> bool:
        """Judge one call; whether it returned a table the determinism repeat compares with."""

    def kept_table(self) -> KeptTable | None:
        """The table a picture of the target is drawn from (None: the family draws none here)."""


class Family:
    """One encoding family as the core sees it (see the module docstring). Subclasses set
    :attr:`names` and implement the methods that raise; the others have the defaults most
    families want."""

    names: FamilyKeys
    report_figures = False  # whether a report keeps a table its figures are drawn from (the API's report.figures)
    plot_sizes: tuple[str, ...] = ()  # the sizes its plot takes (--num-positions, --dim)
    # The checks of the values a target computes (check ids without their slot): when one
    # fails, the family is asked which slip the tables show (its hints).
    value_checks: tuple[str, ...] = ("formula",)

    # -- declaring -------------------------------------------------------------------------

    def declare(self, keys: dict, context: Context) -> Spec:
        """The validated :class:`Spec` of ``keys`` (the family's own keys; the core has
        refused other families' keys), each bad value a ``UsageError`` naming its key."""
        raise NotImplementedError

    def assert_checkable(self, declaration: Declaration) -> None:
        """A ``UsageError`` when the declared options leave nothing to check (no vacuous passes)."""

    def regression_bounds(self, declaration: Declaration):
        """``pieces(probe, outcome) -> [(values, bound), ...] | None``: what the ``against``
        check's tolerance rule compares a replayed call on, under the declared convention."""
        return lambda probe, outcome: None

    def kept_figures(self, report: GateReport) -> dict:
        """The matplotlib figures, by name, of the table ``report`` kept (``report.kept``:
        families with :attr:`report_figures` keep one)."""
        raise NotImplementedError

    def snapshot_columns(self, declared: dict):
        """How the family's tables are made of sines and cosines under ``declared`` (a
        declaration's JSON, ``{}`` for none): a :class:`posenc_spec.regression.predict.Columns`
        a regression snapshot predicts them from, or None (stored as they are)."""
        return None

    # -- calling ---------------------------------------------------------------------------

    def probes(self, declaration: Declaration) -> list:
        """The grid's calls of the declared convention."""
        raise NotImplementedError

    def sequence_probes(self, declaration: Declaration) -> list:
        """The call sequences real code plays, each starting clean."""
        return []

    def sequences_first(self, declaration: Declaration) -> bool:
        """Whether the sequences play before the grid (they must start clean)."""
        return False

    def plan_ids(self, calls: list) -> list[str]:
        """Every check id the calls' report holds, in order (``import`` first)."""
        raise NotImplementedError

    def prepare(self, declaration: Declaration) -> None:
        """Work worth doing while the root template boots (expected tables, caches)."""

    # -- judging ---------------------------------------------------------------------------

    def judge(self, declaration: Declaration, results: Results, keep_table: bool) -> FamilyJudge:
        raise NotImplementedError

    def nearest(self, declaration: Declaration, judged: FamilyJudge) -> dict | None:
        """Which member of the family the run's own values are, when a formula check failed
        (``{"name", "message", ...}``; None: the run cannot tell, ``identify`` may)."""
        return None

    def hints(self, declaration: Declaration, probes: list, outcomes: list, report: GateReport) -> list:
        """The slip the run's values show, when a check of the values failed."""
        return []

    def shape_hints(self, declaration: Declaration, probes: list, outcomes: list, report: GateReport) -> list:
        """The slip the run's arrays show when no check of the values ran: every table call
        returned an array, and not of the size asked (arguments swapped, a row too many)."""
        return []

    def handed_keys(self, declaration: Declaration) -> set[str]:
        """The declaration keys whose values the gate hands the target (a size ``init`` or
        ``kwargs`` names, an argument the family's calls pass): a hint never advises one, since
        declaring another value changes what the target computes along with what it is judged
        against. Families whose calls pass declared values add those."""
        return declaration.calling.sizes_handed()

    def likely_fix(self, reason: str, api: str) -> str:
        """The likely fix when every call failed with ``reason`` (empty: none known)."""
        return ""

    # -- figures ---------------------------------------------------------------------------

    def plot(self, declaration: Declaration, sizes: dict, options) -> Drawing:
        """``posenc-spec plot``'s pictures of the target under its declaration (``sizes``: the
        ``--num-positions`` and ``--dim`` given, each None when absent). Raises
        :class:`NothingToDraw` when no call gave values, ``UsageError`` for a size the family
        does not take or a target that does not import."""
        raise NothingToDraw(declaration.name, f"the {declaration.api} API has no pictures yet")

    # -- identify --------------------------------------------------------------------------

    def identify_request(self, flags: dict, call: Declaration) -> Identification:
        """What ``identify`` asks of a target of ``call.api``, from the family's
        ``identify_keys`` given (``flags``: key -> text), each validated (``UsageError``)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Drawing:
    """What ``plot`` writes and says: ``pictures`` (name -> ``(file name, figure)``), the
    summary ``title: verdict``, and notes under it."""

    title: str
    verdict: str
    pictures: dict
    notes: tuple[str, ...] = ()


class NothingToDraw(Exception):
    """No call gave values to draw (``what``: the target, maybe with a size; ``problem``: why)."""

    def __init__(self, what: str, problem: str):
        super().__init__(f"{what} gave nothing to draw: {problem}")
        self.what, self.problem = what, problem


class Identification(Protocol):
    """One ``identify`` request of a family: run it, and say its answer as declared keys."""

    def run(self, options) -> dict:
        """The answer: ``{"name", "convention", "max_error_ratio", "nearest", "message", ...}``
        (``convention`` None: no member fits); an ``IdentifyError`` when the target does not import."""

    def compared_keys(self, flags: dict) -> dict:
        """The declaration keys the answer is compared with, from the flags given."""

    def differences(self, answer: dict, declared: Declaration) -> list[str]:
        """How the answer's convention differs from ``declared``'s, in words (empty: as declared)."""

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        """The declaration keys of an answer, for ``init``'s entry (explicit where ``defaults``,
        the table's, would otherwise give the key another value)."""

    def slip(self, result: dict, compared: Declaration | None):
        """The known slip an answer that names a member is, of a nearby member (``compared``'s
        convention when there is a declaration, else the family's presets), as a
        :class:`~posenc_spec.gate.identify.hint.Hint` whose message names that member; None
        when it is none. Without a declaration, only a value no member takes on purpose
        (``base = 100`` for ``i/d``) is a slip; with one, any known slip of the declared member."""
