"""Targets whose calls change global state, each one piece, and return the correct table.

Verdict of each: does not conform, ``global-state`` failing with a reason that names what
changed (the child restores it after every call, so one call cannot change what the next
sees; a replaced getter of a generator's state is named, not put back). Reseeding a global
generator fails ``global-state`` naming the generator; drawing from one conforms with a
warning; a table that depends on the generator fails ``determinism``.
"""

from __future__ import annotations

import io
import locale
import os
import random
import signal
import sys
import warnings

import numpy as np
import torch
from hostile_tables import vaswani

# Context managers entered and never left: kept alive, so that nothing leaves them.
_ENTERED: list = []


def sets_environment_variable(num_positions, dim):
    """Sets ``POSENC_HOSTILE``. Names: environment variables."""
    os.environ["POSENC_HOSTILE"] = "1"
    return vaswani(num_positions, dim)


def extends_sys_path(num_positions, dim):
    """Appends a folder to ``sys.path``. Names: sys.path."""
    sys.path.append("/nonexistent/posenc-hostile")
    return vaswani(num_positions, dim)


def installs_signal_handler(num_positions, dim):
    """Installs a SIGUSR1 handler. Names: signal handlers."""
    signal.signal(signal.SIGUSR1, lambda number, frame: None)
    return vaswani(num_positions, dim)


def arms_interval_timer(num_positions, dim):
    """Arms the virtual interval timer for 1000 s of CPU time. Names: interval timer."""
    signal.setitimer(signal.ITIMER_VIRTUAL, 1000.0)
    return vaswani(num_positions, dim)


def sets_thread_count(num_positions, dim):
    """``torch.set_num_threads(2)`` (the child runs with one). Names: torch thread count."""
    torch.set_num_threads(2)
    return vaswani(num_positions, dim)


def lowers_matmul_precision(num_positions, dim):
    """``torch.set_float32_matmul_precision("medium")``. Names: matmul precision."""
    torch.set_float32_matmul_precision("medium")
    return vaswani(num_positions, dim)


def flushes_denormals(num_positions, dim):
    """``torch.set_flush_denormal(True)``. Names: flush-denormal."""
    torch.set_flush_denormal(True)
    return vaswani(num_positions, dim)


def enables_deterministic_algorithms(num_positions, dim):
    """``torch.use_deterministic_algorithms(True)``. Names: deterministic algorithms."""
    torch.use_deterministic_algorithms(True)
    return vaswani(num_positions, dim)


def enters_inference_mode(num_positions, dim):
    """Enters ``torch.inference_mode()`` and never leaves it. Names: inference mode."""
    guard = torch.inference_mode()
    guard.__enter__()
    _ENTERED.append(guard)
    return vaswani(num_positions, dim)


def enters_autocast(num_positions, dim):
    """Enters ``torch.autocast("cpu")`` and never leaves it. Names: autocast."""
    guard = torch.autocast("cpu")
    guard.__enter__()
    _ENTERED.append(guard)
    return vaswani(num_positions, dim)


def adds_warnings_filter(num_positions, dim):
    """``warnings.simplefilter("ignore")``. Names: warnings filters."""
    warnings.simplefilter("ignore")
    return vaswani(num_positions, dim)


def raises_on_numpy_errors(num_positions, dim):
    """``numpy.seterr(all="raise")``. Names: NumPy error state."""
    np.seterr(all="raise")
    return vaswani(num_positions, dim)


def tightens_umask(num_positions, dim):
    """``os.umask(0o077)``. Names: umask."""
    os.umask(0o077)
    return vaswani(num_positions, dim)


def changes_directory(num_positions, dim):
    """``os.chdir("/")``. Names: working directory."""
    os.chdir("/")
    return vaswani(num_positions, dim)


def writes_into_timesteps(timesteps, dim):
    """Timesteps API: the correct table, then ``timesteps.add_(1)``. Names: its timesteps argument."""
    table = vaswani(timesteps.numpy(), dim)
    timesteps.add_(1)
    return table


