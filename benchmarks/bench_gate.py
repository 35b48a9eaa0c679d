"""What one ``posenc-spec check`` costs beyond starting Python and torch, what each further
target of a ``--config`` run costs (each in a sealed child of its own), and what ``-j 2``
gains.

Each figure is the median of ``--repeats`` runs, each in a fresh Python, as CI runs it. The
runs go in rounds, each command once a round, and every difference or ratio is taken round
by round before its median, so that the machine's drift in speed cancels out:

1. ``python -c "import numpy, torch"``: the floor every run pays;
2. ``posenc-spec check TARGET -j 1`` on the default grid (the torch reference implementation,
   vaswani): its excess over (1) is the cost of one target;
3. ``posenc-spec check --config`` over one target and over ``--targets`` distinct targets
   (generated files, one per target, each a torch float32 implementation of one of the
   five presets in turn), with ``-j 1``: the difference over the number of extra targets
   is the marginal cost per target;
4. the many-target run with ``-j 2``: the speed-up over ``-j 1``;
5. one RoPE target per API (``--api rope-freqs``, ``rope-cache``, ``rope-apply``, a
   transformers-style torch implementation), beyond (1).

A check can take less than (1): the ``check`` process itself never imports torch; its
template does, while the ``check`` process parses, plans and computes expected values.

Run from the repository root::

    python benchmarks/bench_gate.py [--repeats 5] [--targets 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import IMPORT_FLOOR, median_by_round, seconds_in_rounds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from posenc_spec.families.sinusoidal.conventions import get_convention  # noqa: E402

ONE = "reference_impls.torch_impl:positional_encoding"
PRESETS = ("vaswani", "concat", "tensor2tensor", "fairseq", "guided-diffusion")
# One member of the family in torch, float32, as typical code writes it (the angle in float32).
TARGET_FILE = '''\
"""Benchmark target {index}: the {convention} table in torch, float32."""

import math

import torch


def table(num_positions, dim):
    half = dim // 2
    if dim % 2 or half - {shift} < 1:
        raise ValueError(f"width {{dim}} is not supported")
    omega = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / (half - {shift}))
    angle = (torch.arange(num_positions, dtype=torch.float32) + {offset})[:, None] * omega
    first, second = (torch.sin(angle), torch.cos(angle)) if "{first}" == "sin" else (torch.cos(angle), torch.sin(angle))
    if "{layout}" == "concat":
        return torch.cat([first, second], dim=1)
    return torch.stack([first, second], dim=2).reshape(num_positions, dim)
'''
# Rotary embeddings as transformers writes them: float32 inv_freq, cos/sin cache, rotate_half.
ROPE_FILE = '''\
"""Benchmark RoPE targets: the default convention, half pairs, in torch."""

import torch


def freqs(head_dim):
    return 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


def cache(positions, head_dim):
    angles = positions[:, None].float() * freqs(head_dim)[None, :]
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def apply(x, positions):
    cos, sin = cache(positions, x.shape[-1])
    cos, sin = cos.to(x.dtype)[None, :, None, :], sin.to(x.dtype)[None, :, None, :]
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin
'''


def run(command: list[str], expect: int = 0) -> None:
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}")


def write_targets(folder: Path, count: int) -> list[tuple[str, str]]:
    """``count`` target files cycling through the presets; returns (target, convention) pairs."""
    targets = []
    for index in range(count):
        convention = PRESETS[index % len(PRESETS)]
        fields = get_convention(convention)
        path = folder / f"bench_target_{index}.py"
        path.write_text(TARGET_FILE.format(index=index, convention=convention, shift=fields.freq_shift,
                                           offset=fields.offset, first=fields.first, layout=fields.layout))
        targets.append((f"{path}:table", convention))
    return targets


def write_config(path: Path, targets) -> None:
    path.write_text("".join(f'[[targets]]\ntarget = "{target}"\nconvention = "{convention}"\n\n'
                            for target, convention in targets))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure; the median is reported")
    parser.add_argument("--targets", type=int, default=20, help="targets in the many-target --config run")
    args = parser.parse_args(argv)
    python = sys.executable
    cli = [python, "-m", "posenc_spec", "check"]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        targets = write_targets(folder, args.targets)
        single, many = folder / "one.toml", folder / "many.toml"
        write_config(single, targets[:1])
        write_config(many, targets)
        (folder / "rope_bench.py").write_text(ROPE_FILE)
        commands = {
            "imports": IMPORT_FLOOR,
            "one": [*cli, ONE, "-j", "1"],
            "config one": [*cli, "--config", str(single), "-j", "1"],
            "config many": [*cli, "--config", str(many), "-j", "1"],
            "config many -j 2": [*cli, "--config", str(many), "-j", "2"],
            **{api: [*cli, f"{folder / 'rope_bench.py'}:{name}", "--api", api, "-j", "1"]
               for api, name in (("rope-freqs", "freqs"), ("rope-cache", "cache"), ("rope-apply", "apply"))},
        }
        times = seconds_in_rounds({name: lambda command=command: run(command) for name, command in commands.items()},
                                  args.repeats)

    def median(name):
        return statistics.median(times[name])

    def beyond_imports(name):
        return median_by_round(lambda seconds, imports: seconds - imports, times[name], times["imports"])

    print(f"median of {args.repeats} rounds, each command once a round in a fresh Python")
    print(f"1. python -c 'import numpy, torch'            {median('imports'):7.2f} s")
    print(f"2. posenc-spec check {ONE}  {median('one'):7.2f} s  ({beyond_imports('one'):+.2f} s beyond the imports)")
    print(f"3. check --config -j 1, 1 target               {median('config one'):7.2f} s")
    print(f"   check --config -j 1, {args.targets} targets             {median('config many'):7.2f} s")
    marginal = median_by_round(lambda every, one: (every - one) / (args.targets - 1),
                               times["config many"], times["config one"])
    print(f"   marginal cost per target                    {marginal:7.3f} s")
    speed_up = median_by_round(lambda serial, parallel: serial / parallel, times["config many"],
                               times["config many -j 2"])
    print(f"4. check --config -j 2, {args.targets} targets             {median('config many -j 2'):7.2f} s  "
          f"(speed-up {speed_up:.2f}x over -j 1)")
    for api in ("rope-freqs", "rope-cache", "rope-apply"):
        print(f"5. check --api {api:<10}                    {median(api):7.2f} s  ({beyond_imports(api):+.2f} s "
              "beyond the imports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
