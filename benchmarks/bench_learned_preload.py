"""A library imported once per run: twenty real transformers- and diffusers-based targets in one
run without ``--preload``, against the same run with the right ``--preload``.

    python benchmarks/bench_learned_preload.py [--repeats 3] [--jobs 1]

The targets are the repository's real code of three families, declared as their tests declare
them (``spec_tests/families/{sincos2d,alibi,t5buckets}``): the installed 2-D sincos functions
and modules of transformers and diffusers, transformers' ALiBi builders and the first of
its T5 bucket functions, twenty in all. Each run is a fresh process (``check_many`` in a new
Python, as a command line would run it), so every run starts its root template and imports
the libraries anew; the runs take turns in rounds (``timing.seconds_in_rounds``: a drift of
the machine's speed falls on both alike). The "right" preload is the modules the tests name
for these targets. Reported: the median seconds of each and the median of the rounds' ratios
to the run with the right preload, and whether every run without it and with it gave every
target the same verdict and the same failed checks (exit 1 when they differ). ``--baseline
DIR`` adds a run without ``--preload`` of another checkout's posenc_spec (before the learned
preload), its targets and tests its own: how many of its first run's verdicts agree is said,
not required.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from timing import median_by_round, seconds_in_rounds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COUNT = 20


def declarations() -> tuple[dict, tuple[str, ...]]:
    """Name -> declaration of the real targets installed here (at most COUNT), and the modules
    the tests preload for them."""
    import pytest

    from meta_tests.corpus.test_alibi_corpus_gate import REAL as ALIBI
    from posenc_spec.gate.declaration import declare
    from spec_tests.families.sincos2d import test_real_code_gate as sincos2d
    from spec_tests.families.sincos2d.real_code import PRELOAD as SINCOS2D_PRELOAD
    from spec_tests.families.t5buckets.declared import TARGETS as T5

    made, preload = {}, list(SINCOS2D_PRELOAD)
    for name, (library, keys, _) in sincos2d.TARGETS.items():
        if library in ("transformers", "diffusers"):
            try:
                sincos2d.require(sincos2d.VERSIONS[library])
            except pytest.skip.Exception:
                continue
            made[name] = declare({"api": "sincos2d", **keys})
    for name, library, keys, _ in ALIBI:
        if library == "transformers":
            made[f"alibi {name}"] = declare(keys)
            preload.append(keys["target"].split(":")[0])
    for target in T5:
        if target.library == "transformers" and len(made) < COUNT:
            keys = target.declaration_keys()
            made[f"t5 {target.id}"] = declare(keys)
            preload.append(keys["target"].split(":")[0])
    return dict(list(made.items())[:COUNT]), tuple(dict.fromkeys(preload))


def run(preload: bool, jobs: int, checkout: str | None) -> None:
    """One run in this process (of ``checkout``'s posenc_spec and tests, when given); prints
    each target's verdict and failed checks as JSON."""
    if checkout:
        sys.path.insert(0, checkout)
    from posenc_spec.gate.engine import check_many
    from posenc_spec.gate.options import run_options

    made, modules = declarations()
    reports = check_many(list(made.values()), run_options(jobs=jobs, preload=modules if preload else ()))
    print(json.dumps({name: [report.conforms, sorted(check.name for check in report.failures())]
                      for name, report in zip(made, reports, strict=True)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--baseline", metavar="DIR",
                        help="also run, without --preload, another checkout's posenc_spec (a figure from before)")
    parser.add_argument("--run", choices=("learned", "preload"), help=argparse.SUPPRESS)
    parser.add_argument("--checkout", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.run:
        run(arguments.run == "preload", arguments.jobs, arguments.checkout)
        return
    verdicts = {}

    def action(mode, checkout=None):
        def go():
            command = [sys.executable, __file__, "--run", mode, "--jobs", str(arguments.jobs),
                       *(("--checkout", checkout) if checkout else ())]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            verdicts.setdefault((mode, checkout), []).append(json.loads(done.stdout.splitlines()[-1]))
        return go

    actions = {"no --preload": action("learned"), "right --preload": action("preload")}
    if arguments.baseline:
        actions["baseline, none"] = action("learned", str(Path(arguments.baseline).resolve()))
    times = seconds_in_rounds(actions, arguments.repeats)
    print(f"{len(verdicts[('learned', None)][0])} targets, {arguments.jobs} lane(s), {arguments.repeats} rounds")
    for name, seconds in times.items():
        print(f"  {name:16} median {statistics.median(seconds):7.1f} s  ({', '.join(f'{s:.1f}' for s in seconds)})")
    for name in [name for name in times if name != "right --preload"]:
        ratio = median_by_round(lambda mine, theirs: mine / theirs, times[name], times["right --preload"])
        print(f"  {name} / right --preload: {ratio:.2f}x (the median of the rounds' ratios)")
    # Every run of this checkout must agree; a baseline is another revision, whose grid and
    # checks may differ by design: its agreement is said, not required.
    ours = verdicts[("learned", None)][0]
    same = all(run == ours for run in verdicts[("learned", None)] + verdicts[("preload", None)])
    print(f"  verdicts and failed checks, every run without --preload and with the right one: "
          f"{'the same' if same else 'DIFFER'}")
    if arguments.baseline:
        baseline = verdicts[("learned", str(Path(arguments.baseline).resolve()))][0]
        agree = sum(baseline.get(name) == verdict for name, verdict in ours.items())
        print(f"  the baseline's verdicts and failed checks: the same for {agree} of this checkout's {len(ours)} "
              "targets (another revision: its targets, grid and checks may differ)")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
