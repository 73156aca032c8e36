"""``tf.random.Generator`` and the global generator, and the stateful samplers
``tf.random.categorical``, ``shuffle``, ``gamma`` and ``poisson``.

A Generator's state is TensorFlow's: an int64 ``[3]`` variable (counter low, counter high,
key) that advances by 256 per drawn element (TensorFlow's reservation). Each draw is one core
Philox draw with TensorFlow's conversions at the state's counter and key, so normal,
uniform, truncated normal and integer draws are TensorFlow's numbers (csrc/philox_tf.h).
The samplers compose core ops (Gumbel-max, rejection rounds over whole tensors); no element
is touched in Python.
"""

import os
import threading

import numpy as np

from mixprec import _core
from mixprec import _random_stateless as _sl
from mixprec._dtypes import as_dtype, float32, int32, int64

__all__ = ["Generator", "get_global_generator", "set_global_generator", "create_rng_state",
           "categorical", "shuffle", "gamma", "poisson"]

_M64 = (1 << 64) - 1
_STATE_SIZE = 3  # Philox: counter (2 x 64 bits) and key
_SKIP_PER_ELEMENT = 256  # TensorFlow's reserved samples per output element


def _signed(v):
    v &= _M64
    return v - (1 << 64) if v >= (1 << 63) else v


def create_rng_state(seed, alg):
    """``tf.random.create_rng_state``: the int64 ``[3]`` state a seed gives (an int is cut
    into 64-bit words, lowest first; a list is left-padded with zeros)."""
    _sl.convert_alg(alg)
    if isinstance(seed, (int, np.integer)):
        seed = int(seed)
        words = [(seed >> (64 * i)) & _M64 for i in range(_STATE_SIZE)]
    else:
        arr = [int(v) for v in np.asarray(seed).reshape(-1)]
        if len(arr) > _STATE_SIZE:
            raise ValueError("seed should have no more than %d elements, got %d"
                             % (_STATE_SIZE, len(arr)))
        words = [0] * (_STATE_SIZE - len(arr)) + arr
    return _core.constant(np.array([_signed(w) for w in words], np.int64))


