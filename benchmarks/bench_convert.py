"""What the child's conversion of a result costs (``posenc_spec.gate.child.convert``), per
kind of result, on the largest table of the grid.

    python benchmarks/bench_convert.py [--size 4096x1024] [--repeats 15] [--against REV]

``--against REV`` times the module as it was at git revision ``REV`` too, in rounds that
take each version in turn, and prints the median ratio of the rounds (this version /
``REV``'s). A result kind ``REV`` refuses is shown as refused.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import torch
from timing import median_by_round, seconds_in_rounds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's posenc_spec, whatever is installed
    sys.path.insert(0, str(ROOT))

from posenc_spec.gate.child import convert  # noqa: E402

MODULE = "posenc_spec/gate/child/convert.py"


def results(n: int, d: int) -> dict:
    """One result of each kind the gate converts, all ``n`` x ``d``."""
    table = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)
    tensor = torch.from_numpy(table)
    return {
        "float32 tensor": tensor,
        "float32 ndarray": table,
        "Parameter": torch.nn.Parameter(tensor.clone()),
        "tensor with grad": tensor.clone().requires_grad_(),
        "transposed tensor (copied)": tensor.t().contiguous().t(),
        "bfloat16 tensor": tensor.bfloat16(),
        "big-endian ndarray (copied)": table.astype(">f4"),
        f"nested list ({max(n // 16, 1)} rows)": table[: max(n // 16, 1)].tolist(),
    }


def version_at(revision: str) -> types.ModuleType:
    """The conversion module as it was at git ``revision``."""
    source = subprocess.run(["git", "show", f"{revision}:{MODULE}"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout
    module = types.ModuleType(f"convert_at_{revision}")
    exec(compile(source, f"{revision}:{MODULE}", "exec"), module.__dict__)  # noqa: S102 - the project's own history
    return module


def converts(module, result) -> bool:
    try:
        module.to_arrays(result)
    except Exception:  # noqa: BLE001 - a kind the version refuses
        return False
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="4096x1024", help="table size LxD (default 4096x1024)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--against", metavar="REV", help="also time the module at git revision REV")
    args = parser.parse_args(argv)
    n, d = (int(part) for part in args.size.split("x"))
    versions = {"this": convert} | ({args.against: version_at(args.against)} if args.against else {})
    header = "".join(f"{name:>14}" for name in versions) + ("       ratio" if args.against else "")
    print(f"{'result (' + args.size + ')':32}{header}   (median microseconds)")
    for kind, result in results(n, d).items():
        usable = {name: module for name, module in versions.items() if converts(module, result)}
        actions = {name: (lambda module=module, result=result: module.to_arrays(result))
                   for name, module in usable.items()}
        for action in actions.values():
            action()  # warm: first touches and lazy imports
        times = seconds_in_rounds(actions, args.repeats)
        cells = "".join(f"{median_by_round(lambda t: t * 1e6, times[name]):14.1f}" if name in times
                        else f"{'refused':>14}" for name in versions)
        ratio = (f"{median_by_round(lambda a, b: a / b, times['this'], times[args.against]):12.2f}"
                 if args.against and len(times) == 2 else "")
        print(f"{kind:32}{cells}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
