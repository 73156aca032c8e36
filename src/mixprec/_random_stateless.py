"""``tf.random.stateless_*``, ``fold_in``, ``split`` and ``Algorithm``: random tensors that
are a pure function of a ``[2]`` seed.

The seed is scrambled into a Philox key and counter exactly as TensorFlow's
StatelessRandomGetKeyCounter does (one Philox block on the host: seed bookkeeping, not tensor
elements), and the core draws with TensorFlow's conversions (csrc/philox_tf.h), so uniform,
normal, truncated normal and integer results equal TensorFlow's bit for bit on the CPU.
Scaling (``* (maxval - minval) + minval``) is done by core ops in the dtype, as TensorFlow's.
Categorical samples follow TensorFlow's CPU kernel (the same classes); binomial samples are
deterministic per seed but are not TensorFlow's.
"""

import enum

import numpy as np

from mixprec import _core
from mixprec._dtypes import as_dtype, float32, int32, int64

__all__ = ["Algorithm", "stateless_uniform", "stateless_normal", "stateless_truncated_normal",
           "stateless_categorical", "stateless_binomial", "fold_in", "split",
           "key_counter", "draw"]

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1


class Algorithm(enum.Enum):
    """``tf.random.Algorithm``: the counter-based generators (mixprec draws Philox for all;
    ThreeFry and auto-select are accepted and give Philox's numbers, as TensorFlow's
    auto-select does on CPUs and GPUs)."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def convert_alg(alg):
    """An Algorithm, its value or its name -> Algorithm (TensorFlow's convert_alg_to_int)."""
    if isinstance(alg, Algorithm):
        return alg
    if isinstance(alg, int):
        for a in Algorithm:
            if a.value == alg:
                return a
    if isinstance(alg, str):
        name = alg.lower()
        for a, spellings in ((Algorithm.PHILOX, ("philox",)), (Algorithm.THREEFRY, ("threefry",)),
                             (Algorithm.AUTO_SELECT, ("auto_select",))):
            if name in spellings:
                return a
    raise ValueError("Argument `alg` got unsupported value %r. Supported values are "
                     "Algorithm.PHILOX, Algorithm.THREEFRY, Algorithm.AUTO_SELECT or their "
                     "names/values." % (alg,))


def _philox_block(ctr, key):
    """One Philox4x32-10 block (the seed scrambling's only use): 4 words from 4 + 2."""
    c = list(ctr)
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & _M32, p1 & _M32, ((p0 >> 32) ^ c[3] ^ k1) & _M32,
             p0 & _M32]
        k0 = (k0 + 0x9E3779B9) & _M32
        k1 = (k1 + 0xBB67AE85) & _M32
    return c


def _signed(v):
    return v - (1 << 64) if v >= (1 << 63) else v


def key_counter(s0, s1):
    """TensorFlow's GenerateKey: the (key, counter-high) a seed pair scrambles to."""
    s0 &= _M64
    s1 &= _M64
    mix = _philox_block([s0 & _M32, s0 >> 32, s1 & _M32, s1 >> 32], [0x3EC8F720, 0x02461E29])
    return mix[0] | (mix[1] << 32), mix[2] | (mix[3] << 32)


def _seed_pair(seed):
    """The two seed integers of a ``[2]`` seed (a list, array or int tensor)."""
    if isinstance(seed, _core.Variable):
        seed = seed.read_value()
    if isinstance(seed, _core.Tensor):
        if not seed.dtype.is_integer:
            raise _invalid("Invalid seed type: %s" % seed.dtype.name)
        tok = _core.graph_suspend() if not _core.graph_is_traced(seed) else None
        try:
            arr = seed.numpy()  # a traced seed: a host read (the signature runs eagerly)
        finally:
            if tok is not None:
                _core.graph_resume(tok)
    else:
        arr = np.asarray(seed)
        if arr.dtype.kind not in "iu":
            raise _invalid("Invalid seed type: %s" % arr.dtype)
    if arr.shape != (2,):
        raise _invalid("seed must have shape [2], not [%s]" % ",".join(str(d) for d in arr.shape))
    return int(arr[0]), int(arr[1])


