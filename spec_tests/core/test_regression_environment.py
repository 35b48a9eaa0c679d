"""The numeric environment a snapshot records: read cheaply, torch's capability derived as
torch derives it, and its differences named."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from posenc_spec.environment import (
    cpu_flags,
    numeric_differences,
    numeric_environment,
    torch_cpu_capability,
)

INTEL = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 avx512f avx512dq avx512bw " \
        "avx512vl avx512cd bmi2 popcnt\n\nprocessor\t: 1\nflags\t\t: fpu\n"
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm sve\n"


def test_cpu_flags_keep_the_simd_flags_of_the_first_cpu():
    """x86: the sse, avx, fma, f16c flags of the first processor, sorted; ARM: its Features;
    nothing readable: None."""
    assert cpu_flags(INTEL) == ["avx", "avx2", "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl", "f16c",
                                "fma", "sse", "sse2", "sse4_1", "sse4_2", "ssse3"]
    assert cpu_flags(ARM) == ["asimd", "evtstrm", "fp", "sve"]
    assert cpu_flags("model name\t: unknown\n") is None


@pytest.mark.parametrize(("flags", "override", "expected"), [
    (["avx2", "avx512bw", "avx512dq", "avx512f", "avx512vl", "fma"], None, "avx512"),
    (["avx2", "avx512f", "fma"], None, "avx2"),  # AVX-512 without VL, BW, DQ: torch stays at AVX2
    (["avx2"], None, "default"),  # AVX2 without FMA
    (["avx2", "avx512bw", "avx512dq", "avx512f", "avx512vl", "fma"], "AVX2", "avx2"),
    (["avx2", "fma"], "default", "default"),
    (["avx2", "fma"], "zvector", "avx2"),  # a value torch ignores (with a warning)
])
def test_torch_s_capability_is_derived_as_torch_derives_it(flags, override, expected):
    """The rule of torch's DispatchStub: the override when it names a capability, else the
    best the CPU's flags allow."""
    assert torch_cpu_capability(flags, "x86_64", override) == expected
    assert torch_cpu_capability(flags, "aarch64", override) is None


def test_the_derived_capability_is_torch_s_own():
    """In this process (torch imported, whatever ATEN_CPU_CAPABILITY says) the derivation
    agrees with torch.backends.cpu.get_cpu_capability(); under each override the reference
    snapshot test checks it in a process of its own."""
    import torch

    derived = numeric_environment()["torch_cpu_capability"]
    if derived is None:
        pytest.skip(f"torch's capability is not derived on {os.uname().machine}")
    assert derived == torch.backends.cpu.get_cpu_capability().lower()


def test_reading_the_environment_imports_neither_torch_nor_anything_slow():
    """posenc_spec.environment imports only the standard library and posenc_spec's version;
    numeric_environment adds NumPy, which the gate has imported anyway, never torch."""
    code = ("import sys; import posenc_spec.environment as e; before = set(sys.modules); e.numeric_environment(); "
            "print(sorted(name.split('.')[0] for name in before if name.split('.')[0] in ('numpy', 'torch'))); "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split("\n")[:2] == ["[]", "False"], done.stdout


def test_differences_name_what_decides_float_results():
    """Versions, capability, SIMD and flags are compared; an override whose effect is
    recorded itself is not; another BLAS core type is; posenc-spec's own version is not."""
    here = numeric_environment()
    assert numeric_differences(here, dict(here)) == []
    other = {**here, "posenc_spec": "9.9", "torch_cpu_capability": "elsewhere",
             "numpy_simd": {"baseline": ["X86_V2"], "dispatched": []},
             "overrides": {"ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Prescott"}}
    found = numeric_differences(here, other)
    assert f"torch_cpu_capability: {here['torch_cpu_capability']} -> elsewhere" in found, found
    assert any(line.startswith("numpy_simd:") for line in found) == (here["numpy_simd"] != other["numpy_simd"])
    assert f"OPENBLAS_CORETYPE: {here['overrides'].get('OPENBLAS_CORETYPE', 'unset')} -> Prescott" in found
    assert not any(line.startswith(("posenc_spec", "ATEN_CPU_CAPABILITY")) for line in found), found
