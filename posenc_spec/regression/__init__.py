"""Numeric regression checking: what an encoding returned, recorded exactly, and compared in ULPs.

``posenc-spec snapshot`` records the outputs of a target on a grid of calls
(:mod:`.snapshot`: the file format and its safe reading), ``posenc-spec check --against``
replays the inputs and compares the outputs, ``posenc-spec diff`` compares two snapshots
(:mod:`.compare`, on the distances of :mod:`.ulp`); both sides exchange the plain records
of :mod:`.records`. This module is their face: it names what the others define.
"""

from .compare import CallDiff, OutputDiff, compare_call, compare_snapshots
from .records import RecordedArray, RecordedCall, Snapshot, SnapshotError, SnapshotExistsError
from .snapshot import snapshot_meta, write_snapshot
from .snapshot_reader import read_snapshot

__all__ = [
    "CallDiff", "OutputDiff", "RecordedArray", "RecordedCall", "Snapshot", "SnapshotError", "SnapshotExistsError",
    "compare_call", "compare_snapshots", "read_snapshot", "snapshot_meta", "write_snapshot",
]
