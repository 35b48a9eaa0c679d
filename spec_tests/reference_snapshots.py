"""The committed snapshots of the reference implementations: which, recorded how, and
how to record them again (never over the committed ones)::

    python spec_tests/reference_snapshots.py snapshots_new      # tox -e snapshots-regenerate

Each is checked in the default run (``spec_tests/test_reference_snapshots.py``) at
``MAX_ULP``: 0, bit for bit. Measured on x86_64: recording them under torch's AVX2 and
AVX-512 kernels (``ATEN_CPU_CAPABILITY=avx2``/``avx512``) and with NumPy's AVX-512 paths
disabled (``NPY_DISABLE_CPU_FEATURES``) gives the same bits. torch's scalar kernels
(``ATEN_CPU_CAPABILITY=default``, no SIMD) move the timestep reference's float32 sines by
up to 16383 ULP near their zeros (1.5e-5 absolute, within its formula tolerance): ULPs
are relative, so a value near 0 magnifies a small absolute difference. A machine without
AVX2 or of another architecture records other bits: there the test skips, naming the
platform the snapshots were recorded on, and ``tox -e snapshots-regenerate`` records its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "snapshots"
MAX_ULP = 0
MAX_POSITIONS = 64  # the grid's every slot, its lengths capped: about a megabyte a snapshot
# file name -> (target, api)
SNAPSHOTS = {
    "numpy_loop.npz": ("posenc_spec.references.numpy_loop:positional_encoding", "table"),
    "numpy_vectorized.npz": ("posenc_spec.references.numpy_vectorized:positional_encoding", "table"),
    "torch_impl.npz": ("posenc_spec.references.torch_impl:positional_encoding", "table"),
    "timestep.npz": ("posenc_spec.references.timestep:timestep_embedding", "timesteps"),
}


def record(out_dir) -> int:
    """Record every snapshot into ``out_dir`` (created); the first failing exit status, or 0."""
    from posenc_spec.cli import main

    out_dir = Path(out_dir)
    if out_dir.resolve() == FOLDER:
        raise SystemExit(f"refusing to write into {FOLDER}: review new snapshots, then copy them by hand")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, (target, api) in SNAPSHOTS.items():
        status = main(["snapshot", target, "--api", api, "--max-positions", str(MAX_POSITIONS),
                       "--out", str(out_dir / name), "--force"])
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(record(sys.argv[1] if len(sys.argv) > 1 else "snapshots_new"))
