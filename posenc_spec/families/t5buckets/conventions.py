"""T5's relative-position buckets: the family's parameters, validated once, and its presets.

T5 (Raffel et al. 2020, section 2.1) adds to each attention logit a learned scalar per
head, looked up by the *bucket* of the relative position ``r = memory - query`` (key
position minus query position). Mesh TensorFlow's ``_relative_position_bucket`` defines
the buckets; transformers copies it into T5, mT5, UMT5, LongT5, Switch, Pix2Struct,
Pop2Piano, UDOP, LayoutLMv2/v3, MPNet, WavLM, ProphetNet and CPM-Ant, and x-transformers,
torchtune, T5X and many ports carry it too. With ``B = num_buckets`` and ``M = max_distance``:

- per direction, ``H`` buckets: ``H = B // 2`` when ``bidirectional`` (keys at or before the
  query in buckets ``0 .. H-1``, keys after it in ``H .. 2H-1``), ``H = B`` when causal (every
  key after the query shares bucket 0 with ``r = 0``);
- the distance ``n`` (``|r|``, or ``max(-r, 0)`` when causal) has its own bucket while
  ``n < E``, ``E = H // 2`` (``max_exact``);
- beyond, ``L = H - E`` logarithmic buckets: ``E + min(floor(L ln(n/E) / ln(M/E)), L - 1)``,
  so that every distance from about ``M`` on shares the last bucket ``H - 1``.

Declared keys (:func:`from_keys`, and the gate's :mod:`.spec`): ``bidirectional`` (true for an encoder, false for a
decoder's self-attention), ``num_buckets``, ``max_distance``, and ``relative_position``:
``memory-minus-query`` (Mesh TensorFlow, T5 and every copy above) or ``query-minus-memory``,
the sign GluonNLP's ``relative_position_bucket`` documents and takes on purpose (its buckets
of ``q - m`` are T5's of ``m - q``). An odd ``num_buckets`` is allowed, as real code allows
it: bidirectional, its last bucket is never used.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import choice, integer

RELATIVE_POSITIONS = ("memory-minus-query", "query-minus-memory")
KEYS = ("bidirectional", "num_buckets", "max_distance", "relative_position")
# The exact oracle raises distances to the power L (up to MAX_NUM_BUCKETS / 2); real code
# has at most 512 buckets (CPM-Ant) and 2048 as its largest max_distance.
MAX_NUM_BUCKETS = 4096
MAX_DISTANCE = 2**40


@dataclass(frozen=True)
class BucketConvention:
    """One member of the family; the fields are the declared keys, validated on construction
    (a :class:`~posenc_spec.gate.errors.UsageError`, a ``ValueError``, naming the field)."""

    bidirectional: bool = True
    num_buckets: int = 32
    max_distance: int = 128
    relative_position: str = "memory-minus-query"

    def __post_init__(self):
        checked = checked_fields(self.as_dict(), str)
        for key, value in checked.items():
            object.__setattr__(self, key, value)

    # -- the sizes of the formula -----------------------------------------------------------

    @property
    def direction(self) -> str:
        return "bidirectional" if self.bidirectional else "causal"

    @property
    def half(self) -> int:
        """``H``: the buckets of one direction (all of them when causal)."""
        return self.num_buckets // 2 if self.bidirectional else self.num_buckets

    @property
    def max_exact(self) -> int:
        """``E``: distances below it have a bucket each."""
        return self.half // 2

    @property
    def log_buckets(self) -> int:
        """``L = H - E``: the logarithmic buckets of one direction."""
        return self.half - self.max_exact

    @property
    def upper_offset(self) -> int:
        """The first bucket of keys after the query (bidirectional), else 0."""
        return self.half if self.bidirectional else 0

    def distance_and_offset(self, relative_position: int) -> tuple[int, int]:
        """``(n, first)`` of a declared relative position: its distance within its direction
        and the first bucket of that direction (a Python int of any size)."""
        r = int(relative_position)
        if self.relative_position == "query-minus-memory":
            r = -r
        if self.bidirectional:
            return abs(r), self.half if r > 0 else 0
        return max(-r, 0), 0

    # -- forms ----------------------------------------------------------------------------

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def name(self) -> str:
        """The preset's name when this convention is one, else its fields in short form."""
        sign = "" if self.relative_position == "memory-minus-query" else ", query-minus-memory"
        return _PRESET_NAMES.get(self) or (f"{self.direction}, {self.num_buckets} buckets, "
                                           f"max_distance {self.max_distance}{sign}")


