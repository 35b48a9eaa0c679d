"""A T5-bucket declaration: the convention, the dtype of the logarithm, and how the target is called.

Keys (every one also a ``--`` flag; ``arg_names`` is ``--arg-name ROLE=NAME``, repeated)::

    convention           t5-encoder (default) | t5-decoder | wavlm | layoutlm-2d | cpmant | gluonnlp-encoder
    bidirectional        true | false                 override the preset's settings, as do
    num_buckets          an integer                   the bucket settings of model_config
    max_distance         an integer                   (explicit keys win)
    relative_position    memory-minus-query (default) | query-minus-memory
    compute_dtype        float32 (default) | float64 | float16: the logarithm's dtype, whose band
                         of rounding decides which neighbouring bucket is also accepted
    arg_names            {ROLE = NAME, ...}: the target's parameter names (roles: relative_position,
                         bidirectional, num_buckets, max_distance, query_length, key_length, x);
                         NAME "causal" passes the flag negated, "" passes nothing
    query_positions      first (default) | last: the queries are the first or the last keys
                         (table and bias signatures; the spec's query_offset start | end)
    bucket_embedding     the nn.Embedding a bias is looked up in (bias; default relative_attention_bias)
    model_config         a transformers config.json: its bucket settings
                         (relative_attention_num_buckets / relative_attention_max_distance,
                         rel_pos_bins / max_rel_pos, position_bias_num_buckets /
                         position_bias_max_distance, num_buckets / max_bucket_distance,
                         is_decoder), and the object ``init = "config"`` builds, or ``"{config}"``
                         in a table of ``init``

How each signature is called: :mod:`.adapters`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.user_files import read_json
from posenc_spec.gate.values import choice, fail

from .conventions import PRESETS, RELATIVE_POSITIONS, BucketConvention, checked_fields
from .keys import ROLES
from .tolerance import LOG_DTYPES, REFUSED, check_band

DEFAULT_PRESET = "t5-encoder"
DEFAULT_EMBEDDING = "relative_attention_bias"  # T5's, MPNet's and x-transformers' name
# The declared place of the queries among the keys (query_positions, as ALiBi says it), and the
# offset of the first query it means: the queries are the first keys, or the last ones.
QUERY_POSITIONS = {"first": "start", "last": "end"}
TABLES = ("table", "bias")
MAX_CONFIG_BYTES = 1 << 22
# What a config.json calls each setting, by the models that call it so.
CONFIG_NAMES = {
    "num_buckets": ("relative_attention_num_buckets", "rel_pos_bins", "position_bias_num_buckets", "num_buckets"),
    "max_distance": ("relative_attention_max_distance", "max_rel_pos", "position_bias_max_distance",
                     "max_bucket_distance"),
}
_ATTRIBUTE = re.compile(r"\w+(\.\w+)*")
_NAME = re.compile(r"[A-Za-z_]\w*")
# The roles each signature hands over, and those passed only when arg_names names them.
PASSED = {"static": ("relative_position", "bidirectional", "num_buckets", "max_distance"),
          "method": ("relative_position",),
          "table": ("query_length", "key_length", "bidirectional", "num_buckets", "max_distance"),
          "bias": ("query_length", "key_length", "x")}
UNNAMED = ("x",)


@dataclass(frozen=True)
class BucketSpec:
    """What a T5-bucket target is declared to compute and how it is called: ``args`` holds the
    renamed roles as sorted ``(role, name)`` pairs."""

    convention: BucketConvention
    preset: str = DEFAULT_PRESET
    log_dtype: str = "float32"
    signature: str = "static"
    args: tuple = ()
    query_offset: str = "start"
    embedding: str = DEFAULT_EMBEDDING
    config: str | None = None

    def names(self) -> dict:
        """Each role the signature hands over, under the target's name for it ("" not passed)."""
        renamed = dict(self.args)
        return {role: renamed.get(role, "" if role in UNNAMED else role) for role in PASSED[self.signature]}

    @property
    def square_only(self) -> bool:
        """A table or bias call that takes one length (or none: its object holds it)."""
        names = self.names()
        return self.signature in TABLES and not (names["query_length"] and names["key_length"])

    def describe(self) -> str:
        """The preset's name, or the settings where they differ from it, and the logarithm's dtype
        where it is not float32."""
        said = self.preset if self.convention == PRESETS[self.preset] else self.convention.name()
        return said + ("" if self.log_dtype == "float32" else f", {self.log_dtype} logarithm")

    def as_dict(self) -> dict:
        return {**self.convention.as_dict(), "log_dtype": self.log_dtype, "bucket_args": dict(self.args),
                "bucket_query_offset": self.query_offset, "bucket_embedding": self.embedding,
                "bucket_config": self.config}

    def header_parts(self) -> list[str]:
        return [self.describe()]

    def child_sizes(self) -> dict:
        convention = self.convention
        return {"num_buckets": convention.num_buckets, "max_distance": convention.max_distance,
                "bidirectional": convention.bidirectional, "causal": not convention.bidirectional}

    def child_options(self) -> dict:
        convention = self.convention
        return {"settings": {"bidirectional": convention.bidirectional, "num_buckets": convention.num_buckets,
                             "max_distance": convention.max_distance},
                "args": self.names(), "embedding": self.embedding if self.signature == "bias" else None,
                "config": self.config}


def _flag_value(name: str, value):
    """``true``/``false`` as the command line gives them, a bool as a file does."""
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if not isinstance(value, bool):
        fail(name, "true or false", value)
    return value


