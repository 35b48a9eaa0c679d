"""What a regression snapshot holds: plain arrays and numbers, never a target's objects.

:class:`RecordedArray` (an array, exactly), :class:`RecordedCall` (its inputs and outputs,
or that it raised), :class:`Snapshot` (the calls and the metadata), and the errors a
snapshot's writing, reading and comparing raise. Both sides of a regression check
(:mod:`.snapshot`, :mod:`.snapshot_reader`, :mod:`.compare`) exchange these.
"""


from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ulp import holding_dtype

CONTAINERS = ("numpy", "torch")
MAX_DIMENSIONS = 32
MAX_JSON_DEPTH = 32


class SnapshotError(ValueError):
    """A snapshot that cannot be written, read or compared; the message is one line naming the file."""


class SnapshotExistsError(SnapshotError):
    """The path of a new snapshot already holds a file (and ``force`` was not given)."""




@dataclass(frozen=True, eq=False)
class RecordedArray:
    """An input or output array, exactly: ``values`` held in ``holding_dtype(dtype)`` (bfloat16 as
    its uint16 bits); ``container`` says whether the target was given (or returned) a NumPy
    array or a torch tensor. Two are equal when dtype, container, shape and bits agree."""

    values: np.ndarray
    dtype: str
    container: str = "numpy"

    def __post_init__(self):
        if not isinstance(self.values, np.ndarray):
            raise TypeError(f"values must be a NumPy array, got {type(self.values).__name__}")
        holding = holding_dtype(self.dtype)
        if self.values.dtype != holding:
            raise TypeError(f"values hold {self.values.dtype} where {self.dtype} values are held as {holding}")
        if self.values.ndim > MAX_DIMENSIONS:
            raise ValueError(f"values must have at most {MAX_DIMENSIONS} dimensions, got {self.values.ndim}")
        if self.container not in CONTAINERS:
            raise ValueError(f"container must be one of {', '.join(CONTAINERS)}; got {self.container!r}")

    def __eq__(self, other):
        if not isinstance(other, RecordedArray):
            return NotImplemented
        return ((self.dtype, self.container, self.values.shape) == (other.dtype, other.container, other.values.shape)
                and self.values.tobytes() == other.values.tobytes())

    __hash__ = None

    @classmethod
    def of(cls, value) -> RecordedArray:
        """Record a NumPy array or a torch tensor (copied to the CPU; bfloat16 kept as its bits)."""
        if type(value).__module__.partition(".")[0] == "torch":
            import torch

            if not isinstance(value, torch.Tensor):
                raise TypeError(f"value must be a NumPy array or a torch tensor, got {type(value).__name__}")
            tensor = value.detach().cpu().resolve_conj().resolve_neg().contiguous()
            dtype = str(tensor.dtype).removeprefix("torch.")
            if dtype == "bfloat16":
                return cls(tensor.view(torch.int16).numpy().view(np.uint16).copy(), dtype, "torch")
            return cls(tensor.numpy().copy(), dtype, "torch")
        if not isinstance(value, np.ndarray):
            raise TypeError(f"value must be a NumPy array or a torch tensor, got {type(value).__name__}")
        return cls(value.astype(value.dtype.newbyteorder("="), copy=True), value.dtype.name)

    def to_value(self):
        """The array as the target saw it: a fresh NumPy array or torch tensor with the same bits."""
        if self.container == "numpy":
            return self.values.copy()
        import torch

        if self.dtype == "bfloat16":
            return torch.from_numpy(self.values.view(np.int16).copy()).view(torch.bfloat16)
        return torch.from_numpy(self.values.copy())


@dataclass(frozen=True)
class RecordedCall:
    """One slot of the grid: its ``label`` (unique in a snapshot), the exact ``args`` (ints,
    floats, :class:`RecordedArray`), and the ``outputs``, or None and the exception type
    name in ``raised`` when the call raised. ``==`` compares float arguments as numbers
    (0.0 == -0.0); :func:`.compare.input_difference` compares them bit by bit."""

    label: str
    args: tuple
    outputs: tuple[RecordedArray, ...] | None
    raised: str | None = None

    def __post_init__(self):
        if not isinstance(self.label, str) or not self.label.isprintable() or not 0 < len(self.label) <= 200:
            raise ValueError(f"label must be 1 to 200 printable characters, got {self.label!r}")
        if not isinstance(self.args, tuple):
            raise TypeError(f"args of {self.label!r} must be a tuple, got {type(self.args).__name__}")
        for value in self.args:
            if isinstance(value, bool) or not isinstance(value, (int, float, RecordedArray)):
                raise TypeError(f"args of {self.label!r} must be ints, floats or RecordedArrays; got {value!r}")
            if isinstance(value, int) and not -(2**63) <= value < 2**63:
                raise ValueError(f"args of {self.label!r}: int {value} does not fit in 64 bits")
        if (self.outputs is None) == (self.raised is None):
            raise ValueError(f"call {self.label!r} must have outputs or raised, not both nor neither")
        if self.raised is not None and not (isinstance(self.raised, str)
                                            and all(part.isidentifier() for part in self.raised.split("."))):
            raise ValueError(f"raised of {self.label!r} must be an exception type name, got {self.raised!r}")
        if self.outputs is not None and not (isinstance(self.outputs, tuple)
                                             and all(isinstance(out, RecordedArray) for out in self.outputs)):
            raise TypeError(f"outputs of {self.label!r} must be a tuple of RecordedArrays, got {self.outputs!r}")


@dataclass(frozen=True)
class Snapshot:
    """What a target returned on a grid of calls, and ``meta``: target, api, created (ISO 8601
    UTC), environment, and anything the caller adds (JSON values: str, int, finite float,
    bool, None, lists and dicts with str keys). :func:`snapshot_meta` makes one."""

    meta: dict
    calls: tuple[RecordedCall, ...]

    def __post_init__(self):
        check_meta(self.meta)
        if not isinstance(self.calls, tuple) or not all(isinstance(call, RecordedCall) for call in self.calls):
            raise TypeError("calls must be a tuple of RecordedCalls")
        labels = [call.label for call in self.calls]
        if len(set(labels)) != len(labels):
            duplicate = next(label for label in labels if labels.count(label) > 1)
            raise ValueError(f"call labels must be unique; {duplicate!r} appears twice or more")

    @property
    def api(self) -> str:
        return self.meta["api"]


def check_meta(meta) -> None:
    """``meta`` holds target, api, created (str) and environment (a dict), all JSON values."""
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, got {type(meta).__name__}")
    for key, kind in (("target", str), ("api", str), ("created", str), ("environment", dict)):
        if not isinstance(meta.get(key), kind):
            raise ValueError(f"meta[{key!r}] must be a {kind.__name__}, got {meta.get(key)!r}")
    _check_json(meta, "meta", 0)


def _check_json(value, where: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a key that is not a str: {key!r}")
            _check_json(item, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]", depth + 1)
    elif isinstance(value, float) and not np.isfinite(value):
        raise ValueError(f"{where} must be finite, got {value!r}")
    elif value is not None and not isinstance(value, (str, int, float)):
        raise TypeError(f"{where} must be a JSON value (str, int, float, bool, None, list, dict), "
                        f"got {type(value).__name__}")