def from_keys(keys: dict, name=str) -> BucketConvention:
    """The convention a declaration's keys state: ``convention`` (a preset, default
    ``t5-encoder``) and any of :data:`KEYS` over it. ``name(key)`` names a key in messages;
    each bad value is one line naming it. (The gate's declarations go through
    :func:`posenc_spec.families.t5buckets.spec.declare`, which reads a config file and
    command-line text too.) A key's former name (``bucket_preset``) is read as the key, as a
    declaration reads it (:func:`posenc_spec.gate.declaration.renamed`)."""
    from posenc_spec.gate.declaration import renamed

    from .keys import NAMES

    keys = renamed(dict(keys), NAMES)
    base = PRESETS[choice(name("convention"), keys.get("convention", "t5-encoder"), tuple(PRESETS))]
    fields = {**base.as_dict(), **{key: keys[key] for key in KEYS if key in keys}}
    return BucketConvention(**checked_fields(fields, name))


def checked_fields(fields: dict, name) -> dict:
    """The fields validated, in canonical form (``int``, not a NumPy integer); each bad
    value a one-line :class:`UsageError` naming its key as ``name(key)`` gives it."""
    bidirectional = fields["bidirectional"]
    if not isinstance(bidirectional, bool):
        raise UsageError(f"{name('bidirectional')} must be true or false, got {bidirectional!r}")
    num_buckets = integer(name("num_buckets"), _plain(fields["num_buckets"]), minimum=4 if bidirectional else 2,
                          maximum=MAX_NUM_BUCKETS)
    max_distance = integer(name("max_distance"), _plain(fields["max_distance"]), minimum=1, maximum=MAX_DISTANCE)
    relative_position = choice(name("relative_position"), fields["relative_position"], RELATIVE_POSITIONS)
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    if max_distance <= max_exact:
        direction = "bidirectional" if bidirectional else "causal"
        raise UsageError(f"{name('max_distance')} must exceed max_exact = {max_exact} (the exact buckets of "
                         f"{num_buckets} {direction} buckets: ln(max_distance / max_exact) divides), "
                         f"got {max_distance}")
    return {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance,
            "relative_position": relative_position}


def _plain(value):
    """A NumPy integer as the Python int it holds (anything else as it is, to be judged)."""
    return int(value) if isinstance(value, np.integer) else value


# The settings real code ships, by the codebases that use them.
PRESETS: dict[str, BucketConvention] = {
    # T5, mT5, UMT5, LongT5, Switch, Pix2Struct, Pop2Piano, UDOP encoders; MPNet; LayoutLMv2/v3
    # (1-D); torchtune's T5 encoder; x-transformers' RelativePositionBias(causal=False).
    "t5-encoder": BucketConvention(True, 32, 128),
    # The same models' decoder self-attention; ProphetNet's main and predicting streams.
    "t5-decoder": BucketConvention(False, 32, 128),
    "wavlm": BucketConvention(True, 320, 800),
    # LayoutLMv2/v3's 2-D buckets of x and y offsets (rel_2d_pos_bins 64, max_rel_2d_pos 256).
    "layoutlm-2d": BucketConvention(True, 64, 256),
    "cpmant": BucketConvention(True, 512, 2048),
    # GluonNLP's relative_position_bucket: T5's settings, relative position query - memory.
    "gluonnlp-encoder": BucketConvention(True, 32, 128, "query-minus-memory"),
}


def get_convention(name: str | BucketConvention = "t5-encoder", **overrides) -> BucketConvention:
    """A preset by name (or a convention) with fields replaced by ``overrides`` (``None`` ignored)."""
    if isinstance(name, BucketConvention):
        convention = name
    else:
        convention = PRESETS[choice("convention", name, tuple(PRESETS))]
    changes = {key: value for key, value in overrides.items() if value is not None}
    unknown = sorted(set(changes) - set(KEYS))
    if unknown:
        raise UsageError(f"unknown T5-bucket key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    return dataclasses.replace(convention, **changes) if changes else convention
_PRESET_NAMES = {preset: name for name, preset in PRESETS.items()}
