"""The gate's mutation score on the corpora: kill rate, false-alarm rate, survivors, false alarms.

Runs the gate once over every entry of every corpus (``meta_tests/corpus``: sinusoidal
tables and timestep embeddings; rotary embeddings; stateful code, whose bugs show in the
order of calls; 2-D sincos tables; T5 relative-position buckets; ALiBi biases), each under
the declaration it registers, and prints per corpus:

- the kill rate: wrong implementations the gate rejects, out of all wrong ones;
- the false-alarm rate: correct implementations the gate rejects, out of all correct ones;
- the survivors and false alarms, with their bug and where it was seen;
- kills per bug class, and which check rejected each wrong implementation first;
- the kills only a call sequence or the aliasing check made (every check of the grid
  passed: the grid alone, as the gate was before them, lets these through).

Exit status 0 only at 100% killed and 0% false alarms (``tox -e mutation``)::

    python benchmarks/mutation_score.py [--json FILE] [--verbose] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus.every import every_corpus  # noqa: E402
from posenc_spec.gate.declaration import declare  # noqa: E402
from posenc_spec.gate.engine import check_many, sequence_probes  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402


@dataclass(frozen=True)
class Corpus:
    name: str
    entries: tuple
    bug_classes: dict

    @property
    def wrong(self):
        return [entry for entry in self.entries if entry.kind == "wrong"]

    @property
    def correct(self):
        return [entry for entry in self.entries if entry.kind == "correct"]


CORPORA = tuple(Corpus(*corpus) for corpus in every_corpus())


def beyond_the_grid(report) -> bool:
    """Whether only the call sequences or the aliasing check failed the target: every check of
    the grid passed, as the grid was played before them."""
    played = {probe.check_id for probe in sequence_probes(report.declaration)} | {"aliasing"}
    failed = {check.name for check in report.failures()}
    return bool(failed) and failed <= played


def score(corpus: Corpus, reports: dict) -> dict:
    """Rates, survivors and false alarms of one corpus from the reports, keyed by entry id."""
    survivors = [entry for entry in corpus.wrong if reports[entry.id].status != "does-not-conform"]
    false_alarms = [entry for entry in corpus.correct if reports[entry.id].status != "conforms"]
    killed_by = {entry.id: reports[entry.id].failures()[0].name.split("[", 1)[0]
                 for entry in corpus.wrong if entry not in survivors}
    per_class = {name: (sum(entry not in survivors for entry in members), len(members))
                 for name in corpus.bug_classes
                 for members in [[entry for entry in corpus.wrong if name in entry.bug_classes]]}
    wrong, correct = len(corpus.wrong), len(corpus.correct)
    sequences_only = [entry.id for entry in corpus.wrong if beyond_the_grid(reports[entry.id])]
    return {"wrong": wrong, "correct": correct, "killed": wrong - len(survivors), "false_alarms": len(false_alarms),
            "killed_by_sequences_only": sequences_only,
            "kill_rate": (wrong - len(survivors)) / wrong, "false_alarm_rate": len(false_alarms) / correct,
            "survivors": survivors, "false_alarm_entries": false_alarms, "killed_by": killed_by,
            "per_class": per_class}


def print_score(corpus: Corpus, result: dict, reports: dict, verbose: bool) -> None:
    print(f"{corpus.name} corpus: {result['wrong']} wrong and {result['correct']} correct implementations")
    print(f"  kill rate:        {result['killed']}/{result['wrong']} = {100 * result['kill_rate']:.1f}%")
    print(f"  false-alarm rate: {result['false_alarms']}/{result['correct']} = {100 * result['false_alarm_rate']:.1f}%")
    print(f"  survivors ({len(result['survivors'])}):" + ("" if result["survivors"] else " none"))
    for entry in result["survivors"]:
        print(f"    {entry.id}  [{', '.join(entry.bug_classes)}]  {entry.describe()}: {reports[entry.id].status}")
        print(f"        bug: {entry.description}" + (f" (seen in {entry.seen_in})" if entry.seen_in else ""))
    alarms = result["false_alarm_entries"]
    print(f"  false alarms ({len(alarms)}):" + ("" if alarms else " none"))
    for entry in result["false_alarm_entries"]:
        for check in reports[entry.id].failures()[:3]:
            print(f"    {entry.id}: {check.name}: {check.message}")
    print("  kills per bug class:")
    for name, (killed, total) in result["per_class"].items():
        print(f"    {name:24s} {killed:3d}/{total:<3d} {corpus.bug_classes[name]}")
    kinds = Counter(result["killed_by"].values())
    print("  first failing check of each kill: " + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()))
    only = result["killed_by_sequences_only"]
    print(f"  killed only by a call sequence or aliasing (the grid passed them): {len(only)}"
          + (f" ({', '.join(only)})" if verbose and only else ""))
    if verbose:
        for entry in corpus.wrong:
            if entry.id in result["killed_by"]:
                first = reports[entry.id].failures()[0]
                print(f"    {entry.id:40s} {first.name}: {first.message[:140]}")


def as_json(result: dict) -> dict:
    def brief(entry):
        return {"id": entry.id, "target": entry.target, "declared": entry.describe(), "description": entry.description,
                "seen_in": entry.seen_in, "bug_classes": list(entry.bug_classes)}

    return {"wrong": result["wrong"], "correct": result["correct"], "kill_rate": result["kill_rate"],
            "false_alarm_rate": result["false_alarm_rate"], "survivors": [brief(e) for e in result["survivors"]],
            "false_alarms": [brief(e) for e in result["false_alarm_entries"]], "killed_by": result["killed_by"],
            "killed_by_sequences_only": result["killed_by_sequences_only"],
            "per_class": {name: {"killed": k, "total": t} for name, (k, t) in result["per_class"].items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the scores as JSON")
    parser.add_argument("--verbose", action="store_true", help="list the first failing check of every kill")
    parser.add_argument("--jobs", default=None, help="targets checked at once (default: the usable cores)")
    parser.add_argument("--corpus", action="append", choices=[corpus.name for corpus in CORPORA], default=None,
                        help="score only this corpus (repeatable; default: every corpus)")
    args = parser.parse_args(argv)
    perfect, data = True, {}
    for corpus in CORPORA:
        if args.corpus and corpus.name not in args.corpus:
            continue
        start = time.perf_counter()
        declarations = [declare(entry.config_table()) for entry in corpus.entries]
        reports = dict(zip((entry.id for entry in corpus.entries),
                           check_many(declarations, run_options(jobs=args.jobs)), strict=True))
        seconds = time.perf_counter() - start
        result = score(corpus, reports)
        print_score(corpus, result, reports, args.verbose)
        print(f"  one gate run of {seconds:.1f} s ({seconds / len(corpus.entries):.3f} s a target)\n")
        data[corpus.name] = {**as_json(result), "seconds": seconds}
        perfect = perfect and result["kill_rate"] == 1.0 and result["false_alarm_rate"] == 0.0
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    print("mutation score: " + ("100% killed, 0% false alarms" if perfect else "BELOW the required 100% / 0%"))
    return 0 if perfect else 1


if __name__ == "__main__":
    sys.exit(main())
