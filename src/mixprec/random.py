"""``tf.random``: seeded random tensors from a counter-based generator (Philox4x32-10).

Seeding follows TensorFlow's two-level rule: ``set_seed`` fixes the global seed and
restarts every sequence; an op-level ``seed=`` picks a sequence within it. Repeated calls
draw fresh values (each call takes the next stream), so re-running a program after
``set_seed`` reproduces it exactly. CPU and GPU draw the same numbers for the same
(seed, stream): element i depends only on (seed, stream, i).
"""

import os
import threading

from mixprec import _core
from mixprec._dtypes import as_dtype, float32

__all__ = ["set_seed", "get_seed", "normal", "uniform", "truncated_normal"]

_lock = threading.Lock()
_global_seed = None
_random_key = int.from_bytes(os.urandom(8), "little") >> 1
_stream = 0
_op_streams = {}

_MASK = (1 << 63) - 1


def _mix(a, b):
    # splitmix64-style combination of two seeds into one 63-bit key
    z = (a * 0x9E3779B97F4A7C15 + b + 0x632BE59BD9B4E019) & ((1 << 64) - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    return (z ^ (z >> 31)) & _MASK


def set_seed(seed):
    """Sets the global random seed (``None`` returns to unseeded behaviour)."""
    global _global_seed, _stream
    with _lock:
        _global_seed = None if seed is None else int(seed)
        _stream = 0
        _op_streams.clear()


def get_seed(op_seed):
    """The (key, stream) the next op with ``op_seed`` will use, and advances it."""
    global _stream
    with _lock:
        base = _random_key if _global_seed is None else _mix(_global_seed, 0)
        if op_seed is None:
            key, stream = base, _stream
            _stream += 1
        else:
            op_seed = int(op_seed)
            key = _mix(base, op_seed + 1)
            stream = _op_streams.get(op_seed, 0)
            _op_streams[op_seed] = stream + 1
    return key, stream


def _shape(shape):
    return list(shape) if not isinstance(shape, int) else [shape]


def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats)."""
    dtype = as_dtype(dtype)
    if maxval is None:
        if not dtype.is_floating:
            raise ValueError("Must specify maxval for integer dtype %s" % dtype.name)
        maxval = 1
    key, stream = get_seed(seed)
    return _core.random(0, _shape(shape), float(minval), float(maxval), dtype, key, stream)


def normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    key, stream = get_seed(seed)
    return _core.random(1, _shape(shape), float(mean), float(stddev), as_dtype(dtype), key,
                        stream)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    """Normal values re-drawn until within two standard deviations of the mean."""
    key, stream = get_seed(seed)
    return _core.random(2, _shape(shape), float(mean), float(stddev), as_dtype(dtype), key,
                        stream)

from mixprec._random_stateless import (  # noqa: E402,F401
    Algorithm, fold_in, split, stateless_binomial, stateless_categorical, stateless_normal,
    stateless_truncated_normal, stateless_uniform)
from mixprec._random_generator import (  # noqa: E402,F401
    Generator, categorical, create_rng_state, gamma, get_global_generator, poisson,
    set_global_generator, shuffle)
from mixprec import _random_experimental as experimental  # noqa: E402,F401

__all__ += ["Algorithm", "fold_in", "split", "stateless_binomial", "stateless_categorical",
            "stateless_normal", "stateless_truncated_normal", "stateless_uniform", "Generator",
            "categorical", "create_rng_state", "gamma", "get_global_generator", "poisson",
            "set_global_generator", "shuffle", "experimental"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
