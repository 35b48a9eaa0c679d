"""What one correct JAX target costs the gate beyond JAX's import and XLA's compilation.

Three figures, each the median of ``--repeats`` runs:

- the gate's turn of a correct jitted JAX table (meta_tests/hostile/framework_targets.py:
  jax_vaswani, ``framework = "jax"``), with JAX preloaded into the template (its import is
  not the turn's);
- the turn of its NumPy twin (hostile_tables.vaswani_table): what any target costs;
- XLA's compilation of the same calls, measured here in one process: the first call of each
  shape the JAX target's report names (every ``NxD`` in its checks' messages: the grid's
  tables, the degenerate ones and ``grow``'s), less its second call.

The JAX target's cost beyond imports and compilation is the first less the third; beyond a
NumPy target's, less the second too. Run: ``python benchmarks/bench_framework_cost.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import compilation_seconds  # noqa: E402

from meta_tests.hostile import target  # noqa: E402
from posenc_spec.gate.declaration import declare  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402

KEYS = {"api": "table", "convention": "vaswani", "odd": "skip"}


def turns(repeats: int) -> tuple[list[float], list[float], set[tuple[int, int]]]:
    jax_target = declare({"target": target("framework_targets", "jax_vaswani"), "framework": "jax", **KEYS})
    numpy_target = declare({"target": target("hostile_tables", "vaswani_table"), **KEYS})
    options = run_options(jobs=1, preload=("jax",))
    jax_seconds, numpy_seconds, shapes = [], [], set()
    for _ in range(repeats):
        jax_report, numpy_report = check_many([jax_target, numpy_target], options)
        assert jax_report.conforms and numpy_report.conforms
        jax_seconds.append(jax_report.seconds)
        numpy_seconds.append(numpy_report.seconds)
        shapes |= called_shapes(jax_report)
    return jax_seconds, numpy_seconds, shapes


def called_shapes(report) -> set[tuple[int, int]]:
    """Every ``NxD`` table the report's checks name: the shapes the child called the target with."""
    return {(int(length), int(width)) for check in report.checks
            for length, width in re.findall(r"\b(\d+)x(\d+)\b", f"{check.name} {check.message}")}


def compilation(shapes) -> float:
    """Seconds XLA spends compiling the table for ``shapes`` in a fresh jit cache."""
    import jax

    sys.path.insert(0, str(ROOT / "meta_tests" / "hostile"))
    from framework_targets import _jax_vaswani

    jax.clear_caches()  # each repeat compiles anew, as each sealed child does
    return compilation_seconds(jax.jit(_jax_vaswani, static_argnums=(0, 1)), shapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    jax_seconds, numpy_seconds, shapes = turns(args.repeats)
    compile_seconds = statistics.median(compilation(sorted(shapes)) for _ in range(args.repeats))
    jax_turn, numpy_turn = statistics.median(jax_seconds), statistics.median(numpy_seconds)
    print(f"JAX target's turn (JAX preloaded): {jax_turn:.3f} s  {[round(x, 3) for x in jax_seconds]}")
    print(f"NumPy twin's turn:                 {numpy_turn:.3f} s  {[round(x, 3) for x in numpy_seconds]}")
    print(f"XLA compilation of its {len(shapes)} shapes: {compile_seconds:.3f} s")
    print(f"beyond imports and compilation:    {jax_turn - compile_seconds:.3f} s "
          f"({jax_turn - compile_seconds - numpy_turn:+.3f} s against the NumPy twin)")
    print(f"load average at the start: {load:.2f} on {os.cpu_count()} cores")

if __name__ == "__main__":
    main()
