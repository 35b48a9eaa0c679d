"""What big_vision's ``posemb_sincos_2d`` in JAX (spec_tests/real_targets/big_vision_posemb.py,
eager: no ``jax.jit``, as its callers outside a model call it) costs the gate beyond JAX's
import and XLA's compilation, beside its NumPy twin (meta_tests/corpus/sincos2d_correct.py:
big_vision_mgrid); and the turns of flaxformer's buckets (flaxformer_buckets.py) and a NumPy
twin (t5buckets_correct.numpy_float64) for comparison.

Each figure the median of ``--repeats`` runs, JAX and flax preloaded into the template (their
import is not a turn's). Compilation: eager JAX compiles each operation for each new shape;
measured here in one process as the first call less the second of every ``HxW:d=D`` the JAX
target's report names, the caches cleared before each repeat as each sealed child starts
with none. Run: ``python benchmarks/bench_transcribed_cost.py``.
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

from posenc_spec.gate.declaration import declare  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402

TARGETS = ROOT / "spec_tests" / "real_targets"
SINCOS2D = {"api": "sincos2d", "convention": "big-vision"}
BUCKETS = {"api": "t5-buckets", "max_positions": 2**31}
DECLARED = {
    "big_vision posemb_sincos_2d (JAX)": {"target": f"{TARGETS / 'big_vision_posemb.py'}:posemb_sincos_2d",
                                          **SINCOS2D},
    "big_vision_mgrid (NumPy twin)": {"target": "meta_tests.corpus.sincos2d_correct:big_vision_mgrid", **SINCOS2D},
    "flaxformer buckets (JAX)": {"target": f"{TARGETS / 'flaxformer_buckets.py'}:"
                                           "RelativePositionBiases._relative_position_bucket", **BUCKETS},
    "numpy_float64 buckets (NumPy twin)": {"target": "meta_tests.corpus.t5buckets_correct:numpy_float64", **BUCKETS},
}


def turns(repeats: int) -> tuple[dict[str, list[float]], set[tuple[int, int, int]]]:
    declarations = [declare(keys) for keys in DECLARED.values()]
    options = run_options(jobs=1, preload=("jax", "flax"))
    seconds: dict[str, list[float]] = {name: [] for name in DECLARED}
    shapes = set()
    for _ in range(repeats):
        reports = check_many(declarations, options)
        for name, report in zip(DECLARED, reports, strict=True):
            seconds[name].append(report.seconds)
        shapes |= {tuple(map(int, found)) for check in reports[0].checks
                   for found in re.findall(r"\b(\d+)x(\d+):d=(\d+)\b", f"{check.name} {check.message}")}
    return seconds, shapes


def compilation(shapes) -> float:
    """Seconds the first call of each shape takes beyond its second, in a fresh cache."""
    import jax

    sys.path.insert(0, str(TARGETS))
    from big_vision_posemb import posemb_sincos_2d

    jax.clear_caches()
    return compilation_seconds(posemb_sincos_2d, shapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    seconds, shapes = turns(args.repeats)
    compile_seconds = statistics.median(compilation(sorted(shapes)) for _ in range(args.repeats))
    for name, values in seconds.items():
        print(f"{name + ' turn:':48} {statistics.median(values):.3f} s  {[round(x, 3) for x in values]}")
    jax_turn = statistics.median(seconds["big_vision posemb_sincos_2d (JAX)"])
    numpy_turn = statistics.median(seconds["big_vision_mgrid (NumPy twin)"])
    print(f"XLA compilation of big_vision's {len(shapes)} shapes: {compile_seconds:.3f} s")
    print(f"big_vision beyond imports and compilation:     {jax_turn - compile_seconds:.3f} s "
          f"({jax_turn - compile_seconds - numpy_turn:+.3f} s against the NumPy twin)")
    print(f"load average at the start: {load:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
