"""The gate against hostile targets: forged replies, unreadable and lying results, unusual
encodings, exhausted limits and changed global state (``meta_tests/hostile``), each with its verdict.

One run of the gate judges every target here (a run costs a template start); each test
reads its target's report: the verdict, the exit status, the complete JSON entry and the
check that carries the reason.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest
import torch

from meta_tests.hostile import MAX_POSITIONS, alive, assert_complete_entry, exit_status, report_json, target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options
from posenc_spec.gate.sandbox import root_template_pids

CONFORMS, FAILS = "conforms", "does-not-conform"
# Small limits, so that the memory hog and the fork bomb are stopped at once: 512 MiB
# beyond the imports leaves room for torch's thread arenas in the other targets.
MEMORY_LIMIT_MIB = 512
MEMORY_LIMIT = f"{MEMORY_LIMIT_MIB}MiB"
PROCESS_LIMIT = 8
# No target here hangs: each returns at once or is stopped by the limit it attacks. The
# timeout (of a target's own time) only ends one whose limit the gate missed, and lies beyond
# exhaustion.SPREAD_SLEEP (10 s), the targets' hold while the gate watches them: a limit the
# gate misses shows as a call that passes, never as a timeout that a slow start could cause.
TIMEOUT = 30
# announces_huge_reply's header claims 1 GiB (exhaustion.ANNOUNCED_BYTES, not imported:
# the tests never import targets); a gate that read it would hold all of it at once.
ANNOUNCED_BYTES = 2**30


def case(module, function, verdict, check, status, words, marks=(), **keys):
    return pytest.param(module, function, keys, verdict, check, status, words, id=function, marks=marks)


# meta_tests/hostile/torch_modes.py: each target leaves one of torch's modes or flags changed,
# and the words global-state must say of it.
TORCH_MODES = {
    "no_grad_left_open": "torch grad mode True -> False",
    "inference_mode_left_open": "torch inference mode False -> True",
    "forward_ad_disabled": "torch forward-mode AD True -> False",
    "cpu_autocast_left_open": "torch autocast (cpu)",
    "cuda_autocast_enabled": "torch autocast (cuda)",
    "autocast_cache_disabled": "torch autocast (cache True -> False)",
    "anomaly_detection_left_open": "enabled False -> True",
    "anomaly_nan_check_disabled": "torch anomaly detection (check_nan True -> False)",
    "default_device_left_open": "torch default device cpu -> meta",
    "default_dtype_float64": "torch default dtype float32 -> float64",
    "deterministic_warn_only": "torch deterministic algorithms (enabled False -> True, warn_only False -> True)",
    "uninitialized_memory_unfilled": "torch deterministic algorithms (fill_uninitialized_memory True -> False)",
    "fp32_precision_tf32": "torch float32 precision settings (cuda.matmul none -> tf32)",
    # torch 2.13 keeps the legacy TF32 flag through the float32 matmul precision, and says so.
    "tf32_matmul_allowed": "torch float32 matmul precision highest -> high",
    "fp16_accumulation_allowed": "torch TF32 and reduced-precision flags (allow_fp16_accumulation False -> True)",
    "cudnn_benchmark": "torch cuDNN flags (benchmark False -> True)",
    "cudnn_deterministic": "torch cuDNN flags (deterministic False -> True)",
    "cudnn_disabled_left_open": "torch cuDNN flags (enabled True -> False)",
    "flash_attention_disabled": "torch SDPA kernels (flash True -> False)",
    "sdpa_kernel_left_open": "torch SDPA kernels (",
    "onednn_left_open": "torch oneDNN flags (enabled True -> False)",
    "attention_fast_path_disabled": "torch multi-head attention fast path True -> False",
    # torch's default strategy is "auto" where the opt_einsum package is installed (JAX
    # depends on it), None where it is not.
    "einsum_strategy_set": f"torch opt_einsum flags (strategy {torch.backends.opt_einsum.strategy} -> greedy)",
    "torch_function_disabled_left_open": "torch function overrides",
    "function_mode_left_open": "torch function modes () -> ('_PassThroughFunctions',)",
    "dispatch_mode_left_open": "torch dispatch modes () -> ('_PassThroughDispatch',)",
    "warn_always_on": "torch warn-always False -> True",
    "print_precision_set": "torch print options (precision 4 -> 10)",
}


def _state(function, words, marks=(), **keys):
    return case("global_state", function, FAILS, "global-state", "failed", words, marks, **keys)


# Results that hold zeros and answer every question about their values with the correct
# table (meta_tests/hostile/lying_results.py), and what the call reads each as: the class
# it is and the dtype its memory holds, whatever its methods claim.
LYING = {"lying_torch_function": "torch float32 LyingTensor on cpu",
         "overriding_methods": "torch float32 OverridingTensor on cpu",
         "disguised_tensor": "torch float32 DisguisedTensor on cpu", "lying_array": "LyingArray of float32",
         "lying_list": "LyingList (as float64)", "lying_floats": "list (as float64)",
         "zeros_under_a_mode": "torch float32 tensor on cpu"}
CASES = [
    case("forged", "forge_every_call", FAILS, "call[50x8]", "failed", ["malformed reply"]),
    case("forged", "garbage_prefix", FAILS, "call[50x8]", "failed", ["malformed reply"]),
    case("forged", "garbage_header", FAILS, "call[50x8]", "failed", ["malformed reply"]),
    case("unreadable", "array_method_raises", FAILS, "call[50x8]", "failed", ["Unconvertible", "__array__ refuses"]),
    case("unreadable", "exploding_tensor", CONFORMS, "call[50x8]", "passed", ["ExplodingTensor"]),
    case("unreadable", "exception_str_raises", FAILS, "call[50x8]", "failed", ["UnprintableError"]),
    *(case("result_kinds", name, CONFORMS, "formula[50x8]", "passed", ["50x8"])
      for name in ("big_endian_float32", "big_endian_float64", "negative_bit", "conjugate_of_real",
                   "imaginary_part_of_conjugate", "every_other_column", "fortran_order", "reversed_rows",
                   "torch_transposed", "memory_mapped")),
    case("result_kinds", "byte_swapped", FAILS, "call[50x8]", "passed", [">f4"]),
    case("result_kinds", "signalling_nans", FAILS, "finite[50x8]", "failed", ["NaN"]),
    case("result_kinds", "object_array", FAILS, "call[50x8]", "failed", ["object"]),
    *(case("result_kinds", name, FAILS, "call[50x8]", "failed", [dtype])
      for name, dtype in (("integer_array", "int64"), ("boolean_array", "bool"), ("complex_array", "complex64"),
                          ("integer_tensor", "int64"), ("boolean_tensor", "bool"), ("complex_tensor", "complex64"))),
    *(case("lying_results", name, FAILS, "formula[50x8]", "failed", ["50x8"]) for name in LYING),
    *(case("lying_results", name, FAILS, "call[50x8]", "failed", [kind, "storage cannot be read", words])
      for name, kind, words in (("wrapper_tensor", "WrapperTensor", "__torch_dispatch__"),
                                ("fake_tensor", "FakeLikeTensor", "__torch_dispatch__"),
                                ("meta_tensor", "torch.Tensor", "meta device"),
                                ("sparse_tensor", "torch.Tensor", "sparse_coo"),
                                ("dangling_storage", "torch.Tensor", "into a storage of 0"))),
    case("lying_results", "parameter", CONFORMS, "call[50x8]", "passed", ["Parameter"]),
    case("exhaustion", "grows_without_bound", FAILS, "call[50x8]", "failed",
         ["MemoryError", f"the memory limit is {MEMORY_LIMIT_MIB / 1024:.3g} GiB"]),
    case("exhaustion", "fork_bomb", FAILS, "call[50x8]", "failed", ["--max-processes"]),
    case("exhaustion", "oversized_result", FAILS, "call[50x8]", "failed", ["largest legitimate result"]),
    case("exhaustion", "spreads_memory_over_processes", FAILS, "call[50x8]", "failed",
         ["in its processes together", "--max-memory"]),
    case("exhaustion", "keeps_memory_files", FAILS, "call[50x8]", "failed", ["in its processes together"]),
    case("exhaustion", "starts_threads", FAILS, "call[50x8]", "failed", ["--max-processes"]),
    case("exhaustion", "writes_a_huge_file", FAILS, "call[50x8]", "failed", ["File too large",
                                                                             "the file-size limit is 256 MiB"]),
    case("exhaustion", "announces_huge_reply", FAILS, "call[50x8]", "failed", [str(ANNOUNCED_BYTES)]),
    case("hostile_tables", "vaswani_table", CONFORMS, "global-state", "passed", ["no call changed"]),
    _state("sets_environment_variable", ["environment variables", "POSENC_HOSTILE"]),
    _state("extends_sys_path", ["sys.path"]),
    _state("installs_signal_handler", ["signal handlers", "SIGUSR1"]),
    _state("arms_interval_timer", ["interval timer", "ITIMER_VIRTUAL"]),
    _state("sets_thread_count", ["torch thread count 1 -> 2"]),
    _state("lowers_matmul_precision", ["matmul precision", "medium"]),
    _state("flushes_denormals", ["flush-denormal"]),
    _state("enables_deterministic_algorithms", ["deterministic algorithms"]),
    _state("enters_inference_mode", ["inference mode"]),
    _state("enters_autocast", ["autocast"]),
    _state("adds_warnings_filter", ["warnings filters"]),
    _state("raises_on_numpy_errors", ["NumPy error state"]),
    _state("tightens_umask", ["umask 0022 -> 0077"]),
    _state("changes_directory", ["working directory"]),
    _state("writes_into_timesteps", ["timesteps argument in place"], api="timesteps"),
    _state("reseeds_torch", ["reseeded torch's"]),
    _state("reseeds_numpy", ["reseeded NumPy's"]),
    _state("reseeds_python", ["reseeded Python's"]),
    _state("breaks_numpy_state_getter", ["left NumPy's global random number generator's state unreadable (TypeError)"]),
    case("global_state", "draws_from_generators", CONFORMS, "global-state", "passed", ["no call changed"]),
    case("global_state", "depends_on_generator", FAILS, "determinism", "failed", ["differ"]),
    _state("installs_import_hook", ["import hooks"]),
    _state("replaces_stdout", ["standard streams"]),
    _state("raises_recursion_limit", ["recursion limit 1000 -> 1001"]),
    _state("switches_locale", ["locale"]),
    case("global_state", "imports_a_library", CONFORMS, "global-state", "passed", ["no call changed"]),
    _state("imports_a_library_and_sets_state", ["environment variables (POSENC_HOSTILE)", "warnings filters"]),
    _state("imports_its_neighbour", ["environment variables (POSENC_HOSTILE)"]),
    *(case("torch_modes", name, FAILS, "global-state", "failed", [words]) for name, words in TORCH_MODES.items()),
]
# Verdicts the gate gets wrong today: each declared once more, in the same run.
FORGERIES = ["forge_the_repeat", "forge_whole_run"]


def _keys(module, function, keys):
    return {"target": target(module, function), "max_positions": MAX_POSITIONS, "timeout": TIMEOUT, **keys}


def _high_water_kib() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def _reset_high_water() -> bool:
    """Reset this process's peak resident size to its current one (Linux ``clear_refs``)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Every target's declaration and report, the pids the fork bomb recorded, the gate's
    peak resident size over the run (KiB above its size before, None where Linux cannot
    reset the peak) and the warnings the run emitted."""
    scratch = tmp_path_factory.mktemp("hostile")
    scratch.chmod(0o777)  # the targets write here also where each runs as a user of its own (as root)
    pids = scratch / "pids"
    pids.touch(mode=0o666)
    pids.chmod(0o666)
    keyed = {param.values[1]: _keys(*param.values[:3]) for param in CASES}
    keyed |= {name: _keys("forged", name, {}) for name in FORGERIES}
    declarations = {name: declare(keys) for name, keys in keyed.items()}
    options = run_options(jobs=1, max_memory=MEMORY_LIMIT, max_processes=PROCESS_LIMIT)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings(record=True) as caught:
        patch.setenv("POSENC_HOSTILE_PIDS", str(pids))
        patch.setenv("POSENC_HOSTILE_SCRATCH", str(scratch))
        warnings.simplefilter("always")
        resettable = _reset_high_water()
        before = _high_water_kib()
        reports = check_many(declarations.values(), options)
        peak = _high_water_kib() - before if resettable else None
    return {"declarations": declarations, "reports": dict(zip(declarations, reports, strict=True)),
            "pids": [int(line) for line in pids.read_text().split()], "peak_kib": peak, "warnings": list(caught)}


@pytest.mark.parametrize("module, function, keys, verdict, check, status, words", CASES)
def test_verdict(run, module, function, keys, verdict, check, status, words):
    """The target gets its verdict and exit status, a complete JSON entry, and the check
    that carries the reason says it."""
    report = run["reports"][function]
    data = report_json([report])
    assert_complete_entry(data["targets"][0], run["declarations"][function])
    assert (report.status, exit_status(data)) == (verdict, 0 if verdict == CONFORMS else 1), report.failures()[:3]
    result = report.result(check)
    assert result.status == status, f"{function}: {check} is {result.status}: {result.message}"
    missing = [word for word in words if word not in result.message]
    assert not missing, f"{function}: {check} reason lacks {missing}: {result.message}"


@pytest.mark.parametrize("function", FORGERIES)
def test_forged_frames_never_make_a_wrong_target_conform(run, function):
    """A target that writes correct-looking replies and returns zeros does not conform."""
    assert run["reports"][function].status != CONFORMS


@pytest.mark.parametrize("function", LYING)
def test_lying_results_are_read_as_what_they_hold(run, function):
    """A result whose methods claim the correct table is read as the class it is (the call
    passes, naming it) and judged on the zeros it holds."""
    call = run["reports"][function].result("call[50x8]")
    assert (call.status, call.message) == ("passed", f"returned a 50x8 {LYING[function]}"), function


def test_fork_bomb_leaves_nothing_behind(run):
    """Every process the fork bomb started is dead once the gate has returned."""
    assert run["pids"], "the fork bomb recorded no process"
    survivors = [pid for pid in run["pids"] if alive(pid)]
    assert not survivors, (f"{len(survivors)} of the fork bomb's {len(run['pids'])} processes survive: "
                           f"{survivors[:5]}")



def test_huge_announcement_is_refused_unread(run):
    """The gate refuses a reply larger than the call can return before reading it: its
    peak resident size over the whole run grows by less than half the announced size."""
    if run["peak_kib"] is None:
        pytest.skip("this system cannot reset a process's peak resident size (/proc/self/clear_refs)")
    assert run["peak_kib"] * 1024 < ANNOUNCED_BYTES / 2, f"the gate's peak grew by {run['peak_kib']} KiB"


@pytest.mark.parametrize("function", TORCH_MODES)
def test_a_torch_mode_left_changed_fails_global_state_alone(run, function):
    """The target fails on global-state only: the gate put the mode back after each call,
    so every later call found it as the target's process started (the target checks)."""
    report = run["reports"][function]
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]


