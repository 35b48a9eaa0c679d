"""The gate's mutation score on the corpus: kill rate, false-alarm rate, survivors, false alarms.

Runs the gate once over every corpus entry (``meta_tests/corpus``), each under the convention
it declares, and prints:

- the kill rate: wrong implementations the gate rejects, out of all wrong ones;
- the false-alarm rate: correct implementations the gate rejects, out of all correct ones;
- every survivor (with its bug and where the bug was seen) and every false alarm (with the
  checks that failed);
- per bug class, how many of its wrong implementations were killed, and which kind of check
  killed each one first.

Exit status 0 only at a 100% kill rate and a 0% false-alarm rate, 1 otherwise. Run from the
repository root::

    python benchmarks/mutation_score.py [--json FILE] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the corpus lives in meta_tests/, beside this folder
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus import BUG_CLASSES, CORRECT, ENTRIES, WRONG  # noqa: E402
from posenc_spec.gate import check_many  # noqa: E402


def check_kind(name: str) -> str:
    """``formula[4096x1024]`` -> ``formula``."""
    return name.split("[", 1)[0]


def score(reports_by_id: dict) -> dict:
    """Rates, survivors and false alarms from the reports, keyed by entry id."""
    survivors = [entry for entry in WRONG if reports_by_id[entry.id].conforms or not reports_by_id[entry.id].importable]
    false_alarms = [entry for entry in CORRECT if not reports_by_id[entry.id].conforms]
    killed_by = {entry.id: check_kind(reports_by_id[entry.id].failures()[0].name)
                 for entry in WRONG if entry not in survivors}
    per_class = {}
    for name in BUG_CLASSES:
        members = [entry for entry in WRONG if name in entry.bug_classes]
        per_class[name] = (sum(entry not in survivors for entry in members), len(members))
    return {
        "wrong": len(WRONG), "correct": len(CORRECT),
        "killed": len(WRONG) - len(survivors), "false_alarms": len(false_alarms),
        "kill_rate": (len(WRONG) - len(survivors)) / len(WRONG),
        "false_alarm_rate": len(false_alarms) / len(CORRECT),
        "survivors": survivors, "false_alarm_entries": false_alarms,
        "killed_by": killed_by, "per_class": per_class,
    }


def print_score(result: dict, reports_by_id: dict, seconds: float, verbose: bool) -> None:
    print(f"corpus: {result['wrong']} wrong and {result['correct']} correct implementations "
          f"({result['wrong'] + result['correct']} targets), one gate run of {seconds:.1f} s")
    print(f"kill rate:        {result['killed']}/{result['wrong']} = {100 * result['kill_rate']:.1f}%")
    print(f"false-alarm rate: {result['false_alarms']}/{result['correct']} = "
          f"{100 * result['false_alarm_rate']:.1f}%")
    print()
    print(f"survivors ({len(result['survivors'])}):" + ("" if result["survivors"] else " none"))
    for entry in result["survivors"]:
        report = reports_by_id[entry.id]
        status = "passed every check" if report.importable else "did not import"
        print(f"  {entry.id}  [{', '.join(entry.bug_classes)}]  {entry.describe_convention()}: {status}")
        print(f"      bug: {entry.description}")
        if entry.seen_in:
            print(f"      seen in: {entry.seen_in}")
    print(f"false alarms ({len(result['false_alarm_entries'])}):" + ("" if result["false_alarm_entries"] else " none"))
    for entry in result["false_alarm_entries"]:
        failures = reports_by_id[entry.id].failures()
        print(f"  {entry.id}  {entry.describe_convention()}: {len(failures)} failed check(s)")
        for check in failures[:3]:
            print(f"      {check.name}: {check.message}")
    print()
    print("kills per bug class:")
    for name, (killed, total) in result["per_class"].items():
        print(f"  {name:20s} {killed:3d}/{total:<3d} {BUG_CLASSES[name]}")
    print()
    kinds = Counter(result["killed_by"].values())
    print("first failing check of each killed implementation: "
          + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()))
    if verbose:
        print()
        for entry in WRONG:
            if entry.id in result["killed_by"]:
                first = reports_by_id[entry.id].failures()[0]
                print(f"  {entry.id:36s} {first.name}: {first.message[:150]}")


def as_json(result: dict, reports_by_id: dict, seconds: float) -> dict:
    def brief(entry):
        return {"id": entry.id, "target": entry.target, "declared": entry.describe_convention(),
                "description": entry.description, "seen_in": entry.seen_in, "bug_classes": list(entry.bug_classes)}

    return {
        "seconds": seconds, "wrong": result["wrong"], "correct": result["correct"],
        "kill_rate": result["kill_rate"], "false_alarm_rate": result["false_alarm_rate"],
        "survivors": [brief(entry) for entry in result["survivors"]],
        "false_alarms": [dict(brief(entry), failures=[check.as_dict() for check in
                                                      reports_by_id[entry.id].failures()])
                         for entry in result["false_alarm_entries"]],
        "killed_by": result["killed_by"],
        "per_class": {name: {"killed": killed, "total": total}
                      for name, (killed, total) in result["per_class"].items()},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the score as JSON")
    parser.add_argument("--verbose", action="store_true", help="list the first failing check of every kill")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    reports = check_many([entry.gate_spec() for entry in ENTRIES])
    seconds = time.perf_counter() - start
    reports_by_id = {entry.id: report for entry, report in zip(ENTRIES, reports, strict=True)}
    result = score(reports_by_id)
    print_score(result, reports_by_id, seconds, args.verbose)
    if args.json:
        Path(args.json).write_text(json.dumps(as_json(result, reports_by_id, seconds), indent=2) + "\n")
    perfect = result["kill_rate"] == 1.0 and result["false_alarm_rate"] == 0.0
    print()
    print("mutation score: " + ("100% killed, 0% false alarms" if perfect else "BELOW the required 100% / 0%"))
    return 0 if perfect else 1


if __name__ == "__main__":
    sys.exit(main())
