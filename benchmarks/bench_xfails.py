"""The worst cases of xfails patterns: the glob matcher (posenc_spec.gate.xfails) beside the
regular-expression translation it replaced (``*`` as ``.*``, ``?`` as ``.``, compiled
through an lru_cache of 256 patterns, one ``fullmatch`` per entry and id).

    python benchmarks/bench_xfails.py [--repeats 5] [--old-budget 5]

1. One pattern of k stars and a character no id ends with (``*****!``) against an id of
   the plan: the regex backtracks through every way of splitting the id among the stars,
   so its time grows about as len(id)**k; the glob's stays linear. The old column stops
   at the first k whose single match takes more than ``--old-budget`` seconds.
2. A 1 MiB xfails file of distinct patterns, as the report uses it: every id of a plan
   matched and the entries no id matches found. The regex translation is timed on the
   first entries of the file and its time per entry scaled to the whole file (each entry
   compiled again and again: more than 256 distinct patterns defeat the cache).

Times are medians over the repeats (the regex's longest runs once).
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import time
from pathlib import Path

from timing import median_seconds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's posenc_spec, whatever is installed
    sys.path.insert(0, str(ROOT))

from posenc_spec.gate.declaration import declare  # noqa: E402
from posenc_spec.gate.engine import plan  # noqa: E402
from posenc_spec.gate.xfails import Glob, parse_xfails  # noqa: E402

PLAN = tuple(plan(declare({"target": "pkg.mod:fn"})))
ID = "formula[4096x1024]"


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern:
    return re.compile(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", "."))


def regex_report(patterns: list[str], ids) -> None:
    """What the report asked of the regex translation: each id's first entry, then the
    entries that match no id."""
    for check_id in ids:
        next((pattern for pattern in patterns if _regex(pattern).fullmatch(check_id)), None)
    [pattern for pattern in patterns if not any(_regex(pattern).fullmatch(check_id) for check_id in ids)]


def glob_report(text: str, ids) -> None:
    xfails = parse_xfails(text, "bench.txt")
    xfails.unmatched_warning(ids)
    for check_id in ids:
        xfails.match(check_id)


def distinct_patterns(size: int) -> list[str]:
    """Distinct patterns filling ``size`` bytes: literals, stars and question marks in turn."""
    makers = (lambda n: f"formula[{n}x*]", lambda n: "*" + "?".join(str(n)) + "*", lambda n: f"*{n}*!*")
    lines, total = [], 0
    while total < size:
        lines.append(makers[len(lines) % 3](len(lines)))
        total += len(lines[-1]) + 1
    return lines


def stars(repeats: int, budget: float) -> None:
    print(f"one pattern of k stars then '!', against {ID!r} (seconds per match)")
    print(f"{'k':>7} {'regex':>12} {'glob':>12}")
    regex_alive = True
    for k in (2, 4, 6, 8, 10, 12, 14, 16, 1000, 100_000):
        pattern = "*" * k + "!"
        glob = median_seconds(lambda pattern=pattern: Glob(pattern).matches(ID), repeats)
        old = "not run"
        if regex_alive:
            compiled = _regex(pattern)
            start = time.perf_counter()
            compiled.fullmatch(ID)
            seconds = time.perf_counter() - start
            old = f"{seconds:12.3g}"
            regex_alive = seconds < budget
        print(f"{k:>7} {old:>12} {glob:12.3g}")


def megabyte(repeats: int, budget: float) -> None:
    lines = distinct_patterns(1 << 20)
    text = "\n".join(lines) + "\n"
    glob = median_seconds(lambda: glob_report(text, PLAN), repeats)
    sample = 16
    while True:
        start = time.perf_counter()
        regex_report(lines[:sample], PLAN)
        seconds = time.perf_counter() - start
        if seconds > budget / 4 or sample >= len(lines):
            break
        sample *= 2
    scaled = seconds / sample * len(lines)
    print(f"\n1 MiB file of {len(lines)} distinct patterns, a plan of {len(PLAN)} ids:")
    print(f"  regex: {seconds:.3g} s for the first {sample} entries -> {scaled:.3g} s for the file (scaled)")
    print(f"  glob:  {glob:.3g} s for the file (parse, one pass for the unmatched entries, each id's first entry)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--old-budget", type=float, default=5.0,
                        help="seconds past which the regex translation is not run on the next case")
    args = parser.parse_args(argv)
    stars(args.repeats, args.old_budget)
    megabyte(args.repeats, args.old_budget)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
