"""A target's verdicts on the grid's calls, in this process: each call, read into the
oracle's layout, judged by every property of :mod:`.properties` under its check id.

The gate runs targets in its sealed child and adds ``determinism`` and ``global-state``;
this is the family's part of that work, also what the family's tests and its corpus use.
"""

from __future__ import annotations

from posenc_spec.results import CheckResult

from . import oracle, properties
from .conventions import AlibiConvention, get_convention
from .grid import calls, check_id
from .signatures import MODULE_SIGNATURES, AlibiCall, build_module, invoke, output_dtype, read
from .tolerance import dtype_name


def _failed(check: str, call: AlibiCall, message: str) -> CheckResult:
    return CheckResult(check_id(check, call), "failed", message)


def positions_of(call: AlibiCall, convention: AlibiConvention) -> oracle.Positions:
    if call.mask is not None:
        return oracle.mask_positions(call.mask, convention)
    return oracle.call_positions(call.q_len, call.k_len, convention)


def slope_results(values, call: AlibiCall, conv: AlibiConvention, dtype: str) -> list[CheckResult]:
    """The verdicts on the slopes one ``slopes`` call returned (``dtype``: the returned one)."""
    h = call.num_heads
    finite = all(value == value and abs(value) != float("inf") for value in values)
    return [CheckResult(check_id("finite", call), "passed" if finite else "failed", f"{h} slopes"),
            properties.check_slopes(values, h, conv, dtype, name=check_id("slopes", call)),
            properties.check_head_ratio(values, h, conv, dtype, name=check_id("head-ratio", call))]


def bias_results(table, call: AlibiCall, conv: AlibiConvention, dtype: str, prefill) -> list[CheckResult]:
    """The verdicts on the ``(heads, rows, keys)`` table one call returned; ``prefill`` is the
    ``(table, expectation)`` of the sequence's prefill, for a decoding step's ``decode`` check."""
    exp = properties.expectation(call.num_heads, positions_of(call, conv), conv, dtype)
    results = [check(table, exp, name=check_id(check.__name__.removeprefix("check_").replace("_", "-"), call))
               for check in (properties.check_finite, properties.check_formula, properties.check_linear,
                             properties.check_toeplitz, properties.check_diagonal, properties.check_equivalent,
                             properties.check_unbiased_heads)]
    if call.role == "decode" and prefill is not None:
        results.append(properties.check_decode(table, prefill[0], exp, prefill[1], name=check_id("decode", call)))
    return results


def judge(target, signature: str, convention: str | AlibiConvention, num_heads: int, init: dict | None = None,
          fail_fast: bool = False) -> list[CheckResult]:
    """Every verdict of one head count: ``target`` is the function, or the class a module
    signature builds with ``init``. ``fail_fast`` stops after the first call with a failure."""
    conv = get_convention(convention)
    sequence = calls(signature, num_heads, conv)
    module = None
    results: list[CheckResult] = []
    prefill = None
    for call in sequence:
        try:
            if signature in MODULE_SIGNATURES and module is None:
                module = build_module(target, init or {}, call, conv)
            returned, scores = invoke(module if module is not None else target, signature, call, conv)
            values = read(returned, signature, call, conv, scores)
            dtype = dtype_name(output_dtype(returned))
        except Exception as error:  # the target's own failure is a verdict, never a crash of the judge
            results.append(_failed("call", call, f"{type(error).__name__}: {error}"))
            if fail_fast:
                break
            continue
        results.append(CheckResult(check_id("call", call), "passed", f"{signature} returned {dtype}"))
        if signature == "slopes":
            results += slope_results(values.tolist(), call, conv, dtype)
            continue
        results += bias_results(values, call, conv, dtype, prefill)
        if fail_fast and failures(results):
            break
        if call.role == "prefill":
            prefill = (values, properties.expectation(call.num_heads, positions_of(call, conv), conv, dtype))
    return results


def failures(results: list[CheckResult]) -> list[CheckResult]:
    return [result for result in results if result.status == "failed"]
