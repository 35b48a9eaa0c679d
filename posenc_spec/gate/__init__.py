"""The gate: check someone else's sinusoidal encoding against a declared convention.

``posenc-spec check`` and ``posenc-spec identify`` (:mod:`posenc_spec.gate.command`) and the
pytest plugin (:mod:`posenc_spec.pytest_plugin`) are thin layers over this engine; the check
ids are listed in :mod:`posenc_spec.gate.grid`.
"""

from .engine import DEFAULT_TIMEOUT, GateReport, GateSpec, check_many, check_target, exit_status
from .identify import identify_many, identify_target
from .worker import session

__all__ = ["DEFAULT_TIMEOUT", "GateReport", "GateSpec", "check_many", "check_target", "exit_status",
           "identify_many", "identify_target", "session"]
