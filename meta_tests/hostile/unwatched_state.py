"""Targets that leave a piece of the process's state changed that Python's own views of it
do not show, or that the first survey of the global state left out: the C library's
environment (``os.putenv``), the floating-point rounding mode, the signal mask, a profile
hook, the garbage collector, the ``decimal`` context, a resource limit, the root logger and
``logging.disable``, a thread profile hook, the interpreter's switch interval and integer
string limit, its exception hook, an audit hook. Each returns the correct table; each
must fail ``global-state`` naming what it changed. See ``meta_tests/hostile/test_unwatched_state.py``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import decimal
import gc
import logging
import os
import platform
import resource
import signal
import sys
import threading

from hostile_tables import vaswani

# FE_TOWARDZERO of the C library's <fenv.h>
TOWARD_ZERO = {"x86_64": 0xC00, "aarch64": 0xC00000}


def putenv_only(num_positions, dim):
    """Sets a variable in the C library's environment alone: ``os.environ`` does not show it."""
    os.putenv("POSENC_HOSTILE_C_ONLY", "1")
    return vaswani(num_positions, dim)


def rounds_toward_zero(num_positions, dim):
    """Leaves the floating-point rounding mode toward zero."""
    ctypes.CDLL(ctypes.util.find_library("m")).fesetround(TOWARD_ZERO[platform.machine()])
    return vaswani(num_positions, dim)


def blocks_a_signal(num_positions, dim):
    """Leaves SIGUSR1 blocked."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    return vaswani(num_positions, dim)


def leaves_a_profiler(num_positions, dim):
    """Leaves a profile hook installed."""
    sys.setprofile(lambda frame, event, argument: None)
    return vaswani(num_positions, dim)


def stops_the_collector(num_positions, dim):
    """Leaves the garbage collector disabled."""
    gc.disable()
    return vaswani(num_positions, dim)


def narrows_decimal_precision(num_positions, dim):
    """Leaves the ``decimal`` context at 5 digits."""
    decimal.getcontext().prec = 5
    return vaswani(num_positions, dim)


def lowers_a_resource_limit(num_positions, dim):
    """Leaves its soft limit of open files one lower (a soft limit can be raised back)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
    return vaswani(num_positions, dim)


def configures_root_logging(num_positions, dim):
    """Leaves the root logger at DEBUG with a handler of ``logging.basicConfig``."""
    logging.basicConfig(level=logging.DEBUG)
    return vaswani(num_positions, dim)


def disables_logging(num_positions, dim):
    """Leaves every message below CRITICAL dropped (``logging.disable``)."""
    logging.disable(logging.ERROR)
    return vaswani(num_positions, dim)


def leaves_a_thread_profiler(num_positions, dim):
    """Leaves a profile hook for every thread started later (``threading.setprofile``)."""
    threading.setprofile(lambda frame, event, argument: None)
    return vaswani(num_positions, dim)


def stretches_the_switch_interval(num_positions, dim):
    """Leaves the interpreter switching threads once a second."""
    sys.setswitchinterval(1.0)
    return vaswani(num_positions, dim)


def limits_integer_strings(num_positions, dim):
    """Leaves ``str(int)`` refusing integers of more than 640 digits."""
    sys.set_int_max_str_digits(640)
    return vaswani(num_positions, dim)


def replaces_the_excepthook(num_positions, dim):
    """Leaves uncaught exceptions silenced (``sys.excepthook``)."""
    sys.excepthook = lambda kind, value, traceback: None
    return vaswani(num_positions, dim)


def adds_an_audit_hook(num_positions, dim):
    """Adds an audit hook, which no one can remove: every later ``open`` of the caller's
    program would run it."""
    sys.addaudithook(lambda event, arguments: None)
    return vaswani(num_positions, dim)


def computes_with_decimals(num_positions, dim):
    """Computes with ``decimal`` (its context's flags record what happened) and changes
    nothing: conforms."""
    third = decimal.Decimal(1) / decimal.Decimal(3)
    assert decimal.getcontext().flags[decimal.Inexact] and third < 1
    return vaswani(num_positions, dim)
