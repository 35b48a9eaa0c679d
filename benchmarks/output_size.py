"""How much a person reads when ten targets fail: ``posenc-spec check`` and ``pytest --posenc``.

Ten wrong corpus entries (:data:`TEN`: a slip of each family, some named by a hint, some
not) are written as one ``[[targets]]`` config into a folder of its own, then checked twice,
each in a fresh Python as a user runs it:

1. ``posenc-spec check --config ten.toml`` under ``GITHUB_ACTIONS=true``: its lines,
   characters and rows on a terminal of :data:`WIDTH` columns without the annotations, and
   its ``::error``/``::notice`` annotations;
2. ``pytest --posenc-config ten.toml -p no:cacheprovider`` (pytest's defaults otherwise,
   ``-n 0``): the same; with ``--verbose`` the same with ``-v``.

Run from the repository root::

    python benchmarks/output_size.py [--verbose] [--show DIR]

``--show DIR`` keeps both outputs in DIR to read them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus.every import every_corpus  # noqa: E402
from posenc_spec import registry  # noqa: E402
from posenc_spec.gate.identify import toml_text  # noqa: E402

# corpus -> the wrong entries of it among the ten
TEN = {"sinusoidal": ("swapped_sin_cos", "exponent_pair_over_d"),
       "rope": ("positions_arange_bfloat16", "cache_in_activation_dtype"),
       "stateful": ("LegacyLlamaRotaryGrownInCallDtype",),
       "sincos2d": ("meshgrid_h_w_xy", "width_height_argument_order"),
       "t5buckets": ("halving_forgotten",),
       "alibi": ("geometric_for_every_head_count",),
       "mrope": ("sections_swapped",)}
WIDTH = 160  # a terminal's columns


def _current_names(table: dict) -> dict:
    """A corpus entry's table with each key's former name (``bucket_preset``) written as the key
    (``convention``), and its value as the key spells it (``bucket_query_offset = "end"`` ->
    ``query_positions = "last"``), as a user's config is: the run's output holds no note about
    renamed keys."""
    own = registry.names_of_api(table.get("api", "table"))
    return {own.aliases.get(key, key): own.alias_values.get(key, {}).get(value, value)
            if isinstance(value, str) else value for key, value in table.items()}


def ten_config() -> str:
    """The ten entries as one config file's ``[[targets]]`` tables."""
    tables = []
    for name, entries, _ in every_corpus():
        by_id = {entry.id: entry for entry in entries}
        for entry_id in TEN.get(name, ()):
            table = _current_names(by_id[entry_id].config_table())
            tables.append("[[targets]]\n" + "\n".join(toml_text.lines(table)) + "\n")
    return "\n".join(tables)


def _run(command: list[str], folder: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg",
           "GITHUB_ACTIONS": "true", "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, timeout=3600)
    return done.stdout


def measure(text: str) -> dict:
    """Lines and characters a person reads (annotations apart), and the rows they fill on a
    terminal of ``WIDTH`` columns (a long line wraps)."""
    lines = text.splitlines()
    annotations = [line for line in lines if line.startswith("::")]
    read = [line for line in lines if not line.startswith("::")]
    return {"lines": len(read), "characters": sum(len(line) + 1 for line in read),
            "rows": sum(max(1, -(-len(line) // WIDTH)) for line in read),
            "::error": sum(line.startswith("::error") for line in annotations),
            "::notice": sum(line.startswith("::notice") for line in annotations)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="also pytest -v")
    parser.add_argument("--show", metavar="DIR", help="keep the outputs in DIR")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / ".git").mkdir()  # the search for pyproject.toml stops here
        (folder / "ten.toml").write_text(ten_config())
        runs = {"posenc-spec check": [sys.executable, "-m", "posenc_spec", "check", "--config", "ten.toml"],
                "pytest --posenc-config": [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
                                           "--posenc-config", "ten.toml"]}
        if args.verbose:
            runs["pytest --posenc-config -v"] = [*runs["pytest --posenc-config"], "-v"]
        for name, command in runs.items():
            text = _run(command, folder)
            if args.show:
                Path(args.show).mkdir(parents=True, exist_ok=True)
                Path(args.show, name.replace(" ", "_").replace("-", "") + ".txt").write_text(text)
            figures = measure(text)
            print(f"{name}: {figures['lines']} lines, {figures['characters']} characters, {figures['rows']} rows of "
                  f"{WIDTH} columns, {figures['::error']} ::error, {figures['::notice']} ::notice")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
