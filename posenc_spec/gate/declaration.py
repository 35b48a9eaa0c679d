"""What a user declares about a target, validated once, where it enters.

Every value a user can type reaches the gate through :func:`declare` (one target) or
:func:`~posenc_spec.gate.options.run_options` (the run), each checked by the validators of
:mod:`posenc_spec.gate.values`: from command-line flags, from ``[tool.posenc-spec]`` or a
``--config`` file, from the pytest plugin's options. Each bad value is a
:class:`UsageError` (exit status 2) with one line naming where it came from, the key and
the value; the message is the same whichever way it came in. The core's keys::

    target          "package.module:attr" or "path/to/file.py:attr" (required)
    api             one of the families' APIs (default "table"): it names the family
    t_max           largest timestep of an API that takes timesteps (default 1000; < 2**63)
    max_positions   cap on every length of the grid            (an int >= 1)
    xfails          a file of known deviations (:mod:`posenc_spec.gate.xfails`)
    timeout         seconds for the import and for each call   (default 60; at most MAX_TIMEOUT)
    against         a snapshot (``posenc-spec snapshot``): replay its calls and compare in ULPs
    max_ulp         the largest ULP distance ``against`` allows, wherever the snapshot was
                    recorded (without it: :func:`posenc_spec.gate.against.regression_rule`)
    signature, init, method, kwargs, x_layout
                    how the target is called (:mod:`posenc_spec.gate.signatures`)
    framework       numpy, torch, jax, tensorflow or keras: whose arrays the target takes
                    (default: what its module shows; :mod:`posenc_spec.gate.child.frameworks`)
    keras_backend   jax, tensorflow, torch or numpy: the backend a keras target runs on

The API's family (found through :mod:`posenc_spec.registry`) validates its own keys into the
declaration's ``spec``; a key of another family is refused, naming the APIs it goes with.
The names of every key live in :mod:`posenc_spec.gate.keys`; a concept several families
share has one name (docs/keys.md). A key's former name is read as the key, here and only
here (:func:`renamed`), with a one-line note the first time it is met (a
:class:`RenamedKey` warning: the command line prints it as ``posenc-spec: note: ...``).

With ``against`` and none of the family's keys, only the ``regression`` check runs: a
snapshot judges any encoding, also one no convention describes.
"""

from __future__ import annotations

import difflib
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from posenc_spec import registry

from .errors import UsageError
from .family import Context
from .keys import ALIASES, APIS, FAMILY_KEYS, KEYS, NUMBER_KEYS, RenamedKey, flag
from .loader import TargetError, absolute_target
from .signatures import Calling, calling
from .values import boolean, choice, fail, integer, number, plain
from .xfails import Xfails, read_xfails

if TYPE_CHECKING:
    from posenc_spec.regression import Snapshot

    from .family import Family, Spec

DEFAULT_TIMEOUT = 60.0
DEFAULT_T_MAX = 1000.0
# Timeouts are waited out in short steps and also bound the child's CPU time (an int of
# seconds for setrlimit); a million seconds (11.6 days) is beyond any useful wait.
MAX_TIMEOUT = 1e6
# Timesteps travel as int64 as well as float32: the largest one must be an int64.
MAX_T_MAX = float(2**63 - 2**10)
MAX_ULP = 2**62  # beyond any distance between two finite float64 values that matters


# -- a target's declaration -----------------------------------------------------------------