def _invalid(msg):
    from mixprec import errors
    return errors.InvalidArgumentError(None, None, msg)


def _shape(shape):
    if isinstance(shape, _core.Tensor):
        tok = _core.graph_suspend()
        try:
            return [int(d) for d in shape.numpy().reshape(-1)]
        finally:
            _core.graph_resume(tok)
    return [shape] if isinstance(shape, int) else [int(d) for d in shape]


def draw(kind, shape, dtype, key, stream, lo=0, hi=0, mode=1):
    """The core's draw with TensorFlow's conversions: kind 0 uniform [0, 1) (integers:
    lo + bits % (hi - lo), every bit when lo == hi == 0), 1 normal, 2 truncated normal."""
    return _core.random(kind, _shape(shape), float(lo), float(hi), dtype, _signed(key),
                        _signed(stream), mode)


def _as(v, dtype):
    return v if isinstance(v, _core.Tensor) and v.dtype == dtype else \
        _core.convert_to_tensor(v.read_value() if isinstance(v, _core.Variable) else v,
                                dtype=dtype)


def uniform_from(raw, shape, minval, maxval, dtype, what="stateless_uniform", msg=None):
    """Uniform values with TensorFlow's argument rules and scaling; ``raw(kind, shape,
    dtype, lo=0, hi=0)`` draws (integers in [lo, hi), every bit when lo == hi == 0)."""
    dtype = as_dtype(dtype)
    if dtype.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError((msg or
                              "For integer `dtype` argument %s, argument `minval` and `maxval` "
                              "must be both None or not None. Got `minval`=%s and `maxval`=%s.")
                             % (dtype, minval, maxval))
        if dtype not in (int32, int64):
            raise TypeError("%s: integer values of dtype %s are not supported (int32, int64)"
                            % (what, dtype.name))
        if minval is None:
            return raw(0, shape, dtype)
        lo, hi = _int_bound(minval), _int_bound(maxval)
        if not hi > lo:
            raise _invalid("Need minval < maxval: %d >= %d" % (lo, hi))
        return raw(0, shape, dtype, lo, hi)
    if not dtype.is_floating:
        raise TypeError("%s: dtype %s is not floating or integer" % (what, dtype.name))
    if minval is None:
        minval = 0
    if maxval is None:
        maxval = 1
    rnd = raw(0, shape, dtype)
    lo, hi = _as(minval, dtype), _as(maxval, dtype)
    return _core.add(_core.multiply(rnd, _core.subtract(hi, lo)), lo)


def int_in_range(bits, dtype, lo, hi):
    """TensorFlow's ``lo + bits % (hi - lo)`` with ``bits`` unsigned, from full-range draws
    (int32: the word; int64: two words), by int64 core ops."""
    rng = hi - lo
    if dtype == int32:
        u = _core.cast(bits, int64)
        u = _core.where(_core.less(u, _core.constant(0, int64)),
                        _core.add(u, _core.constant(1 << 32, int64)), u)
        r = _core.floormod(u, _core.constant(rng, int64))
        return _core.cast(_core.add(r, _core.constant(lo, int64)), int32)
    if rng >= 1 << 63:
        raise NotImplementedError("integer ranges of 2**63 or more are not supported here")
    r_t = _core.constant(rng, int64)
    s = _core.floormod(bits, r_t)  # right for bits >= 0 (signed == unsigned)
    t = _core.subtract(s, _core.constant(rng - (1 << 64) % rng, int64))  # bits < 0: + 2**64
    neg = _core.where(_core.less(t, _core.constant(0, int64)), _core.add(t, r_t), t)
    res = _core.where(_core.less(bits, _core.constant(0, int64)), neg, s)
    return _core.add(res, _core.constant(lo, int64))


def _int_bound(v):
    if isinstance(v, (_core.Tensor, _core.Variable)):
        tok = _core.graph_suspend()
        try:
            return int(np.asarray(v.numpy()).reshape(()))
        finally:
            _core.graph_resume(tok)
    return int(v)


