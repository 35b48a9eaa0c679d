"""The names a declaration is made of: its keys, its APIs, the flag that spells each key,
and the defaults the flags' help states.

The core's keys are here; each family's come from its ``keys.py`` through the registry
(:mod:`posenc_spec.registry`). Nothing here imports NumPy, so that the pytest plugin can
name its options, and ``posenc-spec --help`` describe its flags, without loading the gate.
What each core key means and accepts: :mod:`posenc_spec.gate.declaration`.
"""

from posenc_spec import registry

APIS = registry.apis()
# The keys of the run of one target, for any family.
RUN_KEYS = ("api", "t_max", "max_positions", "timeout", "against", "max_ulp", "strict")
# How the target is called, for any API (posenc_spec.gate.signatures).
# ``framework`` and ``keras_backend``: what the target is written in (posenc_spec.gate.child.frameworks).
CALLING_KEYS = ("call", "signature", "init", "method", "kwargs", "x_layout", "framework", "keras_backend")
# Each family's keys, each once: a concept several families share has one name (docs/keys.md).
FAMILY_KEYS = tuple(dict.fromkeys(key for names in registry.names() for key in names.keys))
# What declares a target besides its name: everything but the target and its xfails file.
DECLARATION_KEYS = (*FAMILY_KEYS, *RUN_KEYS, *CALLING_KEYS)
KEYS = ("target", *DECLARATION_KEYS, "xfails")
# The keys' former names, still read (posenc_spec.gate.declaration.renamed): old -> key.
ALIASES = {old: key for names in registry.names() for old, key in names.aliases.items()}
# The keys whose values are numbers: a file or a Python call that gives one as text
# ("2048") has quoted it by mistake. Only the command line's flags are text by nature.
NUMBER_KEYS = (*dict.fromkeys(key for names in registry.names() for key in names.number_keys),
               "t_max", "max_positions", "timeout", "max_ulp")

# The defaults of the keys a call is made with, for the help to state: the values
# posenc_spec.gate.declaration applies (its DEFAULT_T_MAX and DEFAULT_TIMEOUT) must equal them.
DEFAULT_T_MAX = 1000.0
DEFAULT_TIMEOUT = 60.0

# A key whose flag is not its name (one --kwarg KEY=VALUE per argument).
_FLAGS = {"kwargs": "--kwarg", **{key: spelled for names in registry.names() for key, spelled in names.flags.items()}}
# The keys whose flag is given once per item (KEY=VALUE each).
REPEATED = ("init", "kwargs", *dict.fromkeys(key for names in registry.names() for key in names.repeated))
REPEATED = (*REPEATED, *(old for old, key in ALIASES.items() if key in REPEATED))


class RenamedKey(FutureWarning):
    """A key given by its former name: read as the key it is now, said once per name."""


def flag(key: str) -> str:
    """The command-line flag of a key: ``t_max`` -> ``--t-max``."""
    return _FLAGS.get(key, "--" + key.replace("_", "-"))


def plugin_flag(key: str) -> str:
    """The pytest plugin's twin of a key's flag: ``t_max`` -> ``--posenc-t-max``."""
    return "--posenc-" + flag(key)[2:]


# What the core's keys mean, for the table of keys (docs/keys.md); the families' keys say
# it in their FamilyKeys.help.
CORE_HELP = {
    "target": "package.module:attr or path/to/file.py:attr: what is checked",
    "api": "the target's API, which names its family (default table)",
    "t_max": "the largest timestep of an API that takes timesteps (default 1000)",
    "max_positions": "every position the grid hands stays below it (a model's max_position_embeddings; T5 "
                     "buckets: every relative position |r| stays below it)",
    "timeout": "seconds of the target's own time for the import and for each call (default 60)",
    "against": "a snapshot (posenc-spec snapshot) whose calls are replayed and compared",
    "max_ulp": "the largest ULP distance against allows",
    "strict": "fail on notes too (findings on inputs no use produces)",
    "call": "the target's call as written, with roles for what the gate hands: fn(head_dim, num_positions) "
            "(docs/declaring.md, \"Call descriptions\"); replaces signature, init, method and kwargs",
    "signature": "how the target is called, if not in the API's form",
    "init": "build an object of a class TARGET first: its keyword arguments, or \"config\" (model_config)",
    "method": "the method to call on the object init builds",
    "kwargs": "keyword arguments passed on every call",
    "x_layout": "how the x the target takes is laid out",
    "framework": "what the target is written in: numpy, torch, jax, tensorflow or keras (default: read from its "
                 "module)",
    "keras_backend": "the backend a keras target runs on: jax, tensorflow, torch or numpy",
    "xfails": "a file of known deviations: check ids or glob patterns",
}


def readers(key: str) -> tuple[str, ...]:
    """The families that read ``key`` (empty: a key of the core, which every family reads)."""
    return tuple(names.name for names in registry.names() if key in names.keys)


def former_names(key: str) -> tuple[str, ...]:
    """The former names of ``key``, still read as it."""
    return tuple(old for old, new in ALIASES.items() if new == key)


def markdown_table() -> str:
    """docs/keys.md's table: every key, its flag, its former names, the families that read it
    and what it means to each (docs/keys.md holds this text between ``<!-- keys -->`` markers,
    and a test holds it to this function)."""
    rows = ["| key | flag | former names | read by | what it is |", "|---|---|---|---|---|"]
    for key in KEYS:
        owners = [names for names in registry.names() if key in names.keys]
        if owners:
            texts = {names.name: f"`{names.help[key][0]}` {names.help[key][1]}" for names in owners}
            meaning = "; ".join(f"*{name}*: {text}" for name, text in texts.items()) if len(set(texts.values())) > 1 \
                else next(iter(texts.values()))
        else:
            meaning = CORE_HELP[key]
        former = ", ".join(f"`{old}`" for old in former_names(key)) or "-"
        families = ", ".join(names.name for names in owners) or "all"
        spelled = "TARGET" if key == "target" else flag(key)
        rows.append(f"| `{key}` | `{spelled}` | {former} | {families} | {meaning.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)
