"""Real ALiBi code against the family: transformers' BLOOM, Falcon and MPT, x-transformers'
AlibiPositionalBias, labml's annotated ALiBi (``spec_tests/families/alibi/real_code.py``).

The recorded facts (``spec_tests/data/alibi_real_code.json``) are checked against the oracle
with no library installed: each recorded slope within its bound, each recorded deviation
outside the bound of the convention it breaks. With a library installed at its recorded
version, it computes the recorded slopes bit for bit, conforms to each convention it
implements on 1, 12 and 112 heads, and first fails each deviation at the recorded input.

What the facts say: every implementation conforms to its own convention. Falcon forms its
bias in bfloat16 (conforms with ``bias_dtype = "bfloat16"``, fails BLOOM's float32
convention first at 1 head, key 257: 1.0 where 257/256 belongs). labml's comment promises
distances ``[0, 1, ..., N]`` and its code counts keys from 1 (the same attention: it conforms
up to a row constant, and fails the key form at 1 head, key 0: 2**-8 where 0 belongs).
"""

import json

import numpy as np
import pytest

from posenc_spec.families.alibi import oracle
from posenc_spec.families.alibi.conventions import from_keys
from posenc_spec.families.alibi.judge import failures, judge
from posenc_spec.families.alibi.tolerance import bias_tolerance, slope_tolerance
from spec_tests.families.alibi.real_code import FACTS, INSTALL, REAL, max_ulp, slopes_of, smallest_failure

RECORDED = json.loads(FACTS.read_text())["implementations"]
SLOPES = [real for real in REAL if real.signature == "heads"]
DEVIATING = [(real, name) for real in REAL for name, _keys, _why in real.deviates]


def installed(real):
    """Skip unless ``real``'s library is installed at the recorded version, saying how to get it."""
    found = real.installed_version()
    if found != real.version:
        pytest.skip(f"{real.package} {found or 'not installed'}; the facts are of {real.version}: "
                    f"{INSTALL[real.package]}")


def test_every_real_implementation_has_its_facts():
    """The facts file holds an entry, with its library, version and function, for every real implementation."""
    assert set(RECORDED) == {real.id for real in REAL}
    for real in REAL:
        assert (RECORDED[real.id]["library"], RECORDED[real.id]["version"], RECORDED[real.id]["function"]) == (
            real.package, real.version, real.function)


@pytest.mark.parametrize("real", SLOPES, ids=[real.id for real in SLOPES])
def test_recorded_slopes_are_inside_the_bound(real):
    """Each recorded slope (float32 for transformers and labml, float64 for x-transformers) is within
    its bound, and its recorded ULP distance is the oracle's (BLOOM's 112 heads: 7.083)."""
    for heads, values in RECORDED[real.id]["slopes"].items():
        values = np.array([float.fromhex(value) for value in values])
        error = np.abs(values - oracle.slopes(int(heads)))
        assert (error <= slope_tolerance(int(heads), "paper")).all(), (real.id, heads)
        assert max_ulp(values, int(heads)) == RECORDED[real.id]["max_ulp"][heads]


@pytest.mark.parametrize(("real", "name"), DEVIATING, ids=[f"{real.id}-as-{name}" for real, name in DEVIATING])
def test_recorded_deviation_is_outside_the_bound_it_breaks(real, name):
    """The recorded worst element of each deviation is outside the bound of the convention broken
    and inside the bound of the one the code implements."""
    fact = RECORDED[real.id]["deviates"][name]
    broken = from_keys(fact["keys"])
    slot = fact["check"].split("[")[1].rstrip("]").split(":")[0]  # L=258, 8x8 or p=7
    if slot.startswith("L="):
        length = int(slot[2:])
        positions = oracle.mask_positions(np.ones(length), broken) if real.signature == "mask-heads-dtype" \
            else oracle.call_positions(length, length, broken)
    else:
        q_len, k_len = (1, int(slot[2:]) + 1) if slot.startswith("p=") else map(int, slot.split("x"))
        positions = oracle.call_positions(q_len, k_len, broken)
    head, row, key = fact["index"]
    got = float.fromhex(fact["got"])
    expected = oracle.bias(1, positions, broken)[head, row, key]
    assert float.fromhex(fact["expected"]) == expected
    assert abs(got - expected) > bias_tolerance(1, positions, broken)[head, row, key]
    own = from_keys(real.conforms[0][1])
    own_positions = oracle.mask_positions(np.ones(positions.keys.size), own) if own.key_positions == "mask-cumsum" \
        else oracle.call_positions(positions.queries.size, positions.keys.size, own)
    own_expected = oracle.bias(1, own_positions, own)[head, row, key]
    if own.up_to_row_constant:  # labml: one slope more in every row
        own_expected += oracle.slopes(1)[0]
    assert abs(got - own_expected) <= bias_tolerance(1, own_positions, own)[head, row, key]


@pytest.mark.parametrize("real", SLOPES, ids=[real.id for real in SLOPES])
def test_installed_slopes_are_the_recorded_ones(real):
    """The installed library returns the recorded slopes, each within one float32 ULP of the
    record: torch's float32 pow differs by one ULP between its CPU kernels (the avx512 record
    against ATEN_CPU_CAPABILITY=default: 128 heads, head 90), so that is what holds on every
    x86-64 machine. A slope rule of its own would be thousands of ULPs off."""
    installed(real)
    for heads, values in RECORDED[real.id]["slopes"].items():
        recorded = np.array([float.fromhex(value) for value in values])
        ulp = np.spacing(np.abs(recorded).astype(np.float32)).astype(np.float64)
        off = np.abs(slopes_of(real, int(heads)) - recorded) / ulp
        assert off.max() <= 1, (real.id, heads, int(off.argmax()), float(off.max()))


@pytest.mark.parametrize("real", REAL, ids=[real.id for real in REAL])
def test_installed_code_conforms_to_its_convention(real):
    """Each implementation passes every check of each convention it implements, on its head counts."""
    installed(real)
    for name, keys in real.conforms:
        for heads in real.heads:
            failed = failures(judge(real.load(), real.signature, from_keys(keys), heads, real.init))
            assert not failed, f"{real.id} under {name} at {heads} heads: {failed[0].name}: {failed[0].message}"


@pytest.mark.parametrize(("real", "name"), DEVIATING, ids=[f"{real.id}-as-{name}" for real, name in DEVIATING])
def test_installed_deviation_first_fails_at_the_recorded_input(real, name):
    """Declared with the convention it departs from, the installed code first fails at the recorded
    head count and check, with the recorded values."""
    installed(real)
    fact = RECORDED[real.id]["deviates"][name]
    heads, failed = smallest_failure(real, fact["keys"])
    assert (heads, failed.name, list(failed.worst.index), failed.worst.actual.hex()) == (
        fact["heads"], fact["check"], fact["index"], fact["got"]), failed.message
