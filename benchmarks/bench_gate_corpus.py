"""What the gate costs: per grid size for one target, and per target over the whole corpus.

Three measurements, each the median of ``--repeats`` runs:

1. **Per grid size, one target, in process.** For every call of the default grid: the
   target's own call, the expected table and bounds for that size computed cold
   (:func:`posenc_spec.oracle.table` and :func:`posenc_spec.tolerance.table_tolerance`,
   what the gate caches per size and convention), and the checks the gate runs on it.
2. **Whole gate, one target, per length cap.** ``check_many`` on one target with
   ``max_positions`` capping the grid at 50, 128, 300, 1024 and 4096 positions: with the
   expected tables computed cold, with them already cached (as for every target after the
   first of a convention), and each further target of the same run (from six copies).
3. **``posenc-spec check --config`` over the whole corpus against one target**, as CI runs it
   (a fresh Python each time), next to ``python -c "import numpy, torch"``: the difference
   of the two ``--config`` runs over the number of extra targets is the marginal cost per
   target. The same comparison in process (``check_many``) is printed beside it.

Run from the repository root::

    python benchmarks/bench_gate_corpus.py [--repeats 3] [--target ID] [--skip-cli]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from timing import median_seconds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the corpus lives in meta_tests/, beside this folder
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from meta_tests.corpus import ENTRIES, by_id  # noqa: E402
from posenc_spec import checks, oracle, tolerance  # noqa: E402
from posenc_spec.gate import check_many, grid  # noqa: E402

DEFAULT_TARGET = "annotated_transformer_module"
CAPS = (50, 128, 300, 1024, 4096)
COPIES = 6  # the run that measures the cost of each further target




def _arguments(probe):
    if probe.timesteps is None:
        return (probe.length, probe.width)
    return (torch.from_numpy(np.array(probe.timesteps)), probe.width)


def _as_float64(result):
    if isinstance(result, torch.Tensor):
        return result.detach().to(torch.float64).numpy(), str(result.dtype).removeprefix("torch.")
    array = np.asarray(result)
    return array.astype(np.float64), array.dtype.name


def _call(function, probe):
    return function(*_arguments(probe))


def _call_or_raise(function, probe):
    try:
        return function(*_arguments(probe)), None
    except Exception as error:  # an odd width under odd='error', say
        return None, error


def _expected(probe, convention, dtype, degenerate):
    oracle.table(probe.positions, probe.width, convention, degenerate)
    tolerance.table_tolerance(probe.positions, probe.width, convention, dtype, degenerate_limit=degenerate)


def _run_checks(table, expectation, names):
    checks.check_finite(table)
    for name in names:
        grid.CHECK_FUNCTIONS[name](table, expectation)


def per_size(entry, repeats: int) -> None:
    """Measurement 1: call, cold expected table and checks for every call of the grid."""
    spec = entry.gate_spec()
    function = getattr(importlib.import_module(entry.module), entry.id)
    print(f"1. per grid size: {entry.target} ({entry.describe_convention()}), in process, "
          f"median of {repeats}")
    print(f"   {'call':24s} {'role':10s} {'elements':>9s} {'call ms':>9s} {'expected ms':>12s} {'checks ms':>10s}")
    totals = [0.0, 0.0, 0.0]
    for probe in spec.probes():
        result, error = _call_or_raise(function, probe)
        call_ms = 1e3 * median_seconds(partial(_call_or_raise, function, probe), repeats)
        totals[0] += call_ms
        row = f"   {probe.label:24s} {probe.role:10s} {probe.length * probe.width:9d} {call_ms:9.2f}"
        if error is not None:
            print(f"{row} {'-':>12s} {'-':>10s}  (raised {type(error).__name__})")
            continue
        table, dtype = _as_float64(result)
        degenerate = probe.width == 2 and spec.convention.freq_shift == 1
        expected_ms = 1e3 * median_seconds(partial(_expected, probe, spec.convention, dtype, degenerate), repeats)
        expectation = checks.expectation(probe.positions, probe.width, spec.convention, dtype, degenerate)
        names = probe.table_check_names()[1:] if probe.role == "table" else ("formula",)
        checks_ms = 1e3 * median_seconds(partial(_run_checks, table, expectation, names), repeats)
        totals[1] += expected_ms
        totals[2] += checks_ms
        print(f"{row} {expected_ms:12.2f} {checks_ms:10.2f}")
    print(f"   {'total':24s} {'':10s} {'':9s} {totals[0]:9.1f} {totals[1]:12.1f} {totals[2]:10.1f}")
    print()


def _cold(action):
    """Run ``action`` with the gate's cache of expected tables emptied first."""
    def run():
        checks._expectation.cache_clear()  # the per-size cache the gate keeps between targets
        action()
    return run