def normal_from(raw, kind, shape, mean, stddev, dtype):
    dtype = as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("normal values need a floating dtype, got %s" % dtype.name)
    rnd = raw(kind, shape, dtype)
    return _core.add(_core.multiply(rnd, _as(stddev, dtype)), _as(mean, dtype))


def _stateless_raw(seed):
    key, stream = key_counter(*_seed_pair(seed))
    return lambda kind, shape, dtype, lo=0, hi=0: draw(kind, shape, dtype, key, stream, lo, hi)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=float32, name=None,
                      alg="auto_select"):
    """``tf.random.stateless_uniform``: [minval, maxval) values that depend on ``seed``
    only (TensorFlow's numbers). Integers: both bounds, or neither (every bit random)."""
    convert_alg(alg)
    return uniform_from(_stateless_raw(seed), shape, minval, maxval, dtype)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=float32, name=None,
                     alg="auto_select"):
    """``tf.random.stateless_normal`` (TensorFlow's numbers)."""
    convert_alg(alg)
    return normal_from(_stateless_raw(seed), 1, shape, mean, stddev, dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=float32, name=None,
                               alg="auto_select"):
    """``tf.random.stateless_truncated_normal``: normal values within two standard
    deviations (TensorFlow's numbers)."""
    convert_alg(alg)
    return normal_from(_stateless_raw(seed), 2, shape, mean, stddev, dtype)


def categorical_from(logits, num_samples, dtype, uniform):
    """Samples of each row's categorical distribution by the Gumbel-max rule: argmax over
    classes of logits - log(-log(u)) (core ops); ``uniform(shape)`` gives u in [0, 1)."""
    from mixprec import _ops
    if isinstance(logits, _core.Variable):
        logits = logits.read_value()
    logits = _core.convert_to_tensor(logits)
    if not logits.dtype.is_floating:
        logits = _core.cast(logits, float32)
    shape = logits.shape.as_list()
    if len(shape) != 2:
        raise ValueError("logits should be a matrix, got shape %s" % (tuple(shape),))
    dtype = as_dtype(dtype if dtype is not None else int64)
    n = int(num_samples)
    u = uniform([shape[0], n, shape[1]], logits.dtype)
    tiny = _core.constant(np.finfo(np.float32).tiny, logits.dtype)
    gumbel = _core.neg(_core.log(_core.neg(_core.log(_core.maximum(u, tiny)))))
    scores = _core.add(_core.reshape(logits, [shape[0], 1, shape[1]]), gumbel)
    return _ops.argmax(scores, 2, dtype)


def stateless_categorical(logits, num_samples, seed, dtype=int64, name=None):
    """``tf.random.stateless_categorical``: ``[batch, num_samples]`` class indices drawn
    from each row of unnormalised log-probabilities, a function of ``seed``.

    TensorFlow's CPU kernel: per row, the running sums of exp(logit - max) over the finite
    logits (float64), and sample j of row b is the first class whose sum exceeds u * total,
    u the (b * num_samples + j)-th float64 of the seed's stream. Core ops throughout, so the
    samples are TensorFlow's (for inputs TensorFlow does not split across threads: its
    kernel restarts the stream per thread shard)."""
    from mixprec import _ops
    from mixprec._dtypes import float64
    key, stream = key_counter(*_seed_pair(seed))
    if isinstance(logits, _core.Variable):
        logits = logits.read_value()
    logits = _core.convert_to_tensor(logits)
    shape = logits.shape.as_list()
    if len(shape) != 2:
        raise ValueError("logits should be a matrix, got shape %s" % (tuple(shape),))
    dtype = as_dtype(dtype)
    if dtype not in (int32, int64):
        raise TypeError("stateless_categorical: dtype must be int32 or int64, got %s"
                        % dtype.name)
    batch, n = shape[0], int(num_samples)
    x = _core.cast(logits, float64)
    finite = _core.is_finite(x)
    lowest = _core.constant(np.finfo(np.float64).min, float64)
    mx = _core.reduce_max(_core.where(finite, x, lowest), 1, True)
    e = _core.where(finite, _core.exp(_core.subtract(x, mx)), _core.constant(0.0, float64))
    cdf = _ops.cumsum(e, axis=1)  # (batch, classes), sequential as TensorFlow's loop
    total = _ops.gather(cdf, [shape[1] - 1], axis=1) if shape[1] else \
        _core.fill([batch, 1], 0, float64)
    u = _core.reshape(draw(0, [batch * n], float64, key, stream), [batch, n])
    find = _core.multiply(u, total)  # (batch, n)
    below = _core.less_equal(_core.reshape(cdf, [batch, 1, shape[1]]),
                             _core.reshape(find, [batch, n, 1]))
    return _core.cast(_core.reduce_sum(_core.cast(below, int64), 2), dtype)


