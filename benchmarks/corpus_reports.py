"""The gate's JSON report of every corpus entry, recorded, or compared with a recording.

A change that moves code without meaning to change a verdict (a restructuring) must leave
every report byte for byte as it was: record the reports before it, compare after, on the
same machine (float results, and so the numbers in the reports, differ between CPUs). The
script checks the checkout it is in, whatever is installed: it puts its repository first on
the import path, and the gate's template imports ``posenc_spec`` from where the running one
lives. So the old revision is a second checkout, and each checkout runs its own script::

    git worktree add --detach /tmp/posenc-before REV    # or git archive REV | tar -x -C an empty folder
    python /tmp/posenc-before/benchmarks/corpus_reports.py --record /tmp/before.jsonl
    python benchmarks/corpus_reports.py --compare /tmp/before.jsonl

``--corpus NAME`` (repeatable) records or compares only those corpora's entries.

Every corpus (``meta_tests/corpus/every.py``), each entry under its own declaration, every
call made (no ``--fail-fast``): one line per entry, ``{"id": ..., "report": ...}`` with the
report's ``seconds`` taken out. Exit status 0 when every recorded report is the same (or
recorded), 1 naming the first entries that differ; entries the recording does not hold (a
corpus or an entry added since) are counted apart, not compared.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus.every import every_corpus  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402
from posenc_spec.gate.output import json_report  # noqa: E402

SHOWN = 5  # entries whose difference is printed


def reports(jobs: int, corpora=None) -> dict[str, str]:
    """Entry id -> its JSON report entry, as text, without its seconds (``corpora``: only
    these corpora's entries; None: every corpus)."""
    entries = [entry for name, corpus, _ in every_corpus() if corpora is None or name in corpora for entry in corpus]
    made = check_many([entry.declaration() for entry in entries], run_options(jobs=jobs))
    texts = {}
    for position, (entry, report) in enumerate(zip(entries, made, strict=True)):
        data = json_report.target_entry(report, position)
        data.pop("seconds", None)
        texts[entry.id] = json.dumps(data, sort_keys=True, indent=1)
    return texts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--record", metavar="FILE", help="write every entry's report")
    action.add_argument("--compare", metavar="FILE", help="compare every entry's report with a recording")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--corpus", action="append", choices=[name for name, _, _ in every_corpus()], default=None,
                        help="only this corpus (repeatable; default: every corpus)")
    args = parser.parse_args(argv)
    made = reports(args.jobs, args.corpus)
    if args.record:
        with open(args.record, "w") as out:
            for entry_id, text in made.items():
                out.write(json.dumps({"id": entry_id, "report": text}) + "\n")
        print(f"{len(made)} reports recorded in {args.record}")
        return 0
    recorded = {}
    with open(args.compare) as recording:
        for line in recording:
            item = json.loads(line)
            recorded[item["id"]] = item["report"]
    unrecorded = sorted(made.keys() - recorded.keys())
    if args.corpus:  # a recording of every corpus, compared on some: the others were not made
        recorded = {entry_id: text for entry_id, text in recorded.items() if entry_id in made}
    differing = [entry_id for entry_id in recorded if recorded[entry_id] != made.get(entry_id)]
    for entry_id in sorted(differing)[:SHOWN]:
        print(f"{entry_id}:")
        was, now = recorded.get(entry_id, "").splitlines(), made.get(entry_id, "").splitlines()
        print("\n".join(list(difflib.unified_diff(was, now, "recorded", "now", lineterm="", n=1))[:40]))
    print(f"{len(recorded) - len(differing)} of {len(recorded)} recorded reports the same byte for byte"
          + (f"; {len(unrecorded)} not in the recording" if unrecorded else ""))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
