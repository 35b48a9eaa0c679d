"""The sealed child's per-call cost of watching the global state, measured in this process.

Each call a child answers (``posenc_spec/gate/child/serve.py::_call``) seeds the generators,
runs the target inside ``attribution.Watch``, then compares the global state with the
baseline taken after the import, and names and restores what changed. This measures, with
torch and transformers imported (where installed), the libraries of a target's module that
refers to transformers' Llama code watched (``library_functions.watch_libraries_of``, in a
checkout that has it) and ``state.warm_up()`` done as in a template:

- ``call``: one whole ``_call`` of a target that returns a 4x8 array and changes nothing;
- ``call after import``: the same, where the process imported modules since its baseline
  was taken (a target's first call often does: the later calls compare a longer
  ``sys.modules`` with the baseline's);
- ``watch``: the watch alone (``Watch`` + ``verdict`` of a fresh snapshot + ``_settle``);
- ``snapshot``: one reading of every entry (``state.snapshot()``);
- ``library functions``: that entry alone, read and compared with the baseline's reading;
  ``library functions in a snapshot``: what a snapshot costs more with that entry than
  without it (reading it among the others touches objects the other readings evict from the
  caches: more than alone). ``-`` for a checkout that does not watch them.

Each figure is the median of ``--calls`` calls, and the report the median of ``--runs``
fresh processes. ``--baseline DIR`` measures a second checkout (``DIR`` holds its
``posenc_spec``) in processes that alternate with this one's, and prints the ratios::

    python benchmarks/bench_state_watch.py --runs 5 --baseline /path/to/main
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIGURES = ("call", "call after import", "watch", "snapshot", "library functions", "library functions in a snapshot")


def _median_ms(action, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure(calls: int) -> dict:
    """The figures of this process's ``posenc_spec`` (milliseconds), and where it was imported from."""
    import types

    import numpy as np
    import torch  # noqa: F401 -- imported as in a template: torch's state is watched

    import posenc_spec
    from posenc_spec.gate.child import attribution, library_functions, serve, state

    try:  # a target's module of real code often refers to it: its libraries are watched
        from transformers.models.llama import modeling_llama
    except ImportError:
        pass
    else:
        module = types.ModuleType("bench_state_watch_target")
        module.LlamaRotaryEmbedding, module.np = modeling_llama.LlamaRotaryEmbedding, np
        if hasattr(library_functions, "watch_libraries_of"):
            library_functions.watch_libraries_of(module)

    def target(num_positions, dim):
        return np.zeros((num_positions, dim), np.float32)

    request = {"id": 1, "token": "t", "args": [{"int": 4}, {"int": 8}], "rng": "a", "max_bytes": 1 << 20}
    state.warm_up()
    for _ in range(20):  # the first calls import and cache what later ones reuse
        serve._call(target, request, [], state.snapshot())
    baseline = state.snapshot()

    def watch():
        with attribution.Watch(baseline) as watching:
            target(4, 8)
        serve._settle(baseline, watching.verdict(state.snapshot()))

    figures = {"call": _median_ms(lambda: serve._call(target, request, [], baseline), calls),
               "watch": _median_ms(watch, calls), "snapshot": _median_ms(state.snapshot, calls)}
    try:
        from posenc_spec.gate.child.library_functions import Reading
    except ImportError:  # a checkout from before they were watched
        pass
    else:
        first = Reading()
        figures["library functions"] = _median_ms(lambda: first == Reading(), calls)
        every = state.entries()
        state.entries = lambda: tuple(entry for entry in every if entry.name != "library functions")
        try:
            without = _median_ms(state.snapshot, calls)
        finally:
            state.entries = lambda: every
        figures["library functions in a snapshot"] = _median_ms(state.snapshot, calls) - without
    import xml.dom.minidom  # noqa: F401 -- modules this process had not imported

    figures["call after import"] = _median_ms(lambda: serve._call(target, request, [], baseline), calls)
    return {"figures": figures, "posenc_spec": str(Path(posenc_spec.__file__).parent)}


def _run(tree: Path | None, calls: int) -> dict:
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    if tree is not None:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), environment.get("PYTHONPATH")]))
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", "--calls", str(calls)]
    output = subprocess.run(command, env=environment, capture_output=True, text=True, check=True, cwd=HERE).stdout
    return json.loads(output.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per checkout (median taken)")
    parser.add_argument("--calls", type=int, default=400, help="calls timed per figure in each process")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with (its root folder)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.calls)))
        return
    trees = {"this": None, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.runs):  # alternating: a drift of the machine's speed falls on both
        for name, tree in trees.items():
            runs[name].append(_run(tree, args.calls))
    medians = {name: {figure: statistics.median(run["figures"][figure] for run in results)
                      for figure in FIGURES if figure in results[0]["figures"]}
               for name, results in runs.items()}
    for name, results in runs.items():
        figures = ", ".join(f"{figure} {medians[name][figure]:.3f} ms" if figure in medians[name] else f"{figure} -"
                            for figure in FIGURES)
        print(f"{name} ({results[0]['posenc_spec']}): {figures}")
    if args.baseline:
        ratios = ", ".join(f"{figure} {medians['baseline'][figure] / medians['this'][figure]:.1f}x"
                           for figure in FIGURES if figure in medians["baseline"] and figure in medians["this"])
        print(f"baseline / this (median of {args.runs} runs): {ratios}")


if __name__ == "__main__":
    main()
