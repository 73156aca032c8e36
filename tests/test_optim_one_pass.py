"""A step's optimizer update runs as one parallel pass over all its variables' elements
(csrc/cpu_optim.c, multi_range): the same bits as updating each variable on its own, for
variables large enough to be split across threads and small ones around them."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from tolerances import assert_bits_equal

SHAPES = [(784, 256), (256,), (300, 300), (7,), (256, 10), (70000,)]


@pytest.mark.parametrize("make", [lambda: keras.optimizers.RMSprop(0.01),
                                  lambda: keras.optimizers.Adam(0.01, weight_decay=0.1),
                                  lambda: keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))],
                         ids=["rmsprop", "adamw", "loss_scaled_sgd"])
def test_one_pass_update_gives_each_variables_bits(make):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(3)]
    together = [tf.Variable(w) for w in init]
    alone = [tf.Variable(w) for w in init]
    opt_all, opts = make(), [make() for _ in SHAPES]
    for gs in grads:
        opt_all.apply_gradients(zip([tf.constant(g) for g in gs], together))
        for o, g, v in zip(opts, gs, alone):
            o.apply_gradients([(tf.constant(g), v)])
    for a, b in zip(together, alone):
        assert_bits_equal(a.numpy(), b.numpy())
