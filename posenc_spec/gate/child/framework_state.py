"""The global state of JAX, TensorFlow and Keras a call must leave as it found it.

Entries of :mod:`.state` (the same ``(name, read, restore, numeric)``), read only while
their framework is imported: before that, reading one raises, and :func:`.state.snapshot`
leaves it out, so that a run without the framework reads nothing and imports nothing, and a
framework imported meanwhile is not taken for a change. A declared framework is imported
before the target's module (:func:`.frameworks.prepare`), so its state is watched through
the target's import too.

- JAX: ``jax_enable_x64`` (int64 and float64 exist or not), the default matmul precision,
  the default device, dtype and rank promotion, ``jax_disable_jit``.
- TensorFlow: TF32 execution, op determinism, the graph optimizer's options (its automatic
  mixed precision among them), eager execution, functions run eagerly (what later code
  computes); soft device placement and the thread pools' sizes (the process's). Once
  TensorFlow's runtime has started, its thread pools cannot be resized: a change is named
  and its restoring said to have failed.
- Keras: its backend (chosen at import, never restored), ``floatx``, ``epsilon``, the
  image data format and the global dtype policy (mixed precision).
"""

from __future__ import annotations

import sys

from . import state
from .state import Entry


class NotImported(LookupError):
    """The framework is not imported: the entry is not read."""


def _module(name: str):
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        raise NotImported(name)
    return module


def _settings(owner: str, settings: dict):
    """``(read, restore)`` over named ``(get, set)`` pairs of the framework ``owner``
    (:func:`.state.named_settings`), read only once ``owner`` is imported."""
    read, restore = state.named_settings(**settings)

    def read_imported():
        _module(owner)
        return read()

    return read_imported, restore


# -- JAX ------------------------------------------------------------------------------------------

_JAX_FLAGS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_default_device", "jax_numpy_dtype_promotion",
              "jax_numpy_rank_promotion", "jax_disable_jit")


def _jax_flag(name: str):
    def get():
        return getattr(_module("jax").config, name)

    def put(value):
        _module("jax").config.update(name, value)

    return get, put


# -- TensorFlow -----------------------------------------------------------------------------------


def _tf():
    return _module("tensorflow")


def _determinism():
    """TensorFlow's own module of op determinism (its getter is not in the public API)."""
    _tf()
    return sys.modules["tensorflow.python.framework.config"]


def _tf_numeric():
    config = lambda: _tf().config  # noqa: E731 -- resolved at each reading

    def eager():
        return _tf().executing_eagerly()

    def cannot_restore(what):
        def put(value):
            raise RuntimeError(f"{what} cannot be switched back in this process")
        return put

    return _settings("tensorflow", {
        "tensor_float_32_execution": (lambda: config().experimental.tensor_float_32_execution_enabled(),
                                      lambda value: config().experimental.enable_tensor_float_32_execution(value)),
        "op_determinism": (lambda: _determinism().is_op_determinism_enabled(),
                           lambda value: (_determinism().enable_op_determinism() if value
                                          else _determinism().disable_op_determinism())),
        "optimizer_options": (lambda: config().optimizer.get_experimental_options(),
                              lambda value: config().optimizer.set_experimental_options(value)),
        "executing_eagerly": (eager, cannot_restore("eager execution")),
        "functions_run_eagerly": (lambda: config().functions_run_eagerly(),
                                  lambda value: config().run_functions_eagerly(value)),
    })


def _tf_process():
    threading = lambda: _tf().config.threading  # noqa: E731
    return _settings("tensorflow", {
        "intra_op_threads": (lambda: threading().get_intra_op_parallelism_threads(),
                             lambda value: threading().set_intra_op_parallelism_threads(value)),
        "inter_op_threads": (lambda: threading().get_inter_op_parallelism_threads(),
                             lambda value: threading().set_inter_op_parallelism_threads(value)),
        "soft_device_placement": (lambda: _tf().config.get_soft_device_placement(),
                                  lambda value: _tf().config.set_soft_device_placement(value)),
    })


# -- Keras ----------------------------------------------------------------------------------------


def _keras():
    config = lambda: _module("keras").config  # noqa: E731

    def backend_fixed(value):
        raise RuntimeError("Keras's backend is chosen once, when Keras is imported")

    return _settings("keras", {
        "backend": (lambda: config().backend(), backend_fixed),
        "floatx": (lambda: config().floatx(), lambda value: config().set_floatx(value)),
        "epsilon": (lambda: config().epsilon(), lambda value: config().set_epsilon(value)),
        "image_data_format": (lambda: config().image_data_format(),
                              lambda value: config().set_image_data_format(value)),
        "dtype_policy": (lambda: config().dtype_policy().name, lambda value: config().set_dtype_policy(value)),
    })


def entries() -> list[Entry]:
    """The frameworks' entries, for :func:`.state.entries` (built once a process; each read
    looks its framework up anew)."""
    return [
        Entry("JAX configuration", *_settings("jax", {name: _jax_flag(name) for name in _JAX_FLAGS}), numeric=True),
        Entry("TensorFlow numerics", *_tf_numeric(), numeric=True),
        Entry("TensorFlow threads and placement", *_tf_process()),
        Entry("Keras configuration", *_keras(), numeric=True),
    ]
