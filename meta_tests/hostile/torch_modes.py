"""Targets that each leave one of torch's modes or flags changed, in their own call, and
return the correct table: some set it, some enter a ``with`` block they never exit (a
suspended generator holds it open, as a leaked context manager would).

Each target first checks that it finds its piece of state as its process had it when
this module was imported, and raises otherwise: a gate that did not put the state back
after a call would fail the target's next call as well. Verdict of each: does not conform,
with ``global-state`` the only failed check, naming the state.
"""

from __future__ import annotations

import torch
from hostile_tables import vaswani
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

_HELD: list = []  # generators suspended inside a with block, kept alive so that nothing exits it


def _hold_open(context) -> None:
    """Enter ``context`` in a generator that never resumes: the block is left open."""
    def inside():
        with context:
            yield

    held = inside()
    next(held)
    _HELD.append(held)


class _PassThroughFunctions(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class _PassThroughDispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _set(owner, name, value):
    return lambda: setattr(owner, name, value)


_CUDA, _CUDNN = torch.backends.cuda, torch.backends.cudnn
# name -> (how the state is read, how the call changes it)
CHANGES = {
    "no_grad_left_open": (torch.is_grad_enabled, lambda: _hold_open(torch.no_grad())),
    "inference_mode_left_open": (torch.is_inference_mode_enabled,
                                 lambda: _hold_open(torch.inference_mode())),
    "forward_ad_disabled": (torch._C._is_fwd_grad_enabled,
                            lambda: torch._C._set_fwd_grad_enabled(False)),
    "cpu_autocast_left_open": (lambda: torch.is_autocast_enabled("cpu"),
                               lambda: _hold_open(torch.autocast("cpu"))),
    "cuda_autocast_enabled": (lambda: torch.is_autocast_enabled("cuda"),
                              lambda: torch.set_autocast_enabled("cuda", True)),
    "autocast_cache_disabled": (torch.is_autocast_cache_enabled,
                                lambda: torch.set_autocast_cache_enabled(False)),
    "anomaly_detection_left_open": (torch.is_anomaly_enabled,
                                    lambda: _hold_open(torch.autograd.detect_anomaly(check_nan=False))),
    "anomaly_nan_check_disabled": (torch.is_anomaly_check_nan_enabled,
                                   lambda: torch.set_anomaly_enabled(False, check_nan=False)),
    "default_device_left_open": (lambda: str(torch.get_default_device()),
                                 lambda: _hold_open(torch.device("meta"))),
    "default_dtype_float64": (torch.get_default_dtype,
                              lambda: torch.set_default_dtype(torch.float64)),
    "deterministic_warn_only": (torch.are_deterministic_algorithms_enabled,
                                lambda: torch.use_deterministic_algorithms(True, warn_only=True)),
    "uninitialized_memory_unfilled": (lambda: torch.utils.deterministic.fill_uninitialized_memory,
                                      _set(torch.utils.deterministic, "fill_uninitialized_memory", False)),
    "fp32_precision_tf32": (lambda: _CUDA.matmul.fp32_precision, _set(_CUDA.matmul, "fp32_precision", "tf32")),
    "tf32_matmul_allowed": (lambda: _CUDA.matmul.allow_tf32,
                            _set(_CUDA.matmul, "allow_tf32", True)),
    "fp16_accumulation_allowed": (lambda: _CUDA.matmul.allow_fp16_accumulation,
                                  _set(_CUDA.matmul, "allow_fp16_accumulation", True)),
    "cudnn_benchmark": (lambda: _CUDNN.benchmark, _set(_CUDNN, "benchmark", True)),
    "cudnn_deterministic": (lambda: _CUDNN.deterministic,
                            _set(_CUDNN, "deterministic", True)),
    "cudnn_disabled_left_open": (lambda: _CUDNN.enabled, lambda: _hold_open(_CUDNN.flags(enabled=False))),
    "flash_attention_disabled": (_CUDA.flash_sdp_enabled,
                                 lambda: _CUDA.enable_flash_sdp(False)),
    "sdpa_kernel_left_open": (_CUDA.mem_efficient_sdp_enabled,
                              lambda: _hold_open(sdpa_kernel(SDPBackend.MATH))),
    "onednn_left_open": (lambda: torch.backends.mkldnn.enabled,
                         lambda: _hold_open(torch.backends.mkldnn.flags(enabled=False))),
    "attention_fast_path_disabled": (torch.backends.mha.get_fastpath_enabled,
                                     lambda: torch.backends.mha.set_fastpath_enabled(False)),
    "einsum_strategy_set": (lambda: torch.backends.opt_einsum.strategy,
                            _set(torch.backends.opt_einsum, "strategy", "greedy")),
    "torch_function_disabled_left_open": (torch._C._get_torch_function_state,
                                          lambda: _hold_open(torch._C.DisableTorchFunction())),
    "function_mode_left_open": (torch._C._len_torch_function_stack,
                                lambda: _hold_open(_PassThroughFunctions())),
    "dispatch_mode_left_open": (lambda: len(torch.utils._python_dispatch._get_current_dispatch_mode_stack()),
                                lambda: _hold_open(_PassThroughDispatch())),
    "warn_always_on": (torch.is_warn_always_enabled, lambda: torch.set_warn_always(True)),
    "print_precision_set": (lambda: torch._tensor_str.PRINT_OPTS.precision,
                            lambda: torch.set_printoptions(precision=10)),
}


def _target(name: str, read, change):
    as_imported = read()

    def target(num_positions, dim):
        if read() != as_imported:
            raise RuntimeError(f"{name}: found {read()!r}, not {as_imported!r} as when imported (not restored)")
        table = vaswani(num_positions, dim)  # before the change: a meta default device would move it
        change()
        return table

    target.__name__ = target.__qualname__ = name
    return target


for _name, (_read, _change) in CHANGES.items():
    globals()[_name] = _target(_name, _read, _change)
