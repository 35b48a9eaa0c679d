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
CALLING_KEYS = ("signature", "init", "method", "kwargs", "x_layout")
# Each family's keys, each once: a concept several families share has one name (docs/keys.md).
FAMILY_KEYS = tuple(dict.fromkeys(key for names in registry.names() for key in names.keys))
# What declares a target besides its name: everything but the target and its xfails file.
DECLARATION_KEYS = (*FAMILY_KEYS, *RUN_KEYS, *CALLING_KEYS)
KEYS = ("target", *DECLARATION_KEYS, "xfails")
# The keys' former names, still read (posenc_spec.gate.declaration.renamed): old -> key, and
# the values a former name took that its key spells otherwise.
ALIASES = {old: key for names in registry.names() for old, key in names.aliases.items()}
ALIAS_VALUES = {old: values for names in registry.names() for old, values in names.alias_values.items()}
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


def flag(key: str) -> str:
    """The command-line flag of a key: ``t_max`` -> ``--t-max``."""
    return _FLAGS.get(key, "--" + key.replace("_", "-"))