def test_a_librarys_import_side_effect_is_a_warning(run):
    """A library imported on the first call changes the state: a warning names it."""
    warnings_ = run["reports"]["imports_a_library"].warnings
    assert any("in the call for" in warning and "importing scipy" in warning and "warnings filters" in warning
               for warning in warnings_), warnings_


def test_correct_file_target_gets_no_warning(run):
    """A file target whose import changes nothing is warned about nothing."""
    assert run["reports"]["vaswani_table"].warnings == []


def test_draws_are_warned_about_by_name(run):
    """Drawing from torch's generator is a warning that names it."""
    warnings_ = run["reports"]["draws_from_generators"].warnings
    assert "draws from torch's global random number generator (it advances the caller's random stream)" in warnings_


def test_numpy_and_python_generators_are_named_plainly(run):
    """The warnings name NumPy's and Python's global generators as plainly as torch's."""
    warnings_ = " | ".join(run["reports"]["draws_from_generators"].warnings)
    for name in ("NumPy's", "Python's"):
        assert f"draws from {name} global random number generator" in warnings_, warnings_


def test_generator_dependence_fails_determinism_alone(run):
    """A table nudged within tolerance at random passes the formula and fails determinism."""
    report = run["reports"]["depends_on_generator"]
    assert [check.name for check in report.failures()] == ["determinism"]


