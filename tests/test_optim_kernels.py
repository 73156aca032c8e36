"""The CPU optimizer kernels give the same bits at every vector width: the AVX-512 loops
(csrc/cpu_optim.c) against the baseline x86-64 loops (MIXPREC_NO_AVX512=1), for every rule
and slot combination, on sizes that leave a vector tail, and the finite check finds an inf
or NaN anywhere."""

import json
import os
import subprocess
import sys

import pytest

CHILD = r"""
import json, sys
import numpy as np
import mixprec as tf
from mixprec import keras
rng = np.random.default_rng(0)
out = {}
cases = {
    "sgd": lambda: keras.optimizers.SGD(0.01),
    "momentum": lambda: keras.optimizers.SGD(0.01, momentum=0.9),
    "nesterov": lambda: keras.optimizers.SGD(0.01, momentum=0.9, nesterov=True),
    "rmsprop": lambda: keras.optimizers.RMSprop(),
    "rmsprop_momentum": lambda: keras.optimizers.RMSprop(momentum=0.5),
    "rmsprop_centered": lambda: keras.optimizers.RMSprop(momentum=0.5, centered=True),
    "adam": lambda: keras.optimizers.Adam(),
    "amsgrad": lambda: keras.optimizers.Adam(amsgrad=True),
    "adagrad": lambda: keras.optimizers.Adagrad(0.1),
    "adagrad_legacy": lambda: keras.optimizers.legacy.Adagrad(0.1),
    "adadelta": lambda: keras.optimizers.Adadelta(1.0),
    "adamax": lambda: keras.optimizers.Adamax(),
    "nadam": lambda: keras.optimizers.Nadam(),
    "adamw": lambda: keras.optimizers.AdamW(weight_decay=0.1),
    "ftrl": lambda: keras.optimizers.Ftrl(0.1, l1_regularization_strength=0.01,
                                          l2_shrinkage_regularization_strength=0.1),
    "lion": lambda: keras.optimizers.Lion(weight_decay=0.5),
    "sgd_decay": lambda: keras.optimizers.SGD(0.01, weight_decay=0.1),
}
for name, make in cases.items():
    opt = make()
    vs = [tf.Variable(rng.standard_normal(s).astype(np.float32)) for s in ((37, 29), (1031,), (3,))]
    for _ in range(4):
        grads = [tf.constant(rng.standard_normal(v.shape).astype(np.float32)) for v in vs]
        opt.apply_gradients(zip(grads, vs))
    out[name] = [np.asarray(v.numpy()).view(np.uint32).tolist() for v in vs]
# the finite check (the loss-scale optimizer skips a step whose gradients hold inf/NaN),
# the bad value in the vector body and in the tail
skipped = []
for pos in (0, 17, 1030):
    for bad in (np.inf, np.nan):
        v = tf.Variable(np.ones(1031, np.float32))
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1))
        g = np.ones(1031, np.float32)
        g[pos] = bad
        opt.apply_gradients([(tf.constant(g), v)])
        skipped.append(bool((np.asarray(v.numpy()) == 1).all()))
out["skipped"] = skipped
print(json.dumps(out))
"""


def _avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def _run(**env):
    res = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         env=dict(os.environ, MIXPREC_NUM_THREADS="1", **env), timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not _avx512(), reason="this CPU has no AVX-512: one loop only")
def test_optimizer_updates_same_bits_at_every_width():
    wide, base = _run(), _run(MIXPREC_NO_AVX512="1")
    assert wide.keys() == base.keys()
    for name in wide:
        assert wide[name] == base[name], name
    assert all(wide["skipped"])
