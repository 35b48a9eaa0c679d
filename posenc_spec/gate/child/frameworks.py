"""The boundary between the gate and a target written in JAX, TensorFlow or Keras: in the child.

The gate's calls, and the families' child adapters, hand NumPy arrays and torch tensors. A
target whose declaration names a framework (``framework = "jax" | "tensorflow" | "keras"``,
``keras_backend`` for Keras), or whose module shows one (:func:`infer`), is called through a
boundary that hands every array argument over as that framework's own array, in the dtype
the gate asked for as that framework represents it:

- JAX: a ``jax.Array`` on the default device (``jax.device_put``); bfloat16 and float16 as
  they are. With ``jax_enable_x64`` off (JAX's default) JAX holds no int64 or float64:
  an int64 argument is handed as int32 when every value fits (the same values), and a call
  whose int64 values do not fit raises, naming them, where JAX itself would wrap them
  silently (``jnp.asarray`` makes 2**40 a 0); a float64 argument is handed as the float32
  JAX makes of it. Positions beyond 2**24 in float32 are the target's to get right.
- TensorFlow: an ``EagerTensor`` (``tf.convert_to_tensor``), int64 and float64 kept.
- Keras: the backend's array (JAX's or TensorFlow's as above; NumPy and torch as they are).

A dtype argument (the ``call_dtype`` a family's adapter hands as torch's dtype) is handed
as the framework's own: ``jnp.bfloat16``, ``tf.bfloat16``.

An object a class target builds (``init``) is wrapped too, so that its calls and its
methods' calls cross the boundary. What a call returns is read by :mod:`.convert`, to
which :func:`prepare` adds each framework's reader: a ``jax.Array`` (exactly that type,
which cannot be subclassed) is materialised with the class's own ``block_until_ready``
and copied to the host through the class's own ``__array__``; an ``EagerTensor``
(likewise exact) through TensorFlow's own ``_EagerTensorBase._numpy``; a ``tf.Variable``
(a resource variable of any class) by TensorFlow's read op on its resource, and a Keras
``Variable`` through the backend array it holds. No method a result's own class could
define runs. bfloat16 comes back as bfloat16 (ml_dtypes).

Nothing here imports a framework until :func:`prepare` is asked to: a run without JAX
imports no JAX.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys

import numpy as np

NAMES = ("numpy", "torch", "jax", "tensorflow", "keras")
KERAS_BACKENDS = ("jax", "tensorflow", "torch", "numpy")
# The frameworks whose arrays cross a boundary (NumPy and torch are the gate's own).
FOREIGN = ("jax", "tensorflow")
INT32 = np.iinfo(np.int32)


class FrameworkError(Exception):
    """A target's framework cannot be set up as declared, or an argument cannot be handed over."""


