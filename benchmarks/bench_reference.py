"""Cost per table element of each reference implementation, beside NumPy's own sin (the floor).

    python benchmarks/bench_reference.py [--size 4096x1024] [--repeats 7]

Times are medians over the repeats; the machines are noisy, so read the ratios to the floor.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from timing import median_seconds

# reference_impls is the repository's, not installed: run from anywhere, as written.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from posenc_spec.families.sinusoidal import oracle  # noqa: E402
from reference_impls import family, numpy_loop, numpy_vectorized, timestep, torch_impl  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="4096x1024", help="table size LxD (default 4096x1024)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    n, d = (int(part) for part in args.size.split("x"))
    elements = n * d
    # The floor is sin over this table's own angles: large arguments cost more to reduce.
    angles64 = oracle.angles(n, d)[0]
    angles32 = angles64.astype(np.float32)
    floor64 = median_seconds(lambda: np.sin(angles64), args.repeats, warmup=True) / elements
    floor32 = median_seconds(lambda: np.sin(angles32), args.repeats, warmup=True) / elements
    # Each case with the precision its angles are computed in, to compare with the matching floor.
    cases = {
        "numpy_loop": ("float64", lambda: numpy_loop.positional_encoding(n, d)),
        "numpy_vectorized": ("float64", lambda: numpy_vectorized.positional_encoding(n, d)),
        "torch_impl float64": ("float64", lambda: torch_impl.positional_encoding(n, d, dtype=torch.float64)),
        "torch_impl float32": ("float32", lambda: torch_impl.positional_encoding(n, d)),
        "torch_impl float16": ("float32", lambda: torch_impl.positional_encoding(n, d, dtype=torch.float16)),
        "torch_impl bfloat16": ("float32", lambda: torch_impl.positional_encoding(n, d, dtype=torch.bfloat16)),
        "timestep": ("float32", lambda: timestep.timestep_embedding(torch.arange(n), d)),
        "family vaswani": ("float64", lambda: family.sinusoidal_encoding(n, d, "vaswani")),
    }
    floors = {"float64": floor64, "float32": floor32}
    print(f"table {n}x{d}, torch threads {torch.get_num_threads()}, median of {args.repeats}")
    print(f"{'numpy sin, float64 (floor)':<28} {floor64 * 1e9:8.2f} ns/element")
    print(f"{'numpy sin, float32 (floor)':<28} {floor32 * 1e9:8.2f} ns/element")
    for name, (precision, fn) in cases.items():
        per_element = median_seconds(fn, args.repeats, warmup=True) / elements
        print(f"{name:<28} {per_element * 1e9:8.2f} ns/element  {per_element / floors[precision]:6.2f}x "
              f"the {precision} floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
