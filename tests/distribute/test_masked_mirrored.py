"""Masked models under a MirroredStrategy of two CPUs against tf-keras 2.21
(tests/keras/golden/tf_more_layers.npz): each replica's loss averages over its own unmasked
timesteps, as tf-keras computes per-replica losses, and the logged loss is the mean over the
replicas."""

import os

import numpy as np

import mixprec as tf
from mixprec import keras
from mixprec.keras import layers as L  # noqa: N812
from mixprec.testing.tolerances import TOLERANCE

GOLD = dict(np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 "keras", "golden", "tf_more_layers.npz")))


def test_masked_model_under_mirrored_strategy_matches_tf_keras(two_cpus):
    strategy = tf.distribute.MirroredStrategy(two_cpus)
    with strategy.scope():
        model = keras.Sequential([L.Embedding(10, 4, mask_zero=True), L.Dense(3)])
        model.build((None, 5))
        model.set_weights([GOLD["mask_model_w%d" % i] for i in range(3)])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", metrics=["mae"],
                      weighted_metrics=["mse"])
    rtol, atol = TOLERANCE[("float32", "reduction")]
    got = model.evaluate(GOLD["mask_ids"], GOLD["mask_y"], batch_size=4, verbose=0)
    np.testing.assert_allclose(got, GOLD["mask_mirrored_eval"], rtol=rtol, atol=atol)
    hist = model.fit(GOLD["mask_ids"], GOLD["mask_y"], batch_size=4, epochs=2, shuffle=False,
                     verbose=0)
    np.testing.assert_allclose(hist.history["loss"], GOLD["mask_mirrored_fit_loss"], rtol=rtol,
                               atol=atol)
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, GOLD["mask_mirrored_after_w%d" % i], rtol=rtol, atol=atol)