class Generator:
    """``tf.random.Generator``: a random-number generator whose state (a variable) advances
    with every draw. Inside a traced function its draws need the state at every call: the
    signature runs eagerly (a graph break, one warning)."""

    def __init__(self, copy_from=None, state=None, alg=None):
        from mixprec._variable import Variable
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("When `copy_from` is not None, neither `state` nor `alg` can "
                                 "be specified.")
            state, alg = copy_from.state.numpy(), copy_from.algorithm
        if state is None:
            raise ValueError("Generator needs `state` (or use Generator.from_seed / "
                             "from_non_deterministic_state)")
        self._alg = _sl.convert_alg(alg if alg is not None else _sl.Algorithm.PHILOX)
        if self._alg is _sl.Algorithm.AUTO_SELECT:
            self._alg = _sl.Algorithm.PHILOX
        value = state.numpy() if isinstance(state, (_core.Tensor, _core.Variable)) else state
        value = np.asarray(value, np.int64).reshape(-1)
        if value.shape != (_STATE_SIZE,):
            raise ValueError("The size of `state` does not match the algorithm: expected %d, "
                             "got %d" % (_STATE_SIZE, value.size))
        self._state_var = Variable(value, trainable=False, name="StateVar")

    def _trackable_children(self):
        """Checkpoint children: the state variable, under TensorFlow's name for it."""
        return [("_state_var", self._state_var)]

    # construction -----------------------------------------------------------------

    @classmethod
    def from_seed(cls, seed, alg=None):
        """A generator whose state is ``create_rng_state(seed)``."""
        alg = alg if alg is not None else _sl.Algorithm.PHILOX
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """A generator seeded from the operating system's entropy."""
        seed = int.from_bytes(os.urandom(24), "little")
        return cls.from_seed(seed, alg)

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        counter = [int(v) for v in np.asarray(counter).reshape(-1)]
        return cls(state=np.array(counter + [int(np.asarray(key).reshape(()))], np.int64),
                   alg=alg)

    # state --------------------------------------------------------------------------

    @property
    def state(self):
        """The state variable (int64 ``[3]``)."""
        return self._state_var

    @property
    def algorithm(self):
        """The RNG algorithm's id (1: Philox)."""
        return self._alg.value

    @property
    def key(self):
        return _core.constant(np.int64(self._words()[-1]))

    def reset(self, state):
        self._state_var.assign(np.asarray(state.numpy() if isinstance(
            state, (_core.Tensor, _core.Variable)) else state, np.int64))

    def reset_from_seed(self, seed):
        self.reset(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key, counter):
        counter = [int(v) for v in np.asarray(counter).reshape(-1)]
        self.reset(np.array(counter + [int(np.asarray(key).reshape(()))], np.int64))

    def skip(self, delta):
        """Advances the counter as ``delta`` draws would (TensorFlow's rule)."""
        self._advance(int(delta))

    def _words(self):
        tok = _core.graph_suspend()
        try:
            return [int(v) & _M64 for v in self._state_var.numpy()]
        finally:
            _core.graph_resume(tok)

    def _advance(self, n):
        w = self._words()
        ctr = (w[0] | (w[1] << 64)) + n * _SKIP_PER_ELEMENT
        tok = _core.graph_suspend()
        try:
            self._state_var.assign(np.array([_signed(ctr), _signed(ctr >> 64), _signed(w[2])],
                                            np.int64))
        finally:
            _core.graph_resume(tok)

    def _raw(self, kind, shape, dtype, lo=0, hi=0):
        """One draw at the state's counter with TensorFlow's conversions (its numbers);
        advances the state past it. Integers in [lo, hi) unless lo == hi == 0."""
        if _core.graph_recording() is not None:
            _core.graph_break("tf.random.Generator (its state advances at every call)")
        w = self._words()
        dims = _sl._shape(shape)
        n = int(np.prod(dims)) if dims else 1
        dtype = as_dtype(dtype)
        out = _sl.draw(kind, dims, dtype, w[2], w[1], w[0] & 0xFFFFFFFF, w[0] >> 32, mode=2)
        self._advance(n)
        if dtype.is_integer and hi != lo:
            out = _sl.int_in_range(out, dtype, lo, hi)
        return out

    # draws --------------------------------------------------------------------------

    def uniform(self, shape, minval=0, maxval=None, dtype=float32, name=None):
        """Uniform values in [minval, maxval); integer dtypes need both bounds or neither."""
        return _sl.uniform_from(
            self._raw, shape, minval, maxval, dtype, "Generator.uniform",
            "For integer dtype %s, minval and maxval must be both `None` or both non-`None`; "
            "got minval=%s and maxval=%s")

    def uniform_full_int(self, shape, dtype=int64, name=None):
        """Integers of every bit pattern of ``dtype`` (int32 or int64)."""
        return _sl.uniform_from(self._raw, shape, None, None, dtype,
                                "Generator.uniform_full_int")

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=float32, name=None):
        return _sl.normal_from(self._raw, 1, shape, mean, stddev, dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=float32, name=None):
        return _sl.normal_from(self._raw, 2, shape, mean, stddev, dtype)

    def binomial(self, shape, counts, probs, dtype=int32, name=None):
        """Binomial samples (sums of Bernoulli trials on this generator's stream; not
        TensorFlow's sampler)."""
        return _sl.binomial_from(shape, counts, probs, dtype,
                                 lambda s, dt: self._raw(0, s, dt))

    def make_seeds(self, count=1):
        """A ``[2, count]`` int64 tensor of new seeds for the stateless functions."""
        keys = self.uniform_full_int([int(count)], int64)
        return _core.stack([keys, _core.fill([int(count)], 0, int64)])

    def split(self, count=1):
        """``count`` new generators, independent of this one (whose state advances)."""
        keys = self.uniform_full_int([int(count)], int64).numpy()
        return [Generator(state=np.array([0, 0, k], np.int64), alg=self._alg) for k in keys]


