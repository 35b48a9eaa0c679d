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
call made (no ``--fail-fast``): one line per entry, ``{"target": ..., "report": ...}`` with
the report's ``seconds`` taken out and the checkout's folder written ``<checkout>`` (the
reports name the entries' files), keyed by the entry's target (``module:id``: corpora share
some ids, ``sign_flipped`` among them). A recording of an earlier version of this script,
keyed ``{"id": ...}`` by the id alone, is compared by id, the entries whose id more than one
corpus uses left out and counted. Exit status 0 when every recorded report is the same (or
recorded), 1 naming the first entries that differ; entries the recording does not hold (a
corpus or an entry added since) are counted apart, not compared.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import re
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
CHECKOUT = "<checkout>"  # the repository's folder, as the reports are recorded
# The folder of the checkout a report was made in: the entries' files are in its meta_tests/.
RECORDED_CHECKOUT = re.compile(r'"file": "([^"]*)/meta_tests/')


def reports(jobs: int, corpora=None) -> dict[str, str]:
    """Entry target (``module:id``) -> its JSON report entry, as text, without its seconds
    (``corpora``: only these corpora's entries; None: every corpus)."""
    entries = [entry for name, corpus, _ in every_corpus() if corpora is None or name in corpora for entry in corpus]
    made = check_many([entry.declaration() for entry in entries], run_options(jobs=jobs))
    texts = {}
    for position, (entry, report) in enumerate(zip(entries, made, strict=True)):
        data = json_report.target_entry(report, position)
        data.pop("seconds", None)
        texts[entry.target] = json.dumps(data, sort_keys=True, indent=1).replace(str(ROOT), CHECKOUT)
    return texts


def read_recording(path: str) -> tuple[dict[str, str], bool]:
    """The recorded reports by key, and whether they are keyed by the entry's id alone (a
    recording of an earlier version of this script)."""
    recorded, by_id, folder = {}, False, None
    with open(path) as recording:
        for line in recording:
            item = json.loads(line)
            by_id = by_id or "target" not in item
            recorded[item.get("target", item.get("id"))] = item["report"]
            folder = folder or next(iter(RECORDED_CHECKOUT.findall(item["report"])), None)
    if folder and folder != CHECKOUT:  # recorded by an earlier version of this script, with the folder's path
        recorded = {key: text.replace(folder, CHECKOUT) for key, text in recorded.items()}
    return recorded, by_id


def keyed_by_id(made: dict[str, str], recorded: dict[str, str]) -> tuple[dict[str, str], dict[str, str], int]:
    """``made`` and ``recorded`` keyed by the entry's id alone, the ids more than one corpus
    entry has left out of both (a recording by id kept one report of them, whichever came
    last), and how many made entries that leaves out."""
    shared = collections.Counter(entry.id for _, corpus, _ in every_corpus() for entry in corpus)

    def entry_id(target: str) -> str:
        return target.rpartition(":")[2]

    kept = {entry_id(target): text for target, text in made.items() if shared[entry_id(target)] == 1}
    return kept, {key: text for key, text in recorded.items() if shared[key] <= 1}, len(made) - len(kept)


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
            for target, text in made.items():
                out.write(json.dumps({"target": target, "report": text}) + "\n")
        print(f"{len(made)} reports recorded in {args.record}")
        return 0
    recorded, by_id = read_recording(args.compare)
    left_out = 0
    if by_id:
        made, recorded, left_out = keyed_by_id(made, recorded)
    unrecorded = sorted(made.keys() - recorded.keys())
    if args.corpus:  # a recording of every corpus, compared on some: the others were not made
        recorded = {key: text for key, text in recorded.items() if key in made}
    differing = [key for key in recorded if recorded[key] != made.get(key)]
    for key in sorted(differing)[:SHOWN]:
        print(f"{key}:")
        was, now = recorded.get(key, "").splitlines(), made.get(key, "").splitlines()
        print("\n".join(list(difflib.unified_diff(was, now, "recorded", "now", lineterm="", n=1))[:40]))
    print(f"{len(recorded) - len(differing)} of {len(recorded)} recorded reports the same byte for byte"
          + (f"; {len(unrecorded)} not in the recording" if unrecorded else "")
          + (f"; {left_out} not compared (a recording by id, and ids more than one corpus uses)" if left_out else ""))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
