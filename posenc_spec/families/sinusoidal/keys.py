"""The names a sinusoidal declaration is made of (imports nothing: ``--help`` and the
pytest plugin read it without NumPy). What each key accepts: :mod:`.spec`."""

from posenc_spec.gate.family import FamilyKeys

PRESET_NAMES = ("vaswani", "concat", "tensor2tensor", "fairseq", "guided-diffusion")
# The fields of a convention a declaration may override, in the order they are listed.
CONVENTION_KEYS = ("layout", "first", "freq_shift", "base", "offset", "scale")
_HELP = {"layout": "interleaved or concat", "first": "sin or cos", "freq_shift": "0 or 1",
         "base": "the base (> 1)", "offset": "the position of row 0", "scale": "the scale of the argument"}

NAMES = FamilyKeys(
    name="sinusoidal",
    noun="a sinusoidal table",
    apis=("table", "timesteps"),
    keys=("convention", *CONVENTION_KEYS, "odd"),
    signatures={"table": ("n-d", "adds-to-x"), "timesteps": ("t-d",)},
    sizes={"table": ("num_positions", "dim", "max_positions"),
           "timesteps": ("num_positions", "dim", "max_positions", "t_max")},
    number_keys=("freq_shift", "base", "offset", "scale"),
    help={"convention": ("NAME", f"the declared preset: {', '.join(PRESET_NAMES)} (default vaswani)"),
          **{key: ("VALUE", f"override the preset's {key}: {text}") for key, text in _HELP.items()},
          "odd": ("VALUE", "odd widths: error (expect an exception; default), zero-pad, ceil, or skip (test none)")},
    group="sinusoidal tables and timestep embeddings (--api table | timesteps)",
)