def _args(name: str, value, signature: str) -> tuple:
    """``arg_names``: a table, or ``ROLE=NAME`` texts (the command line's repeated flag)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)):
        table = {}
        for item in value:
            role, equals, renamed = str(item).partition("=")
            if not equals:
                raise UsageError(f"{name}: expected ROLE=NAME, got {item!r}")
            if role.strip() in table:
                raise UsageError(f"{name}: {role.strip()!r} given twice")
            table[role.strip()] = renamed.strip()
        value = table
    if not isinstance(value, dict):
        fail(name, "a table of ROLE = NAME, such as {bidirectional = \"causal\"}", value)
    pairs = []
    for role, renamed in value.items():
        choice(f"{name} role", role, ROLES)
        if role not in PASSED[signature]:
            raise UsageError(f"{name}: the {signature} signature hands over no {role} (it hands over "
                             f"{', '.join(PASSED[signature])})")
        if not isinstance(renamed, str) or (renamed and not _NAME.fullmatch(renamed)):
            fail(f"{name}.{role}", "a parameter name, or \"\" to pass nothing", renamed)
        pairs.append((role, renamed))
    return tuple(sorted(pairs))


def _config_path(name: str, value, base_dir) -> str:
    if not isinstance(value, str) or not value:
        fail(name, "the path of a transformers config.json", value)
    path = Path(value)
    return str(path if path.is_absolute() or base_dir is None else Path(base_dir) / path)


def config_settings(path: str, name: str) -> dict:
    """The bucket settings a transformers ``config.json`` states (those it names; see
    :data:`CONFIG_NAMES`), ``bidirectional`` from ``is_decoder``."""
    try:
        data = read_json(path, MAX_CONFIG_BYTES, "bucket config")
    except UsageError as problem:  # the file's own words, after the key that names it
        raise UsageError(f"{name}: {problem}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{name}: {path} holds no JSON object")
    settings = {}
    for setting, spelled in CONFIG_NAMES.items():
        found = next((key for key in spelled if key in data), None)
        if found is not None:
            settings[setting] = data[found]
    if "is_decoder" in data:
        settings["bidirectional"] = _flag_value(f"{name} {path}: is_decoder", data["is_decoder"]) is False
    return settings


def declare(keys: dict, context) -> BucketSpec:
    """The :class:`BucketSpec` of ``keys`` (see the module docstring); each bad value a one-line
    :class:`UsageError` naming its key."""
    name, calling = context.name, context.calling
    signature = calling.signature
    preset = choice(name("convention"), keys.get("convention", DEFAULT_PRESET), tuple(PRESETS))
    fields = PRESETS[preset].as_dict()
    config = None
    if "model_config" in keys:
        config = _config_path(name("model_config"), keys["model_config"], context.base_dir)
        fields.update(config_settings(config, name("model_config")))
    if "bidirectional" in keys:
        fields["bidirectional"] = _flag_value(name("bidirectional"), keys["bidirectional"])
    for key in ("num_buckets", "max_distance"):
        if key in keys:
            fields[key] = keys[key]
    if "relative_position" in keys:
        fields["relative_position"] = choice(name("relative_position"), keys["relative_position"], RELATIVE_POSITIONS)
    convention = BucketConvention(**checked_fields(fields, name))
    log_dtype = _log_dtype(name("compute_dtype"), keys.get("compute_dtype", "float32"), convention)
    args = _args(name("arg_names"), keys["arg_names"], signature) if "arg_names" in keys else ()
    for key, readers in (("query_positions", TABLES), ("bucket_embedding", ("bias",))):
        if key in keys and signature not in readers:
            raise UsageError(f"{name(key)} is read by the {' and '.join(readers)} signature"
                             f"{'s' * (len(readers) > 1)}, not by {signature}")
    queries = choice(name("query_positions"), keys.get("query_positions", "first"), tuple(QUERY_POSITIONS))
    query_offset = QUERY_POSITIONS[queries]
    embedding = keys.get("bucket_embedding", DEFAULT_EMBEDDING)
    if not isinstance(embedding, str) or not _ATTRIBUTE.fullmatch(embedding):
        fail(name("bucket_embedding"), "an attribute of the module, such as relative_attention_bias", embedding)
    if isinstance(calling.init, tuple) and "{config}" in dict(calling.init).values() and config is None:
        raise UsageError(f"{name('init')}: \"{{config}}\" stands for the object built from {name('model_config')}, "
                         "and none is given")
    spec = BucketSpec(convention, preset, log_dtype, signature, args, query_offset, embedding, config)
    if signature in TABLES and not any(spec.names().get(role) for role in ("query_length", "key_length", "x")) \
            and calling.init is None:
        raise UsageError(f"{name('arg_names')}: a {signature} call that takes no length needs an object built "
                         f"for it ({name('init')} with \"{{key_length}}\")")
    return spec


def _log_dtype(name: str, value, convention: BucketConvention) -> str:
    """A dtype whose band decides between two neighbours at most at these settings."""
    if value in REFUSED:
        raise UsageError(f"{name} must be one of {', '.join(LOG_DTYPES)}, got {value!r}: {REFUSED[value]}")
    dtype = choice(name, value, LOG_DTYPES)
    try:
        return check_band(convention, dtype)
    except ValueError as error:
        raise UsageError(f"{name}: {error}") from None


def with_convention(spec: BucketSpec, convention: BucketConvention) -> BucketSpec:
    """``spec`` declaring ``convention`` instead (how it is called unchanged)."""
    return dataclasses.replace(spec, convention=convention)