# Binomial samples as a sum of Bernoulli trials, (elements x max count) uniforms at once.
_BINOMIAL_MAX_DRAWS = 1 << 26


def binomial_from(shape, counts, probs, output_dtype, uniform):
    shape = _shape(shape)
    counts = _as(counts, float32) if not isinstance(counts, _core.Tensor) else \
        _core.cast(counts, float32)
    probs = _as(probs, float32) if not isinstance(probs, _core.Tensor) else \
        _core.cast(probs, float32)
    from mixprec import _ops
    counts = _ops.broadcast_to(counts, shape)
    probs = _ops.broadcast_to(probs, shape)
    tok = _core.graph_suspend()
    try:
        top = int(np.ceil(float(_core.reduce_max(counts)))) if int(np.prod(shape)) else 0
    finally:
        _core.graph_resume(tok)
    n = int(np.prod(shape))
    if n * max(top, 1) > _BINOMIAL_MAX_DRAWS:
        raise NotImplementedError(
            "binomial samples with %d elements and counts up to %d need more than %d uniform "
            "draws in mixprec (a sum of Bernoulli trials); sample fewer or smaller counts"
            % (n, top, _BINOMIAL_MAX_DRAWS))
    dt = as_dtype(output_dtype)
    if top <= 0:
        return _core.cast(_core.fill(shape, 0, float32), dt)
    from mixprec import _ops
    u = uniform(shape + [top], float32)
    trial = _ops.range(0, top, 1, dtype=float32)
    live = _core.less(trial, _ops.expand_dims(counts, -1))
    hit = _core.logical_and(live, _core.less(u, _ops.expand_dims(probs, -1)))
    return _core.cast(_core.reduce_sum(_core.cast(hit, float32), -1), dt)


def stateless_binomial(shape, seed, counts, probs, output_dtype=int32, name=None):
    """``tf.random.stateless_binomial``: successes of ``counts`` trials with success
    probability ``probs`` (broadcast to ``shape``), a function of ``seed``."""
    key, stream = key_counter(*_seed_pair(seed))
    return binomial_from(shape, counts, probs, output_dtype,
                         lambda s, dt: draw(0, s, dt, key, stream))


def fold_in(seed, data, alg="auto_select"):
    """``tf.random.fold_in``: a new seed from ``seed`` and an integer ``data`` (TensorFlow's
    values: [a full-range draw of data's dtype for seed, data])."""
    data = data if isinstance(data, _core.Tensor) else _core.convert_to_tensor(data)
    convert_alg(alg)
    key, stream = key_counter(*_seed_pair(seed))
    first = draw(0, [], data.dtype, key, stream)
    return _core.stack([first, data])


def split(seed, num=2, alg="auto_select"):
    """``tf.random.split``: ``num`` new seeds (a ``[num, 2]`` tensor of seed's dtype,
    TensorFlow's values)."""
    convert_alg(alg)
    dt = seed.dtype if isinstance(seed, _core.Tensor) else \
        _core.convert_to_tensor(seed).dtype
    key, stream = key_counter(*_seed_pair(seed))
    return draw(0, [int(num), 2], dt, key, stream)