@dataclass(frozen=True)
class Declaration:
    """One target and what it is declared to compute.

    ``target`` is resolved (a file path made absolute); ``written`` is the target as the
    user wrote it and ``source`` where it was declared (for reports and annotations);
    ``search_path`` holds the folders put first on the target's import path (a config
    file's folder, so that its module targets import from wherever the gate runs).
    ``spec`` is what the API's family validated (:class:`~posenc_spec.gate.family.Spec`).
    ``against`` is a snapshot whose calls are replayed and compared (within ``max_ulp``
    when ``max_ulp_given``, else as :func:`~posenc_spec.gate.against.regression_rule` says);
    ``formula`` says whether the convention's checks run (False: only ``regression``).
    ``t_max`` is the largest timestep of an API that takes timesteps; ``max_positions`` caps
    every length of the grid; ``timeout`` bounds each import and each call. ``strict`` makes
    every ``noted`` check (a finding on inputs no use produces) a failure.
    """

    target: str
    spec: Spec
    api: str = "table"
    t_max: float = DEFAULT_T_MAX
    max_positions: int | None = None
    xfails: Xfails = field(default_factory=Xfails)
    timeout: float = DEFAULT_TIMEOUT
    written: str = ""
    source: str = ""
    search_path: tuple[str, ...] = ()
    against: Snapshot | None = field(default=None, compare=False)
    against_path: str | None = None
    max_ulp: int = 0
    max_ulp_given: bool = False
    formula: bool = True
    calling: Calling = Calling("n-d")
    strict: bool = False
    framework: str | None = None
    keras_backend: str | None = None
    spelling: str = field(default="toml", compare=False)  # how the user writes keys: flags, plugin, toml or python
    # The keys given as flags over a file's (``check --config F --first sin``), and how those flags are written.
    flagged: frozenset = field(default=frozenset(), compare=False)
    flag_spelling: str = field(default="flags", compare=False)

    @property
    def name(self) -> str:
        return self.written or self.target

    @property
    def family(self) -> Family:
        """The family of the declared API (:mod:`posenc_spec.registry`)."""
        return registry.family_of_api(self.api)

    def spelling_for(self, keys) -> str:
        """How advice to declare ``keys`` is spelled: as flags when one of them was given as a
        flag over the file's keys (the file's key would stay overridden), else as the
        declaration was written."""
        return self.flag_spelling if self.flagged.intersection(keys) else self.spelling

    def convention_name(self) -> str:
        """The declared convention in a few words (the preset and what differs from it)."""
        return self.spec.describe()

    def as_dict(self) -> dict:
        calling = self.calling.as_dict() if self.calling.adapted else {}
        framework = {key: value for key, value in (("framework", self.framework),
                                                   ("keras_backend", self.keras_backend)) if value}
        return {"preset": self.spec.preset, **self.spec.as_dict(), "api": self.api, "t_max": self.t_max,
                "max_positions": self.max_positions, "timeout": self.timeout, "formula": self.formula,
                "against": self.against_path, "max_ulp": self.max_ulp, "strict": self.strict, **calling,
                **framework}

    def framework_request(self) -> dict | None:
        """The declared framework, as the child prepares it (None: read from the target's module)."""
        if self.framework is None:
            return None
        return {"name": self.framework, "keras_backend": self.keras_backend}

    def how(self) -> dict | None:
        """What the child needs to call the target as it is written (None: in the API's own
        form); see :mod:`posenc_spec.gate.signatures`."""
        sizes = {"max_positions": self.max_positions, "t_max": self.t_max, **self.spec.child_sizes()}
        how = self.calling.for_child(self.api, sizes, self.spec.child_options())
        framework = self.framework_request()
        if framework is None:
            return how
        return {**(how or {"api": self.api, "signature": "canonical"}), "framework": framework}


def declare(keys: dict, base_dir=None, where: str = "", flags: bool = False) -> Declaration:
    """A :class:`Declaration` from ``keys`` (see the module docstring); None values are
    absent keys. ``where`` prefixes every error (``"gate.toml, targets[2]: "``); with
    ``flags`` the keys are named as their command-line flags. Relative paths (file
    targets, xfails files, snapshots, rope configs) are taken from ``base_dir`` (default
    the working directory)."""
    keys = {key: value for key, value in keys.items() if value is not None}

    def name(key):
        return where + (flag(key) if flags else key)

    refuse_unknown_keys(keys, KEYS, where)
    target = keys.get("target")
    if not isinstance(target, str) or not target:
        raise UsageError(f"{where}a target is required: 'package.module:attr' or 'path/to/file.py:attr'")
    try:
        resolved = absolute_target(target, base_dir)
    except TargetError as error:
        raise UsageError(f"{where}{error}") from None
    api = choice(name("api"), keys["api"], APIS) if "api" in keys else None
    against = against_path = None
    if "against" in keys:
        against_path = str(_path(name("against"), keys["against"], base_dir))
        against = _read_snapshot(against_path, api)
        api = api or against.api
    api = api or APIS[0]
    own = registry.names_of_api(api)
    keys = renamed(keys, own, where, flags)
    for key in (*FAMILY_KEYS, *ALIASES):
        owners = registry.owners_of_key(key)
        if key in keys and own not in owners:
            raise UsageError(f"{name(key)} declares {registry.nouns(owners)}, not {own.noun}: give --api "
                             f"{registry.apis_of(owners)}")
    max_positions = integer(name("max_positions"), keys["max_positions"]) if "max_positions" in keys else None
    t_max = number(name("t_max"), keys.get("t_max", DEFAULT_T_MAX), above=0, maximum=MAX_T_MAX)
    how = calling(keys, api, name)
    context = Context(api, name, where, base_dir, max_positions, t_max, how)
    spec = registry.family_of_api(api).declare({key: keys[key] for key in (*own.keys, "x_layout") if key in keys},
                                               context)
    return Declaration(
        target=resolved, spec=spec, api=api, t_max=t_max, max_positions=max_positions,
        xfails=read_xfails(_path(name("xfails"), keys["xfails"], base_dir)) if "xfails" in keys else Xfails(),
        timeout=number(name("timeout"), keys.get("timeout", DEFAULT_TIMEOUT), above=0, maximum=MAX_TIMEOUT),
        written=target, source=where.rstrip(": "), search_path=(str(base_dir),) if base_dir is not None else (),
        against=against, against_path=against_path,
        max_ulp=integer(name("max_ulp"), keys["max_ulp"], minimum=0, maximum=MAX_ULP) if "max_ulp" in keys else 0,
        max_ulp_given="max_ulp" in keys,
        formula=against is None or any(key in keys for key in own.keys), calling=how,
        strict=boolean(name("strict"), keys["strict"]) if "strict" in keys else False,
        **_framework(keys, name),
        spelling="flags" if flags else "toml",
    )


