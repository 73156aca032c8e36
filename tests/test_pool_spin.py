"""The thread pool's optional polling before sleeping (csrc/parallel.c,
`_core.pool_spin_us`, MIXPREC_POOL_SPIN_US): off by default; on, jobs give the same bits."""

import os

import numpy as np

import mixprec as tf
from mixprec import _core
from tolerances import assert_bits_equal


def _work():
    rng = np.random.default_rng(0)
    a = tf.constant(rng.standard_normal((64, 784)).astype(np.float32))
    b = tf.constant(rng.standard_normal((784, 512)).astype(np.float32))
    c = tf.constant(rng.standard_normal((300000,)).astype(np.float32))
    return [tf.matmul(a, b).numpy(), tf.reduce_sum(c).numpy(), tf.exp(c).numpy()]


def test_spin_is_off_by_default_and_settable():
    prev = _core.pool_spin_us()
    assert prev == min(max(int(os.environ.get("MIXPREC_POOL_SPIN_US", "0") or 0), 0), 100000)
    try:
        assert _core.pool_spin_us(40) == prev
        assert _core.pool_spin_us() == 40
        assert _core.pool_spin_us(10**9) == 40  # capped
        assert _core.pool_spin_us() == 100000
    finally:
        _core.pool_spin_us(prev)


def test_spinning_pool_gives_the_same_bits():
    ref = _work()
    prev = _core.pool_spin_us(100)
    try:
        for _ in range(3):
            for got, want in zip(_work(), ref):
                assert_bits_equal(np.asarray(got), np.asarray(want))
    finally:
        _core.pool_spin_us(prev)