def per_cap(entry, repeats: int) -> None:
    """Measurement 2: the whole gate on one target with the grid capped at each length."""
    print(f"2. whole gate on {entry.id} (check_many, worker start included), grid capped by max_positions, "
          f"median of {repeats}")
    print(f"   {'max_positions':>13s} {'cold s':>8s} {'warm s':>8s} {'each further s':>15s}")
    check_many([entry.gate_spec()])  # starts the forkserver once, as any earlier run would have
    for cap in CAPS:
        spec = dataclasses.replace(entry.gate_spec(), max_positions=cap)
        cold = median_seconds(_cold(partial(check_many, [spec])), repeats)
        warm = median_seconds(partial(check_many, [spec]), repeats)
        several = median_seconds(_cold(partial(check_many, [spec] * COPIES)), repeats)
        print(f"   {cap:13d} {cold:8.3f} {warm:8.3f} {(several - cold) / (COPIES - 1):15.3f}")
    print("   cold: the expected tables computed for this target; warm: already cached by an earlier target of "
          "the same convention;")
    print("   each further: the cost of one more target of the same convention in the same run")
    print()


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for these ASCII values
    return repr(value)


def write_config(entries, path: Path) -> None:
    lines = []
    for entry in entries:
        lines.append("[[targets]]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in entry.config_table().items()]
        lines.append("")
    path.write_text("\n".join(lines))


def _run(command) -> None:
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def corpus_vs_one(entry, repeats: int, skip_cli: bool) -> None:
    """Measurement 3: a run over the whole corpus against a run over one target."""
    count = len(ENTRIES)
    print(f"3. the whole corpus ({count} targets) against one target ({entry.id}), median of {repeats}")
    if not skip_cli:
        with tempfile.TemporaryDirectory() as folder:
            every, single = Path(folder) / "corpus.toml", Path(folder) / "one.toml"
            write_config(ENTRIES, every)
            write_config([entry], single)
            cli = [sys.executable, "-m", "posenc_spec.cli", "check", "--config"]
            imports = median_seconds(lambda: _run([sys.executable, "-c", "import numpy, torch"]), repeats)
            one = median_seconds(lambda: _run([*cli, str(single)]), repeats)
            many = median_seconds(lambda: _run([*cli, str(every)]), repeats)
        print(f"   python -c 'import numpy, torch'        {imports:8.2f} s")
        print(f"   check --config, 1 target              {one:8.2f} s  ({one - imports:.2f} s beyond the imports)")
        print(f"   check --config, {count} targets            {many:8.2f} s")
        print(f"   marginal cost per target (CLI)        {(many - one) / (count - 1):8.3f} s")
    one = median_seconds(lambda: check_many([entry.gate_spec()]), repeats)
    many = median_seconds(lambda: check_many([item.gate_spec() for item in ENTRIES]), repeats)
    print(f"   check_many, 1 target                  {one:8.2f} s")
    print(f"   check_many, {count} targets                {many:8.2f} s")
    print(f"   marginal cost per target (in process) {(many - one) / (count - 1):8.3f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the median is reported")
    parser.add_argument("--target", default=DEFAULT_TARGET,
                        help=f"corpus id of the one target (default {DEFAULT_TARGET})")
    parser.add_argument("--skip-cli", action="store_true",
                        help="skip the subprocess runs of posenc-spec check --config")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    try:
        entry = by_id(args.target)
    except KeyError as error:
        parser.error(str(error))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy {np.__version__}")
    print()
    per_size(entry, args.repeats)
    per_cap(entry, args.repeats)
    corpus_vs_one(entry, args.repeats, args.skip_cli)
    return 0


if __name__ == "__main__":
    sys.exit(main())