def _loaded(name: str):
    """The module ``name`` when it is fully imported, else None (never imports it)."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


# -- before the target's import ------------------------------------------------------------------


def prepare(request: dict | None) -> None:
    """Import the declared framework (``{"name": ..., "keras_backend": ...}``) before the
    target's module, and add its result readers to :mod:`.convert`; Keras's backend is
    chosen through ``KERAS_BACKEND``, which Keras reads once, when first imported."""
    name = (request or {}).get("name")
    if name not in ("jax", "tensorflow", "keras"):
        return
    if name == "keras":
        backend = request.get("keras_backend")
        if backend and _loaded("keras") is None:
            os.environ["KERAS_BACKEND"] = backend
        importlib.import_module("keras")
        install(backend_of("keras"))
        install("keras")
        return
    importlib.import_module(name)
    install(name)


def backend_of(name: str) -> str:
    """The framework whose arrays a target of ``name`` takes (Keras's backend for keras)."""
    if name != "keras":
        return name
    return _loaded("keras").backend.backend()


def started_threads() -> str | None:
    """Which framework's runtime started threads in this process (a fork of it would inherit
    the runtime without them, and JAX's hangs at its next computation), or None. Reads,
    never starts, a backend."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and _loaded("jax") is not None and bridge.backends_are_initialized():
        return "JAX's backend was started"
    return None


# -- results ------------------------------------------------------------------------------------


def _jax_reader():
    from jax._src.array import ArrayImpl  # the concrete class: no Python subclass of it can be made

    def owns(value) -> bool:
        return type(value) is ArrayImpl

    def read(value):
        ArrayImpl.block_until_ready(value)  # asynchronous dispatch: the values exist from here on
        host = np.array(ArrayImpl.__array__(value), copy=True)
        devices = ", ".join(sorted({str(device.platform) for device in ArrayImpl.devices(value)}))
        return host, f"jax {host.dtype} Array on {devices}"

    return owns, read


def _tensorflow_reader():
    from tensorflow.python.framework import ops

    eager = ops.EagerTensor  # cannot be subclassed

    def owns(value) -> bool:
        return type(value) is eager

    def read(value):
        host = np.array(ops._EagerTensorBase._numpy(value), copy=True)
        return host, f"tensorflow {host.dtype} EagerTensor"

    return owns, read


def _tensorflow_variable_reader():
    """A ``tf.Variable`` (a resource variable, of any class) is read from its resource by
    TensorFlow's own read op, through the base class's ``handle`` and ``dtype``: its class's
    ``__array__``, ``numpy`` or ``read_value`` never run."""
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import gen_resource_variable_ops, resource_variable_ops

    base = resource_variable_ops.BaseResourceVariable

    def owns(value) -> bool:
        return issubclass(type(value), base)  # never the value's own __class__

    def read(value):
        tensor = gen_resource_variable_ops.read_variable_op(base.handle.fget(value), base.dtype.fget(value))
        host = np.array(ops._EagerTensorBase._numpy(tensor), copy=True)
        return host, f"tensorflow {host.dtype} Variable"

    return owns, read


def _keras_variable_reader():
    """A Keras ``Variable`` (of any class) is read through the backend's value it holds (its
    instance's ``_value``, taken from the instance's own dictionary: no property or method
    of its class runs), by that value's reader: a jax Array, a tf.Variable, a NumPy array, a
    torch tensor."""
    from keras.src.backend.common.variables import Variable

    from . import convert

    def owns(value) -> bool:
        return issubclass(type(value), Variable)

    def read(value):
        held = object.__getattribute__(value, "__dict__").get("_value")
        reader = convert.foreign_reader(held)
        if reader is not None:
            host, description = reader(held)
        else:  # the NumPy and torch backends' own arrays
            host = _host(held)
            if host is None:
                raise convert.BadResult(f"returned a Keras Variable holding a {type(held).__name__}, which the gate "
                                        "reads only as its backend's own array")
            host, description = np.array(host, copy=True), f"{type(held).__name__} of {host.dtype}"
        return host, f"keras Variable holding a {description}"

    return owns, read


# Each framework's readers, by the name the target's framework is installed under.
_READERS = {"jax": (_jax_reader,), "tensorflow": (_tensorflow_reader, _tensorflow_variable_reader),
            "keras": (_keras_variable_reader,)}


def install(name: str) -> None:
    """Add the readers of ``name``'s arrays (and variables) to :mod:`.convert` (once)."""
    from . import convert

    for index, reader in enumerate(_READERS.get(name, ())):
        key = f"{name}:{index}"
        if key not in convert.FOREIGN_READERS:
            convert.FOREIGN_READERS[key] = reader()


# -- arguments ----------------------------------------------------------------------------------


def _host(value):
    """A NumPy array or torch tensor argument as a NumPy array (bfloat16 as ml_dtypes'), or None."""
    if type(value) is np.ndarray:
        return value
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    tensor = value.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes

        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def _fits_int32(array: np.ndarray, what: str) -> np.ndarray:
    if array.size and (array.min() < INT32.min or array.max() > INT32.max):
        farthest = int(array.max()) if array.max() > INT32.max else int(array.min())  # a value int32 lacks
        raise FrameworkError(
            f"{what} holds int64 values beyond int32 (such as {farthest}), and JAX runs with jax_enable_x64 "
            "off: it would hold them wrapped (jnp.asarray makes 2**40 a 0); lower the largest position or "
            "timestep the gate asks for (max_positions, t_max)")
    return array.astype(np.int32)


