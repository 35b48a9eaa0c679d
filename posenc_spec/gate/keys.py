"""The names a declaration is made of: its keys, its APIs, the flag that spells each key,
and the defaults the flags' help states.

Imports nothing, so that the pytest plugin can name its options, and ``posenc-spec --help``
describe its flags, without loading the gate (or NumPy).
What each key means and accepts: :mod:`posenc_spec.gate.declaration` (sinusoidal keys) and
:mod:`posenc_spec.gate.rope.spec` (rotary keys).
"""

APIS = ("table", "timesteps", "rope-freqs", "rope-cache", "rope-apply")
ROPE_APIS = ("rope-freqs", "rope-cache", "rope-apply")
CONVENTION_KEYS = ("layout", "first", "freq_shift", "base", "offset", "scale")
DECLARING_KEYS = ("convention", *CONVENTION_KEYS, "odd")
ROPE_KEYS = ("rope_config", "rope_theta", "rope_type", "layer_type", "rope_parameters", "partial_rotary_factor",
             "rotary_dim", "rotary_features", "attention_factor", "rope_layout", "cache_layout", "cache_form",
             "cache_call", "x_layout", "head_dim")
# How the target is called, for any API (posenc_spec.gate.signatures).
CALLING_KEYS = ("signature", "init", "method", "kwargs")
# What declares a target besides its name: everything but the target and its xfails file.
DECLARATION_KEYS = ("convention", *CONVENTION_KEYS, "odd", "api", "t_max", "max_positions", "timeout",
                    "against", "max_ulp", *ROPE_KEYS, *CALLING_KEYS)
KEYS = ("target", *DECLARATION_KEYS, "xfails")
# The keys whose values are numbers: a file or a Python call that gives one as text
# ("2048") has quoted it by mistake. Only the command line's flags are text by nature.
NUMBER_KEYS = ("freq_shift", "base", "offset", "scale", "t_max", "max_positions", "timeout", "max_ulp", "rope_theta",
               "partial_rotary_factor", "rotary_dim", "head_dim")

# The defaults of the keys a call is made with, for the help to state: the values
# posenc_spec.gate.declaration applies (its DEFAULT_T_MAX and DEFAULT_TIMEOUT) must equal them.
DEFAULT_T_MAX = 1000.0
DEFAULT_TIMEOUT = 60.0


# A key whose flag is not its name: one --rope-param KEY=VALUE per parameter.
_FLAGS = {"rope_parameters": "--rope-param", "kwargs": "--kwarg"}
# The keys whose flag is given once per item (KEY=VALUE each).
REPEATED = ("rope_parameters", "init", "kwargs")


def flag(key: str) -> str:
    """The command-line flag of a key: ``t_max`` -> ``--t-max``."""
    return _FLAGS.get(key, "--" + key.replace("_", "-"))