def reseeds_torch(num_positions, dim):
    """``torch.manual_seed(0)``. Names: torch's generator (reseeded)."""
    torch.manual_seed(0)
    return vaswani(num_positions, dim)


def reseeds_numpy(num_positions, dim):
    """``numpy.random.seed(0)``. Names: NumPy's generator (reseeded)."""
    np.random.seed(0)
    return vaswani(num_positions, dim)


def reseeds_python(num_positions, dim):
    """``random.seed(0)``. Names: Python's generator (reseeded)."""
    random.seed(0)
    return vaswani(num_positions, dim)


def breaks_numpy_state_getter(num_positions, dim):
    """Replaces ``numpy.random.get_state`` by a function that raises. Names: NumPy's
    generator, its state unreadable."""
    def get_state(*args, **kwargs):
        raise TypeError("no state here")

    np.random.get_state = get_state
    return vaswani(num_positions, dim)


def draws_from_generators(num_positions, dim):
    """Draws from torch's, NumPy's and Python's global generators and discards the draws.
    Verdict: conforms, with a warning naming each generator."""
    torch.rand(3)
    np.random.random_sample()
    random.random()
    return vaswani(num_positions, dim)


def depends_on_generator(num_positions, dim):
    """The correct table with a random half of its elements moved one float32 step toward
    zero (well within the tolerance, never outside [-1, 1]): every formula check passes.
    Verdict: does not conform; ``determinism`` fails."""
    table = torch.from_numpy(vaswani(num_positions, dim))
    nudged = torch.nextafter(table, torch.zeros_like(table))
    return torch.where(torch.rand(table.shape) < 0.5, nudged, table)


class _Finder:
    """An import hook that finds nothing."""

    def find_spec(self, name, path=None, target=None):
        return None


def installs_import_hook(num_positions, dim):
    """Puts a finder first on ``sys.meta_path``. Names: import hooks."""
    sys.meta_path.insert(0, _Finder())
    return vaswani(num_positions, dim)


def replaces_stdout(num_positions, dim):
    """Replaces ``sys.stdout`` with a buffer. Names: standard streams."""
    sys.stdout = io.StringIO()
    return vaswani(num_positions, dim)


def raises_recursion_limit(num_positions, dim):
    """Raises the recursion limit by one. Names: recursion limit."""
    sys.setrecursionlimit(sys.getrecursionlimit() + 1)
    return vaswani(num_positions, dim)


def switches_locale(num_positions, dim):
    """Switches the character-type locale between C and C.UTF-8. Names: locale."""
    current = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C.UTF-8" if current == "C" else "C")
    return vaswani(num_positions, dim)


def imports_a_library(num_positions, dim):
    """Imports ``scipy.special`` on its first call, whose import adds a warnings filter.
    Verdict: conforms; a warning names the import side effect."""
    import scipy.special  # noqa: F401
    return vaswani(num_positions, dim)


def imports_a_library_and_sets_state(num_positions, dim):
    """Imports ``scipy.special`` (which adds a warnings filter), then sets
    ``POSENC_HOSTILE`` and adds a warnings filter of its own. Names: environment variables
    (POSENC_HOSTILE) and warnings filters: an import in the same call excuses nothing else."""
    import scipy.special  # noqa: F401
    os.environ["POSENC_HOSTILE"] = "1"
    warnings.filterwarnings("ignore", message="posenc hostile")
    return vaswani(num_positions, dim)


def imports_its_neighbour(num_positions, dim):
    """Imports ``sets_state_when_imported.py`` from its own folder on its first call, whose
    code sets ``POSENC_HOSTILE``: the user's own module, not a library. Names: environment
    variables (POSENC_HOSTILE)."""
    import sets_state_when_imported  # noqa: F401
    return vaswani(num_positions, dim)