_global = threading.local()
_global_generator = [None]


def get_global_generator():
    """``tf.random.get_global_generator``: created from the OS's entropy at first use."""
    if _global_generator[0] is None:
        _global_generator[0] = Generator.from_non_deterministic_state()
    return _global_generator[0]


def set_global_generator(generator):
    """``tf.random.set_global_generator``."""
    if not isinstance(generator, Generator):
        raise TypeError("set_global_generator needs a tf.random.Generator, got %s"
                        % type(generator).__name__)
    _global_generator[0] = generator


# ------------------------------------------------------------ stateful samplers (op seeds)

def _uniform_op(seed):
    """u in [0, 1) of any shape from the op-seed sequence (tf.random.set_seed's)."""
    from mixprec import random as _random

    def draw(shape, dtype):
        key, stream = _random.get_seed(seed)
        return _core.random(0, [int(d) for d in shape], 0.0, 1.0, as_dtype(dtype), key, stream)
    return draw


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """``tf.random.categorical``: ``[batch, num_samples]`` class indices (int64 unless
    ``dtype``) drawn from each row of unnormalised log-probabilities."""
    return _sl.categorical_from(logits, num_samples, dtype, _uniform_op(seed))


def shuffle(value, seed=None, name=None):
    """``tf.random.shuffle``: ``value`` with its first dimension randomly permuted."""
    from mixprec import _ops
    from mixprec import random as _random
    value = value.read_value() if isinstance(value, _core.Variable) else \
        _core.convert_to_tensor(value)
    if value.shape.rank == 0:
        raise ValueError("tf.random.shuffle needs a tensor of rank >= 1, got a scalar")
    n = value.shape[0]
    if n <= 1:
        return _core.identity(value)
    key, stream = _random.get_seed(seed)
    keys = _sl.draw(0, [n], int64, key, stream, mode=2)  # every bit random: ties are rare
    argsort = getattr(__import__("mixprec"), "argsort", None)
    if argsort is not None:
        perm = argsort(keys, stable=True)
    else:
        if n > 8192:
            raise NotImplementedError("tf.random.shuffle of more than 8192 rows needs "
                                      "tf.argsort, which this build lacks")
        # the rank of each key: how many keys are smaller, ties broken by position
        col = _core.reshape(keys, [n, 1])
        row = _core.reshape(keys, [1, n])
        idx = _ops.range(0, n, 1, dtype=int64)
        before = _core.logical_or(_core.less(row, col), _core.logical_and(
            _core.equal(row, col), _core.less(_core.reshape(idx, [1, n]),
                                              _core.reshape(idx, [n, 1]))))
        rank = _core.reduce_sum(_core.cast(before, int64), 1)
        # row i goes to position rank[i]: the inverse permutation by a one-hot product
        perm = _ops.argmax(_core.cast(_core.equal(_core.reshape(rank, [n, 1]),
                                                  _core.reshape(idx, [1, n])), int32), 0,
                           int64)
    return _ops.gather(value, perm)


def _out_shape(shape, *params):
    from mixprec import _ops
    shape = _sl._shape(shape)
    ps = [p.shape.as_list() for p in params]
    b = list(np.broadcast_shapes(*[tuple(s) for s in ps])) if ps else []
    return shape + b, [(_ops.broadcast_to(p, shape + b)) for p in params]