def _dtype_name(value) -> str | None:
    """The name of a torch dtype argument (``"bfloat16"``), else None: the families' child
    adapters name the dtype a target is asked for (``call_dtype``) as torch's."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.dtype):
        return None
    return str(value).removeprefix("torch.")


def to_jax(value, what: str = "an argument"):
    name = _dtype_name(value)
    if name is not None:
        import jax.numpy as jnp

        return getattr(jnp, name, value)  # jnp.bfloat16, as a JAX caller writes it
    array = _host(value)
    if array is None:
        return value
    import jax

    if not jax.config.jax_enable_x64:
        if array.dtype == np.int64:
            array = _fits_int32(array, what)
        elif array.dtype == np.float64:
            array = array.astype(np.float32)
    return jax.device_put(array)


def to_tensorflow(value, what: str = "an argument"):
    name = _dtype_name(value)
    if name is not None:
        import tensorflow as tf

        return getattr(tf, name, value)  # tf.bfloat16
    array = _host(value)
    if array is None:
        return value
    import tensorflow as tf

    return tf.convert_to_tensor(array)


_CONVERTERS = {"jax": to_jax, "tensorflow": to_tensorflow}


def kind_of(target, request: dict | None) -> str | None:
    """The framework whose arrays ``target`` takes (Keras's backend for keras), declared in
    ``request`` or shown by its module (:func:`infer`); None when it shows none."""
    name = (request or {}).get("name") or infer(target)
    return None if name is None else backend_of(name)


def boundary(target, request: dict | None):
    """``target`` called through its framework's boundary (itself for NumPy and torch):
    the declared framework (``request``), else the one its module shows."""
    request = request or {}
    name = request.get("name") or infer(target)
    if name is None:
        return target
    if name == "keras":
        declared, running = request.get("keras_backend"), backend_of("keras")
        if declared and running != declared:
            raise FrameworkError(f"keras runs on the {running} backend, not the declared {declared}: it was "
                                 "imported before the target (by a --preload module, or with KERAS_BACKEND set)")
    kind = backend_of(name)
    if name == "keras":
        install("keras")
    if kind not in FOREIGN:
        return target
    install(kind)
    return _wrap(target, _CONVERTERS[kind])


def _wrap(target, to_framework):
    """A callable that hands ``target`` its array arguments through ``to_framework``; an
    object a class builds is wrapped in turn (:class:`_Built`)."""
    builds = isinstance(target, type)

    @functools.wraps(target)
    def call(*arguments, **keywords):
        arguments = [to_framework(value, f"argument {index}") for index, value in enumerate(arguments)]
        keywords = {name: to_framework(value, name) for name, value in keywords.items()}
        result = target(*arguments, **keywords)
        return _Built(result, to_framework) if builds else result

    return call


class _Built:
    """An object the target's class built, whose calls and methods take the framework's arrays."""

    def __init__(self, made, to_framework):
        self._made, self._to_framework = made, to_framework

    def __call__(self, *arguments, **keywords):
        return _wrap(self._made, self._to_framework)(*arguments, **keywords)

    def __getattr__(self, name: str):
        value = getattr(self._made, name)
        return _wrap(value, self._to_framework) if callable(value) and not isinstance(value, type) else value


# -- what a framework needs to run -------------------------------------------------------------

EXERCISE_SHAPE = (4096, 1024)  # the grid's largest table


def exercise(name: str) -> int | None:
    """Start framework ``name``'s runtime and compute with it as a target at the least makes
    it: a jitted (JAX) or traced (TensorFlow) sinusoidal table of the grid's largest shape,
    and the eager operations on it; the process's threads then (None where they cannot be
    counted). The gate runs this, without any target's code, in a process under a target's
    limits when that target's process died, to learn whether the framework itself dies under
    them, or how many of the threads they allow it takes."""
    positions, width = EXERCISE_SHAPE
    if name == "jax":
        import jax
        import jax.numpy as jnp

        def table(angles):
            return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=-1)

        angles = jnp.arange(positions, dtype=jnp.float32)[:, None] * jnp.ones(width // 2, jnp.float32)
        jax.block_until_ready(jax.jit(table)(angles) + table(angles))
    elif name == "tensorflow":
        import tensorflow as tf

        angles = tf.range(positions, dtype=tf.float32)[:, None] * tf.ones(width // 2, tf.float32)
        table = tf.function(lambda angles: tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1))
        (table(angles) + tf.sin(angles)[:, :1]).numpy()
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


# -- inference ----------------------------------------------------------------------------------

# The top-level modules that name a framework, in the order they are looked for: a Keras
# layer is Keras's whatever backend it runs on; flax is JAX's.
_MODULE_FRAMEWORKS = (("keras", "keras"), ("keras_hub", "keras"), ("tf_keras", "tensorflow"), ("flax", "jax"),
                      ("jax", "jax"), ("tensorflow", "tensorflow"))


def infer(target) -> str | None:
    """The framework a target's own code shows (its class's bases, else the modules its
    module has imported by name), or None: NumPy's and torch's arrays cross no boundary."""
    owners = [getattr(cls, "__module__", "") or "" for cls in getattr(target, "__mro__", ())]
    module = sys.modules.get(getattr(target, "__module__", None) or "")
    names = [value.__name__ for value in vars(module).values()
             if type(value).__name__ == "module"] if module is not None else []
    for candidates in (owners, names):
        tops = {name.partition(".")[0] for name in candidates}
        shown = {framework for top, framework in _MODULE_FRAMEWORKS if top in tops and _loaded(top) is not None}
        if "keras" in shown:
            return "keras"
        # A module that holds torch too, or both JAX and TensorFlow, shows no one framework.
        if len(shown) == 1 and "torch" not in tops:
            return shown.pop()
    return None
