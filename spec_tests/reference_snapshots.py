"""The committed snapshots of the reference implementations: which, recorded how, and
how to record them again (never over the committed ones)::

    python spec_tests/reference_snapshots.py snapshots_new      # tox -e snapshots-regenerate

``spec_tests/families/sinusoidal/test_reference_snapshots.py`` checks each against its reference with the
convention it computes (``SNAPSHOTS``), as ``posenc-spec check --against`` does: bit for
bit in the numeric environment it was recorded in, within the convention's tolerance in
another. Measured on one x86-64 machine (AMD EPYC with AVX-512): under torch's scalar
kernels (``ATEN_CPU_CAPABILITY=default``) the timestep reference's float32 sines move by up
to 1048576 ULP near their zeros (2e-5 absolute, a fifth of the bound): ULPs are relative,
so a value near 0 magnifies a small absolute difference; on an Intel machine the torch
reference moves by 511 ULP under AVX2 and AVX-512. NumPy without its AVX2 and AVX-512
paths (``NPY_DISABLE_CPU_FEATURES``) moves the vectorised NumPy reference's ``exp``. The
test runs the check under each capability the CPU has and without NumPy's dispatched SIMD.

``MAX_POSITIONS`` caps the grid's lengths to keep those runs short (a default-grid
snapshot is small too: ``spec_tests/families/sinusoidal/test_reference_snapshots.py`` checks it).
"""

from __future__ import annotations

import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "snapshots"
MAX_POSITIONS = 64  # the grid's every slot, its lengths capped
# file name -> (target, api, the convention it computes)
REFERENCES = "posenc_spec.families.sinusoidal.references"
SNAPSHOTS = {
    "numpy_loop.npz": (f"{REFERENCES}.numpy_loop:positional_encoding", "table", "vaswani"),
    "numpy_vectorized.npz": (f"{REFERENCES}.numpy_vectorized:positional_encoding", "table", "vaswani"),
    "torch_impl.npz": (f"{REFERENCES}.torch_impl:positional_encoding", "table", "vaswani"),
    "timestep.npz": (f"{REFERENCES}.timestep:timestep_embedding", "timesteps", "concat"),
}


def record(out_dir) -> int:
    """Record every snapshot into ``out_dir`` (created); the first failing exit status, or 0."""
    from posenc_spec.cli import main

    out_dir = Path(out_dir)
    if out_dir.resolve() == FOLDER:
        raise SystemExit(f"refusing to write into {FOLDER}: review new snapshots, then copy them by hand")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, (target, api, _) in SNAPSHOTS.items():
        status = main(["snapshot", target, "--api", api,
                       "--max-positions", str(MAX_POSITIONS), "--out", str(out_dir / name), "--force"])
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(record(sys.argv[1] if len(sys.argv) > 1 else "snapshots_new"))
