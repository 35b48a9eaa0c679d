"""What ``posenc-spec identify`` costs, and what its check on ``check``'s whole grid adds.

``identify`` fits a few calls, validates the fit on two more sizes, then runs ``check``'s
grid under its answer in the same slot (one more gate run of the target). Each figure is the
median of ``--repeats`` runs, each in a fresh Python as a user runs it, in rounds (each
command once a round) so that the machine's drift falls on all of them alike:

1. ``python -c "import numpy, torch"``: the floor every run pays;
2. ``identify`` of one target per API: the torch reference implementation (vaswani),
   guided-diffusion's timestep embedding, and a linearly scaled rotary cache; each beyond (1);
3. with ``--baseline DIR`` (a checkout of an earlier commit, e.g. from ``git archive``): the
   same commands run from DIR, and the ratio of the two, round by round.

Run from the repository root::

    python benchmarks/bench_identify.py [--repeats 5] [--baseline /tmp/posenc-spec-before]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from timing import IMPORT_FLOOR, median_by_round, seconds_in_rounds

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "table (vaswani)": ["reference_impls.torch_impl:positional_encoding"],
    "timesteps (guided-diffusion)": ["meta_tests.corpus.correct:guided_diffusion_timestep_embedding", "--api",
                                     "timesteps"],
    "rope-cache (linear)": ["meta_tests.corpus.rope_correct:linear_scaled_einsum", "--api", "rope-cache",
                            "--cache-call", "batched"],
}


def _command(folder: Path, arguments: list[str]):
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"}

    def run():
        done = subprocess.run([sys.executable, "-m", "posenc_spec", "identify", *arguments], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        if done.returncode not in (0, 1):
            raise SystemExit(f"identify {' '.join(arguments)} in {folder}: exit {done.returncode}: {done.stderr}")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit to compare with")
    args = parser.parse_args()
    actions = {"floor": lambda: subprocess.run(IMPORT_FLOOR, check=True)}
    for name, arguments in TARGETS.items():
        actions[name] = _command(ROOT, arguments)
        if args.baseline is not None:
            actions[f"{name}, baseline"] = _command(args.baseline.resolve(), arguments)
    times = seconds_in_rounds(actions, args.repeats)
    floor = statistics.median(times["floor"])
    print(f"import numpy, torch: {floor:.2f} s (median of {args.repeats})")
    for name in TARGETS:
        line = f"identify {name}: {statistics.median(times[name]):.2f} s, " \
               f"{median_by_round(lambda a, b: a - b, times[name], times['floor']):.2f} s beyond the floor"
        if args.baseline is not None:
            before = times[f"{name}, baseline"]
            line += (f"; baseline {statistics.median(before):.2f} s, "
                     f"{median_by_round(lambda a, b: a - b, before, times['floor']):.2f} s beyond the floor; "
                     f"ratio {median_by_round(lambda a, b: a / b, times[name], before):.2f}")
        print(line)


if __name__ == "__main__":
    main()