def _framework(keys: dict, name) -> dict:
    """``framework`` and ``keras_backend``, validated; a backend declares Keras."""
    from .child.frameworks import KERAS_BACKENDS, NAMES  # NumPy only: no framework is imported

    framework = choice(name("framework"), keys["framework"], NAMES) if "framework" in keys else None
    backend = choice(name("keras_backend"), keys["keras_backend"], KERAS_BACKENDS) if "keras_backend" in keys else None
    if backend is not None and framework not in (None, "keras"):
        raise UsageError(f"{name('keras_backend')} declares a keras target, not a {framework} one: give "
                         f"{name('framework')} keras or leave it out")
    return {"framework": "keras" if backend is not None else framework, "keras_backend": backend}


_noted: set[str] = set()  # the former names said so far in this process


def renamed(keys: dict, own, where: str = "", flags: bool = False) -> dict:
    """``keys`` with each former name of a key of the family ``own`` (its ``aliases``) read
    as the key, its value as the key spells it; each former name is noted once per process,
    ``where`` first, each name as the user wrote it (its flag with ``flags``). A former name
    of another family's key is left for the caller to refuse; a key given by both names is a
    :class:`UsageError`."""

    def spelled(key):
        return flag(key) if flags else key

    found = {}
    for old, value in keys.items():
        key = own.aliases.get(old)
        if key is None:
            found.setdefault(old, value)
            continue
        if key in keys:
            raise UsageError(f"{where}{spelled(old)} is the former name of {spelled(key)}: give {spelled(key)} alone")
        if old not in _noted:
            _noted.add(old)
            warnings.warn(RenamedKey(f"{where}{spelled(old)} is now {spelled(key)}"), stacklevel=3)
        values = own.alias_values.get(old, {})
        found[key] = values.get(value, value) if isinstance(value, str) else value
    return found


def refuse_unknown_keys(keys, known: tuple[str, ...], where: str = "") -> None:
    """A :class:`UsageError` for the first key not ``known`` (nor a former name of a key)
    that is close to one ("did you mean", naming the key as it is now), else for all of them,
    with the known keys."""
    unknown = sorted(str(key) for key in keys if key not in known and key not in ALIASES)
    for key in unknown:
        close = difflib.get_close_matches(key, (*known, *ALIASES), n=1, cutoff=0.8)
        if close:
            raise UsageError(f"{where}unknown key {key!r} (did you mean {ALIASES.get(close[0], close[0])!r}?)")
    if unknown:
        raise UsageError(f"{where}unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}")


def refuse_quoted_numbers(keys: dict, where: str = "") -> None:
    """A :class:`UsageError` for a number given as text (``max_positions = "2048"`` in TOML,
    ``max_positions="2048"`` in Python); for keys that do not come from a command line."""
    for key in (*NUMBER_KEYS, *(old for old, key in ALIASES.items() if key in NUMBER_KEYS)):
        value = keys.get(key)
        if isinstance(value, str) and _reads_as_number(value):
            raise UsageError(f"{where}{key} must be a number, got {value!r} (text: write it without quotes)")


def _reads_as_number(text: str) -> bool:
    """Whether ``text`` is one number written as text (``"2048"``; not ``"1e4,1e5"``, a list
    some keys also take as text, nor a word the key's own check refuses)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _path(name: str, value, base_dir) -> Path:
    text = plain(value)
    if isinstance(text, os.PathLike):
        try:
            text = os.fspath(text)
        except Exception:  # a caller's path object that raises is no path
            text = None
    if type(text) is not str or not text:
        fail(name, "a file path", value)
    path = Path(text)
    return path if path.is_absolute() or base_dir is None else Path(base_dir) / path


def _read_snapshot(path: str, api: str | None):
    from posenc_spec.regression import SnapshotError
    from posenc_spec.regression.snapshot_reader import read_snapshot

    try:
        return read_snapshot(path, expect_api=api)
    except SnapshotError as error:
        raise UsageError(str(error)) from None