def gamma(shape, alpha, beta=None, dtype=float32, seed=None, name=None):
    """``tf.random.gamma``: samples of shape ``shape + broadcast(alpha, beta).shape`` (rate
    ``beta``), by Marsaglia and Tsang's rejection over whole tensors (a few rounds)."""
    from mixprec import random as _random
    dtype = as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("tf.random.gamma needs a floating dtype, got %s" % dtype.name)
    work = np.float64 if dtype.name == "float64" else np.float32
    wdt = as_dtype(work)
    a = _core.cast(_core.convert_to_tensor(alpha), wdt) if not isinstance(alpha, _core.Tensor) \
        else _core.cast(alpha, wdt)
    params = [a]
    if beta is not None:
        params.append(_core.cast(_core.convert_to_tensor(beta), wdt))
    full, bparams = _out_shape(shape, *params)
    a = bparams[0]
    small = _core.less(a, _core.constant(1.0, wdt))
    a1 = _core.where(small, _core.add(a, _core.constant(1.0, wdt)), a)
    d = _core.subtract(a1, _core.constant(1.0 / 3.0, wdt))
    c = _core.truediv(_core.constant(1.0, wdt), _core.sqrt(_core.multiply(
        _core.constant(9.0, wdt), d)))
    out = _core.fill(full, 0, wdt)
    done = _core.fill(full, False, "bool")
    one = _core.constant(1.0, wdt)
    for _ in range(64):
        k1, s1 = _random.get_seed(seed)
        k2, s2 = _random.get_seed(seed)
        x = _core.random(1, full, 0.0, 1.0, wdt, k1, s1)
        u = _core.random(0, full, 0.0, 1.0, wdt, k2, s2)
        v = _core.add(one, _core.multiply(c, x))
        v = _core.multiply(_core.multiply(v, v), v)
        pos = _core.greater(v, _core.constant(0.0, wdt))
        safe_v = _core.where(pos, v, one)
        rhs = _core.add(_core.multiply(_core.constant(0.5, wdt), _core.multiply(x, x)),
                        _core.multiply(d, _core.add(_core.subtract(one, safe_v),
                                                    _core.log(safe_v))))
        ok = _core.logical_and(pos, _core.less(_core.log(_core.maximum(
            u, _core.constant(np.finfo(work).tiny, wdt))), rhs))
        take = _core.logical_and(ok, _core.logical_not(done))
        out = _core.where(take, _core.multiply(d, safe_v), out)
        done = _core.logical_or(done, ok)
        if bool(_core.reduce_all(done)):
            break
    # alpha < 1: Gamma(a) = Gamma(a + 1) * U^(1/a)
    k3, s3 = _random.get_seed(seed)
    u = _core.random(0, full, 0.0, 1.0, wdt, k3, s3)
    u = _core.maximum(u, _core.constant(np.finfo(work).tiny, wdt))
    boost = _core.exp(_core.truediv(_core.log(u), _core.where(small, a, one)))
    out = _core.where(small, _core.multiply(out, boost), out)
    if beta is not None:
        out = _core.truediv(out, bparams[1])
    return _core.cast(out, dtype)


def poisson(shape, lam, dtype=float32, seed=None, name=None):
    """``tf.random.poisson``: counts of shape ``shape + lam.shape``: how many exponential
    inter-arrival times fit in ``lam`` (drawn in chunks, cumulated by core ops)."""
    from mixprec import _ops
    from mixprec import random as _random
    dtype = as_dtype(dtype)
    lam_t = _core.cast(lam if isinstance(lam, _core.Tensor) else _core.convert_to_tensor(lam),
                       float32)
    full, (lam_b,) = _out_shape(shape, lam_t)
    top = float(_core.reduce_max(lam_b)) if int(np.prod(full)) else 0.0
    count = _core.fill(full, 0, float32)
    if top > 0:
        chunk = int(top + 6 * np.sqrt(top) + 16)
        left = lam_b  # time left before lam is reached
        for _ in range(64):
            key, stream = _random.get_seed(seed)
            u = _core.random(0, full + [chunk], 0.0, 1.0, float32, key, stream)
            e = _core.neg(_core.log(_core.subtract(_core.constant(1.0), u)))  # exponential(1)
            t = _ops.cumsum(e, axis=-1)
            inside = _core.less_equal(t, _ops.expand_dims(left, -1))
            count = _core.add(count, _core.reduce_sum(_core.cast(inside, float32), -1))
            left = _core.subtract(left, _core.reduce_max(t, -1))
            if not bool(_core.reduce_any(_core.greater(left, _core.constant(0.0)))):
                break
    return _core.cast(count, dtype)
