"""What the gate costs per correct target of each family and API: one more target in a run
(the default), and one target alone in a fresh command beyond its imports (``--first``).

    python benchmarks/bench_family_cost.py [--repeats 3] [--corpus NAME ...] [--exclude ID ...] [--jobs N ...]
                                           [--per-entry]
    python benchmarks/bench_family_cost.py --first [--repeats 5] [--corpus NAME ...] [--exclude ID ...] [--jobs N ...]

**One more target** (the default): each corpus's correct entries of one API checked in one
run, in this process, after a first run that started the root template and imported the
entries' modules (as in any later run of a process that keeps them: the pytest plugin, the
Python API). The expected values that first run computed stay in the families' caches (where
a family keeps them) and are reused, as a later target of the same grid in one run reuses
them; ``--first --jobs`` gives a fresh run's figure. Each line is one family's
API: the median over ``--repeats`` runs of its correct entries, divided by their number (the
mean cost of a target, its grid, sequences and judging included, and a share of the run's
own: its module templates' imports): the wall seconds, the slowdown the machine's load caused
meanwhile (a fixed piece of Python's wall over CPU time, ``record_seconds.probe_slowdown``,
before and after), the wall seconds divided by it (what an idle machine would take), and this
process's CPU seconds (planning the calls, computing the expected values, judging: the
children's are not in it). Then the *marginal* target, what one more target adds to a run:
each run is paired with one of every entry twice over (each declared a second time, a target
of its own in the run), and the difference of the two, over the entries, is what the second
copies cost, the run's own costs cancelled (wall, and divided by the slowdown: idle). An API
with one correct entry gets a figure too.

- ``--jobs N`` (repeatable; ``default``: the run's default, the usable cores): the runs
  with N lanes, one line per API and N (default: ``--jobs 1``).
- ``--per-entry``: each entry's own turn (its report's seconds, divided by the run's
  slowdown; the median over the runs), and of those the median and the slowest entry: one
  heavy entry dominates a mean.

**One target beyond imports** (``--first``): for each API one typical correct target
(:data:`TYPICAL`, else the corpus's first correct entry of that API), written as a one-target
``[[targets]]`` config into a folder of its own and checked as a user runs it, ``python -m
posenc_spec check --config FILE`` in a fresh Python, beside ``python -c "import numpy, torch,
MODULE"`` (MODULE: the target's module) and ``python -c "import numpy, torch"``
(``timing.IMPORT_FLOOR``), each in a fresh Python. The commands of every API take turns in
rounds (``timing``: a drift of the machine's speed falls on all alike); each line gives the
medians of the check and of the two imports, the slowdown (probed before and after each
API's commands), and the medians of the rounds' differences (the cost beyond the imports),
each divided by the slowdown in parentheses. Both floors, because a corpus module is not a
user's: importing it registers the corpus's entries, which imports the gate and declares
each entry, in the floor and in the target's child alike (a user's dependency-free module
imports NumPy and torch alone). With ``--jobs N`` (repeatable, ``default`` as
above), each round also checks every correct entry of the API in one fresh ``check
--config`` run with N lanes: the marginal target is that run's wall less the one target's,
over the entries less one, round by round (imports, the template's start and the run's
fixed costs cancel; expected values are computed as a real run computes them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record_seconds import probe_slowdown
from timing import IMPORT_FLOOR

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus.every import every_corpus  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.identify import toml_text  # noqa: E402
from posenc_spec.gate.options import run_options, usable_cores  # noqa: E402

# (corpus, API) -> the entry ``--first`` times instead of the corpus's first correct entry of
# the API, and why it is the typical one.
TYPICAL = {
    ("sinusoidal", "table"): ("tf_tutorial_angle_rates",
                              "a function of (positions, dim) returning the table, as most code writes it; the "
                              "first entry builds a module and applies it to zeros"),
    ("alibi", "alibi-bias"): ("llm_foundry_build_alibi_bias",
                              "llm-foundry's bias builder, a function of heads and length as most bias code is; "
                              "the first entry is a flex-attention score_mod"),
}


def correct_by_api(only: list[str] | None, excluded: list[str] | None = None) -> list[tuple[str, str, list]]:
    """``(corpus, API, correct entries)`` of every corpus (``only``: of these corpora), in
    order, but the entries whose ids ``excluded`` names."""
    groups = []
    for name, entries, _ in every_corpus():
        if only and name not in only:
            continue
        by_api: dict[str, list] = {}
        for entry in entries:
            if entry.kind == "correct" and entry.id not in (excluded or ()):
                by_api.setdefault(entry.declaration().api, []).append(entry)
        groups.extend((name, api, listed) for api, listed in sorted(by_api.items()))
    return groups


def lanes(text: str) -> int:
    """A ``--jobs`` value: a number of lanes, or ``default`` (the usable cores, as a run takes)."""
    return usable_cores() if text == "default" else run_options(jobs=text).jobs


def _timed(declarations, jobs: int) -> tuple[float, float, float, list[float]]:
    """``(wall, slowdown, CPU, each target's turn)`` seconds of one run of ``declarations``."""
    before = probe_slowdown()
    wall, cpu = time.perf_counter(), time.process_time()
    reports = check_many(declarations, run_options(jobs=jobs))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, (before + probe_slowdown()) / 2, cpu, [report.seconds for report in reports]


def one_more_target(args) -> None:
    """The default: the mean cost of one more target per API (and its entries' own, ``--per-entry``)."""
    jobs = list(dict.fromkeys(lanes(value) for value in args.jobs)) if args.jobs else [1]
    print("family/API                 targets " + ("lanes " if args.jobs else "")
          + " wall s  slowdown  idle s  gate CPU s  marginal s  idle marginal s"
          + ("  entry median s  slowest s  (slowest entry)" if args.per_entry else "")
          + f"   (a target, median of {args.repeats})")
    for name, api, entries in correct_by_api(args.corpus, args.exclude):
        declarations = [entry.declaration() for entry in entries]
        warm = check_many(declarations, run_options(jobs=1))  # the template and the entries' modules, once
        if not all(report.conforms for report in warm):
            print(f"{name}/{api}: a correct entry does not conform; not timed")
            continue
        for lane_count in jobs:
            runs, doubled = [], []
            for _ in range(args.repeats):  # taking turns: a drift of the machine's speed falls on both
                runs.append(_timed(declarations, lane_count))
                doubled.append(_timed(declarations * 2, lane_count))
            count = len(declarations)
            wall = statistics.median(run[0] for run in runs) / count
            slowdown = statistics.median(run[1] for run in runs)
            idle = statistics.median(run[0] / run[1] for run in runs) / count
            cpu = statistics.median(run[2] for run in runs) / count
            marginal = statistics.median(twice[0] - once[0] for once, twice in zip(runs, doubled, strict=True)) / count
            idle_marginal = statistics.median(twice[0] / twice[1] - once[0] / once[1]
                                              for once, twice in zip(runs, doubled, strict=True)) / count
            line = (f"{name + '/' + api:26s} {count:7d} " + (f"{lane_count:5d} " if args.jobs else "")
                    + f"{wall:7.3f} {slowdown:9.2f} {idle:7.3f} {cpu:11.3f} {marginal:11.3f} {idle_marginal:16.3f}")
            if args.per_entry:
                own = [statistics.median(run[3][index] / run[1] for run in runs) for index in range(count)]
                slowest = max(range(count), key=own.__getitem__)
                line += f" {statistics.median(own):15.3f} {own[slowest]:10.3f}  ({entries[slowest].id})"
            print(line)


def typical(name: str, api: str, entries: list):
    """The entry ``--first`` times for the API, and why (:data:`TYPICAL`, else the first)."""
    chosen, why = TYPICAL.get((name, api), (entries[0].id, "the corpus's first correct entry of the API"))
    return next(entry for entry in entries if entry.id == chosen), why


def config_text(entries) -> str:
    """The entries as ``[[targets]]`` tables, as each entry declares itself (a key under a
    former name too: the run reads it as the current one, values included, with a note)."""
    return "\n".join("[[targets]]\n" + "\n".join(toml_text.lines(entry.config_table())) + "\n" for entry in entries)


def _command(command: list[str], folder: Path) -> float:
    """Wall seconds of ``command`` run in ``folder``, the repository on its import path; it must succeed."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{(done.stdout + done.stderr)[-1500:]}")
    return seconds


def _fresh_commands(folder: Path, label: str, entry, entries: list, jobs: list[int]) -> dict[str, list[str]]:
    """The commands of one API a round runs: the imports, the one target, and every correct
    entry in one run with each number of ``jobs`` (where the API has more than one)."""
    check = [sys.executable, "-m", "posenc_spec", "check", "--config"]
    one, every = folder / f"{label.replace('/', '_')}.toml", folder / f"{label.replace('/', '_')}_every.toml"
    one.write_text(config_text([entry]))
    every.write_text(config_text(entries))
    commands = {"torch": IMPORT_FLOOR, "imports": [sys.executable, "-c", f"import numpy, torch, {entry.module}"],
                "one": [*check, str(one)]}
    if len(entries) > 1:
        commands.update({f"every -j {count}": [*check, str(every), "-j", str(count)] for count in jobs})
    return commands


def first_target(args) -> None:
    """``--first``: one typical target per API in a fresh command, beyond its imports (and
    with ``--jobs``, the marginal target of a fresh run of every correct entry)."""
    jobs = list(dict.fromkeys(lanes(value) for value in args.jobs or ()))  # each number of lanes once
    chosen = []
    for name, api, entries in correct_by_api(args.corpus, args.exclude):
        entry, why = typical(name, api, entries)
        chosen.append((f"{name}/{api}", entry, why, entries))
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / ".git").mkdir()  # the search for a pyproject.toml stops here
        commands = {label: _fresh_commands(folder, label, entry, entries, jobs) for label, entry, _, entries in chosen}
        for command in (command for of_api in commands.values() for command in of_api.values()):
            _command(command, folder)  # untimed: compiled bytecode and the file cache, once
        # label -> one dict per round: command name -> wall seconds, and "slowdown"
        rounds: dict[str, list[dict[str, float]]] = {label: [] for label in commands}
        for _ in range(args.repeats):
            for label, of_api in commands.items():
                before = probe_slowdown()
                times = {name: _command(command, folder) for name, command in of_api.items()}
                rounds[label].append({**times, "slowdown": (before + probe_slowdown()) / 2})

    def median(label, figure):
        return statistics.median(figure(times) for times in rounds[label])

    print(f"one target, a fresh command each; medians of {args.repeats} rounds")
    print("family/API                 check s  torch s  +module s  slowdown  beyond torch s (idle)  "
          "beyond +module s (idle)  entry")
    for label, entry, _, _ in chosen:
        beyond_torch = f"{median(label, lambda t: t['one'] - t['torch']):.3f} " \
                       f"({median(label, lambda t: (t['one'] - t['torch']) / t['slowdown']):.3f})"
        beyond_module = f"{median(label, lambda t: t['one'] - t['imports']):.3f} " \
                        f"({median(label, lambda t: (t['one'] - t['imports']) / t['slowdown']):.3f})"
        print(f"{label:26s} {median(label, lambda t: t['one']):7.2f} {median(label, lambda t: t['torch']):8.2f} "
              f"{median(label, lambda t: t['imports']):10.2f} {median(label, lambda t: t['slowdown']):9.2f}  "
              f"{beyond_torch:>21s}  {beyond_module:>23s}  {entry.id}")
    if jobs:
        print("one more target in a fresh run of every correct entry: (that run - the one target) / (entries - 1)")
        print("family/API                 targets lanes   run s  marginal s  idle marginal s")
        for label, _, _, entries in chosen:
            for lane_count in jobs if len(entries) > 1 else ():
                key = f"every -j {lane_count}"
                run = [times[key] for times in rounds[label]]
                marginal = [(times[key] - times["one"]) / (len(entries) - 1) for times in rounds[label]]
                idle = [(times[key] - times["one"]) / (len(entries) - 1) / times["slowdown"] for times in rounds[label]]
                print(f"{label:26s} {len(entries):7d} {lane_count:5d} {statistics.median(run):7.2f} "
                      f"{statistics.median(marginal):11.3f} {statistics.median(idle):16.3f}")
    print("why these entries:")
    for label, entry, why, _ in chosen:
        print(f"  {label}: {entry.id}: {why}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs (rounds, with --first) per figure; the median "
                        "is reported")
    parser.add_argument("--corpus", action="append", choices=[name for name, _, _ in every_corpus()], default=None,
                        help="only this corpus (repeatable; default: every corpus)")
    parser.add_argument("--jobs", action="append", metavar="N", help="lanes of the run (repeatable; 'default': "
                        "the usable cores; default: 1); with --first, a fresh run of every correct entry with N lanes")
    parser.add_argument("--exclude", action="append", metavar="ID", default=None,
                        help="leave out the correct entry of this id (repeatable): one whose own calls dominate a "
                             "mean (BaichuanFutureMask builds 12 x 2050 x 2050 masks)")
    parser.add_argument("--per-entry", action="store_true", help="each entry's own turn: the median and the slowest")
    parser.add_argument("--first", action="store_true", help="one typical target per API in a fresh command, "
                        "beyond importing numpy, torch and its module")
    args = parser.parse_args(argv)
    if args.first and args.per_entry:
        parser.error("--per-entry is the default mode's: a fresh run's first turn waits for its template")
    if args.first:
        first_target(args)
    else:
        one_more_target(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
