"""One call of a target: what the gate asks (:class:`CallRequest`) and what it got (:class:`Outcome`).

Every part of the gate that calls a target (the check grid, ``identify``, ``plot``,
``snapshot``) builds a :class:`CallRequest` here and gets an :class:`Outcome` back from
:mod:`posenc_spec.gate.runner`; nothing else spells out how arguments travel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Item sizes of the dtypes a result may arrive in; bfloat16 travels as its uint16 bits. The
# integers only where a request expects them (CallRequest.allow_integer).
RESULT_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16,
                   "int32": 4, "int64": 8}
INTEGER_RESULTS = ("int32", "int64")
LARGEST_ITEMSIZE = 16


def held_in(values: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 values nearest to ``values`` that ``dtype`` holds exactly (bfloat16 by
    round-to-nearest-even of the bits): what an :class:`ArrayArg` of that dtype carries."""
    values = np.asarray(values).astype(np.float32)
    if dtype == "float16":
        return values.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = values.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32)
    return values


@dataclass(frozen=True, eq=False)
class ArrayArg:
    """An array argument: exact ``values`` (bfloat16 as float32 values it holds exactly),
    the ``dtype`` the target receives it in, as a torch tensor or a NumPy array. ``order``,
    when given, hands it over as a non-contiguous view: its memory holds the axes in that
    order (``(0, 2, 1, 3)``: a ``(b, h, s, d)`` view of ``(b, s, h, d)`` memory, the
    transposed ``q`` transformers passes on)."""

    values: np.ndarray
    dtype: str
    container: str = "torch"
    name: str = "array"
    order: tuple[int, ...] | None = None


@dataclass(frozen=True, eq=False)
class CallRequest:
    """``fn(*args)``, labelled by its grid slot. ``shape`` is the result the call must return
    (one array, or one per item when ``max_items`` > 1); it also bounds what the gate reads.
    ``allow_complex`` and ``allow_integer`` admit complex or integer results (int32 and
    int64: indices, such as a family's buckets); every other call refuses them."""

    label: str
    args: tuple
    shape: tuple[int, ...]
    max_items: int = 1
    allow_complex: bool = False
    rng: str = "a"
    allow_integer: bool = False

    @property
    def max_bytes(self) -> int:
        """The largest reply the gate reads for this call: every item as large as the
        expected shape in the widest dtype (a complex128 table, or float64 cos and sin)."""
        return max(math.prod(self.shape), 1) * LARGEST_ITEMSIZE * self.max_items


@dataclass(eq=False)
class Outcome:
    """What one call did. ``status``: ``ok`` (``arrays`` hold the result in the dtype
    produced, bfloat16 as the float32 it converts to exactly; ``dtypes`` name them;
    ``containers`` say whether each came as a torch tensor or otherwise), ``raised``
    (``exception`` names the type), ``exit`` (sys.exit and other BaseExceptions),
    ``bad`` (returned something that is not numbers), ``died``, ``hung``, ``limit`` (a
    resource limit stopped it), ``malformed`` (the reply broke the protocol) or
    ``not-run``. ``message`` says it in one line; ``state`` names global state the call
    changed (and the child restored); ``effects`` what modules the call imported changed
    (kept: their side effects, see :mod:`posenc_spec.gate.child.attribution`), ``imports``
    which modules it imported; ``written`` names the arguments it wrote into;
    ``overwrote`` what of the previous call's result changed during this call;
    ``rng_before``/``rng_after`` are digests of the global generators."""

    status: str
    message: str
    arrays: list = field(default_factory=list)
    dtypes: list = field(default_factory=list)
    containers: list = field(default_factory=list)
    is_tuple: bool = False
    state: list = field(default_factory=list)
    effects: list = field(default_factory=list)
    imports: str = ""
    written: list = field(default_factory=list)
    overwrote: list = field(default_factory=list)
    rng_before: dict = field(default_factory=dict)
    rng_after: dict = field(default_factory=dict)
    exception: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def ran(self) -> bool:
        """The call ran to an answer (it may have raised)."""
        return self.status in ("ok", "raised", "exit", "bad")

    @property
    def table(self) -> np.ndarray:
        return self.arrays[0]

    @property
    def dtype(self) -> str:
        return self.dtypes[0]

    def __repr__(self):
        return f"Outcome({self.status!r}, {self.message!r})"


def made_here(function, request: CallRequest) -> Outcome:
    """What a sealed child would send back for ``function(*request.args)``, made in this
    process: the families' in-process judges (their tests, corpora and real-code records)
    read the same outcome the gate does. Arrays are handed over as the request says (torch
    or NumPy, in their dtype), the result read as the child reads it."""
    import torch

    from posenc_spec.regression.ulp import bfloat16_values

    from .child.convert import BadResult, to_arrays

    def handed(arg):
        if not isinstance(arg, ArrayArg):
            return arg
        values = np.array(arg.values, dtype=arg.dtype)
        return torch.from_numpy(values) if arg.container == "torch" else values

    try:
        result = function(*[handed(arg) for arg in request.args])
    except Exception as error:  # the target's own failure is a verdict
        return Outcome("raised", f"raised {type(error).__name__}: {error}", exception=type(error).__name__)
    try:
        _, items = to_arrays(result, request.allow_complex, request.max_items, request.allow_integer)
    except (BadResult, ValueError) as error:
        return Outcome("bad", str(error))
    arrays = [bfloat16_values(array) if dtype == "bfloat16" else np.asarray(array) for array, dtype, _ in items]
    return Outcome("ok", items[0][2], arrays=arrays, dtypes=[dtype for _, dtype, _ in items])


def shape_text(shape) -> str:
    """What was returned, by its shape, as a reason says it: ``a 0-d array (a scalar)``,
    ``shape (50,)`` (one axis) or ``shape 50x8``."""
    shape = tuple(shape)
    if not shape:
        return "a 0-d array (a scalar)"
    return f"shape ({shape[0]},)" if len(shape) == 1 else "shape " + "x".join(map(str, shape))


def shape_problem(shape: tuple, expected: tuple) -> str | None:
    """None when ``shape`` is ``expected``, else a reason with a hint for the common slips."""
    if tuple(shape) == tuple(expected):
        return None
    got = shape_text(shape)
    want = "x".join(map(str, expected))
    squeezed = tuple(n for n in shape if n != 1)
    if len(shape) > len(expected) and squeezed == tuple(n for n in expected if n != 1):
        axes = [i for i, n in enumerate(shape) if n == 1]
        if axes and axes[0] == 0:
            return f"returned {got}, expected {want}: an extra leading batch axis (return table[0])"
        return f"returned {got}, expected {want}: an extra axis of size 1 at axis {axes[0]} (squeeze it)"
    if len(expected) == 2:
        length, width = expected
        if tuple(shape) == (width, length):
            return f"returned {got}, expected {want}: transposed (rows must be positions, columns features)"
        if len(shape) == 2 and shape[0] == length:
            return f"returned {got}, expected {want}: {shape[1]} columns for width {width}"
        if len(shape) == 2 and shape[1] == width:
            return f"returned {got}, expected {want}: {shape[0]} rows for {length} positions"
    return f"returned {got}, expected {want}"