def test_judging_hostile_values_emits_no_warning(run):
    """Nothing a target returns makes the gate itself emit a warning (under -W error it
    would be a crash)."""
    emitted = [f"{item.category.__name__}: {item.message}" for item in run["warnings"]]
    assert not emitted, emitted


def test_no_process_of_the_run_remains(run):
    """The run's slot and module templates and children are gone: no process below this
    one remains but the idle root templates (one per ``--preload``, the suite's other files
    may have started more than one), which the gate keeps for later runs."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and alive(int(name)):
            try:
                parent = int(Path(f"/proc/{name}/stat").read_bytes().rpartition(b")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(name))
    roots = root_template_pids()
    below, stack = [], [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in roots:
                below.append(child)
            stack.append(child)
    assert not below, f"processes the gate started survive: {below}"


def test_every_hostile_target_is_declared_as_the_gate_accepts_it():
    """Each hostile target, forged ones included, is a declaration the gate accepts, one per
    name: the run that judges them all (the slow tier) reports verdicts, not a usage error."""
    keyed = {param.values[1]: _keys(*param.values[:3]) for param in CASES}
    keyed |= {name: _keys("forged", name, {}) for name in FORGERIES}
    declarations = {name: declare(keys) for name, keys in keyed.items()}
    assert len(declarations) == len(CASES) + len(FORGERIES)
    assert all(declaration.written for declaration in declarations.values())
