"""Targets written in JAX, TensorFlow and Keras: one correct vaswani table in each, and one
per framework that changes that framework's global state and returns the correct table.

Verdicts: the correct ones conform; each other fails ``global-state`` naming the setting
(JAX's ``jax_enable_x64``, Keras's ``floatx``, TensorFlow's intra-op thread pool); the JAX
table with cos first fails as its NumPy twin does, with the same hint. The
table is written out here in the framework's own operations (not the project's oracle)::

    theta[p, k] = p * 10000 ** (-2k / d)      column 2k = sin(theta_k), column 2k+1 = cos(theta_k)
"""

from __future__ import annotations


def _jax_vaswani(num_positions, dim):
    import jax.numpy as jnp

    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    theta = jnp.arange(num_positions, dtype=jnp.float32)[:, None] * 10000.0 ** (
        -2.0 * jnp.arange(dim // 2, dtype=jnp.float32) / dim)
    return jnp.stack([jnp.sin(theta), jnp.cos(theta)], axis=-1).reshape(num_positions, dim)


def _tf_vaswani(num_positions, dim):
    import tensorflow as tf

    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    theta = tf.cast(tf.range(num_positions)[:, None], tf.float32) * 10000.0 ** (
        -2.0 * tf.cast(tf.range(dim // 2), tf.float32) / dim)
    return tf.reshape(tf.stack([tf.sin(theta), tf.cos(theta)], axis=-1), (num_positions, dim))


def jax_vaswani(num_positions, dim):
    """The table in JAX, jitted (its first call of each shape compiles). Conforms."""
    import jax

    return jax.jit(_jax_vaswani, static_argnums=(0, 1))(num_positions, dim)


def tf_vaswani(num_positions, dim):
    """The table in TensorFlow, eagerly. Conforms."""
    return _tf_vaswani(num_positions, dim)


def jax_cos_first(num_positions, dim):
    """The table in JAX with cos first in each pair (a slip). Fails as its NumPy twin does."""
    table = _jax_vaswani(num_positions, dim)
    return table.reshape(num_positions, dim // 2, 2)[:, :, ::-1].reshape(num_positions, dim)


def numpy_cos_first(num_positions, dim):
    """The same slip in NumPy: the twin whose verdict and hints the JAX target must share."""
    import numpy as np

    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    theta = np.arange(num_positions, dtype=np.float32)[:, None] * np.float32(10000.0) ** (
        np.float32(-2.0) * np.arange(dim // 2, dtype=np.float32) / np.float32(dim))
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1).reshape(num_positions, dim)


def enables_jax_x64(num_positions, dim):
    """``jax.config.update("jax_enable_x64", True)``. Names: JAX configuration (jax_enable_x64)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return _jax_vaswani(num_positions, dim)


def sets_keras_floatx(num_positions, dim):
    """``keras.config.set_floatx("float16")``. Names: Keras configuration (floatx)."""
    import keras

    keras.config.set_floatx("float16")
    return _tf_vaswani(num_positions, dim)


def sets_tf_threads(num_positions, dim):
    """``tf.config.threading.set_intra_op_parallelism_threads(2)``. Names: TensorFlow threads."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(2)
    return _tf_vaswani(num_positions, dim)


def jax_then_aborts(num_positions, dim):
    """Computes the table in JAX, then ``os.abort()``: its process dies from SIGABRT of the
    target's own doing, which the verdict must not lay on JAX's needs."""
    import os

    _jax_vaswani(num_positions, dim).block_until_ready()
    os.abort()


def _tf_cos_first(num_positions, dim):
    import tensorflow as tf

    table = _tf_vaswani(num_positions, dim)
    return tf.reshape(tf.reverse(tf.reshape(table, (num_positions, dim // 2, 2)), axis=[-1]), (num_positions, dim))


def tf_variable(num_positions, dim):
    """The table returned as a ``tf.Variable``. Conforms, its result named a tensorflow Variable."""
    import tensorflow as tf

    return tf.Variable(_tf_vaswani(num_positions, dim))


def tf_variable_lying(num_positions, dim):
    """A ``tf.Variable`` (a subclass) holding the table with cos first, whose ``__array__``,
    ``numpy``, ``value`` and ``read_value`` hand out the correct table. Fails ``formula``:
    a variable is read from its resource."""
    from tensorflow.python.ops.resource_variable_ops import ResourceVariable

    right = _tf_vaswani(num_positions, dim)

    class Lying(ResourceVariable):
        def __array__(self, dtype=None, copy=None):
            return right.numpy()

        def numpy(self):
            return right.numpy()

        def value(self):
            return right

        def read_value(self):
            return right

    return Lying(_tf_cos_first(num_positions, dim))


def keras_variable_lying(num_positions, dim):
    """A Keras ``Variable`` (a subclass, on the declared backend) holding the table with cos
    first, whose ``__array__``, ``numpy`` and ``value`` hand out the correct table. Fails
    ``formula``: a variable is read through the array it holds."""
    import keras
    import numpy as np

    right = np.asarray(_tf_vaswani(num_positions, dim))

    class Lying(keras.Variable):
        def __array__(self, dtype=None, copy=None):
            return right

        def numpy(self):
            return right

        @property
        def value(self):
            return keras.ops.convert_to_tensor(right)

    return Lying(np.asarray(_tf_cos_first(num_positions, dim)), trainable=False)


def jax_grows_without_bound(num_positions, dim):
    """Holds 256 MiB JAX arrays, one more on each step, until the allocation fails. Fails
    ``call[50x8]`` naming the --max-memory limit, as its NumPy twin in ``exhaustion`` does;
    not laid on JAX's own needs (JAX started and computed under the same limit)."""
    import jax.numpy as jnp

    held = [_jax_vaswani(num_positions, dim).block_until_ready()]
    while True:
        held.append(jnp.ones((2**26,), dtype=jnp.float32).block_until_ready())


def jax_starts_threads(num_positions, dim):
    """Computes the table in JAX, then starts threads that sleep, more than the process limit
    allows. Fails ``call[50x8]`` naming --max-processes, as its NumPy twin in ``exhaustion`` does."""
    import threading
    import time

    table = _jax_vaswani(num_positions, dim).block_until_ready()
    for _ in range(4096):
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    return table
