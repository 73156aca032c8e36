"""keras.layers.Wrapper, SpectralNormalization, SpatialDropout3D and tf-keras 2.21's weight
order for layers with sublayers (trainable first, then non-trainable) and for models (each
layer's weights in turn); values printed by tf-keras 2.21 for the same inputs."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

# tf-keras' values were printed rounded to 5 decimals: the matmul row covers it
RTOL, ATOL = TOLERANCE[("float32", "matmul")]


def _plain(names):
    import re
    return [re.sub(r"_\d+(?=/|:)", "", n) for n in names]


def test_spectral_normalization_matches_tf_keras():
    sn = keras.layers.SpectralNormalization(keras.layers.Dense(3), power_iterations=2)
    x = tf.constant(np.arange(8, dtype="float32").reshape(2, 4) / 8)
    sn.build((None, 4))
    sn.layer.kernel.assign(np.arange(12, dtype="float32").reshape(4, 3) / 10 - 0.5)
    sn.layer.bias.assign(np.zeros(3, "float32"))
    sn.vector_u.assign(np.array([[0.1, -0.2, 0.3]], "float32"))
    np.testing.assert_allclose(sn(x, training=False).numpy(),
                               [[0.15, 0.225, 0.3], [0.05, 0.325, 0.6]], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sn(x, training=True).numpy(),
                               [[0.12762, 0.19143, 0.25523], [0.04254, 0.2765, 0.51047]],
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sn.vector_u.numpy(), [[0.5477, 0.57686, 0.60601]],
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sn.layer.kernel.numpy()[:, 2],
                               [-0.25523, 0.0, 0.25523, 0.51047], rtol=RTOL, atol=ATOL)
    assert _plain([w.name for w in sn.weights]) == ["kernel:0", "bias:0", "vector_u:0"]
    assert sorted(sn.get_config()) == ["dtype", "layer", "name", "power_iterations", "trainable"]
    again = keras.layers.SpectralNormalization.from_config(sn.get_config())
    assert again.power_iterations == 2 and isinstance(again.layer, keras.layers.Dense)
    with pytest.raises(ValueError, match="`power_iterations` should be greater than zero"):
        keras.layers.SpectralNormalization(keras.layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="ReLU object has no attribute 'kernel' nor"):
        keras.layers.SpectralNormalization(keras.layers.ReLU()).build((None, 2))


def test_wrappers_and_spatial_dropout_3d():
    assert isinstance(keras.layers.TimeDistributed(keras.layers.Dense(2)), keras.layers.Wrapper)
    assert isinstance(keras.layers.Bidirectional(keras.layers.LSTM(2)), keras.layers.Wrapper)
    d = keras.layers.SpatialDropout3D(0.5, seed=1)
    x = tf.ones((2, 3, 3, 3, 4))
    assert d(x, training=False) is x or np.array_equal(d(x, training=False).numpy(), x.numpy())
    y = d(x, training=True).numpy()
    # whole (batch, channel) volumes are kept (scaled by 2) or dropped
    assert set(np.unique(y).tolist()) <= {0.0, 2.0}
    assert (y.reshape(2, 27, 4).std(axis=1) == 0).all()
    assert d.get_config()["rate"] == 0.5


def test_weight_order_is_tf_keras():
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.bn = keras.layers.BatchNormalization()
            self.d = keras.layers.Dense(2)

        def call(self, x):
            return self.d(self.bn(x))
    layer = Block()
    layer(keras.Input((3,)))
    expect = ["batch_normalization/gamma:0", "batch_normalization/beta:0", "dense/kernel:0",
              "dense/bias:0", "batch_normalization/moving_mean:0",
              "batch_normalization/moving_variance:0"]
    assert [n.split("/", 1)[1] for n in _plain([w.name for w in layer.weights])] == expect
    inp = keras.Input((3,))
    model = keras.Model(inp, Block()(inp))
    assert [n.split("/", 1)[1] for n in _plain([w.name for w in model.weights])] == expect
    seq = keras.Sequential([keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    seq.build((None, 3))
    assert _plain([w.name for w in seq.weights]) == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0",
        "dense/kernel:0", "dense/bias:0"]
    seq.layers[0].trainable = False
    assert len(seq.trainable_weights) == 2 and len(seq.non_trainable_weights) == 4
    assert len(seq.weights) == 6
