"""keras.layers.Embedding as tf-keras 2.21: a float32 table under every policy, the output in
the compute dtype, floating ids cast to int32, the mask of mask_zero, get_config, the gradient
into the table and TensorFlow's out-of-range error (expected values checked against
TensorFlow 2.21 / tf-keras 2.21 on CPU)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.keras import mixed_precision
from tolerances import assert_close


def test_lookup_dtypes_under_policies():
    ids = np.array([[0, 3, 9], [1, 1, 2]])
    for policy, out_dt in (("float32", "float32"), ("mixed_float16", "float16"),
                           ("mixed_bfloat16", "bfloat16")):
        mixed_precision.set_global_policy(policy)
        e = keras.layers.Embedding(10, 4)
        out = e(tf.constant(ids))
        assert e.embeddings.dtype == tf.float32 and out.dtype.name == out_dt
        table = e.embeddings.numpy()
        assert_close(np.asarray(out.numpy(), np.float64), table[ids].astype(out_dt).astype(np.float64),
                     out_dt, "exact")
        assert tuple(out.shape) == (2, 3, 4)
        assert np.all(np.abs(table) <= 0.05)  # 'uniform': RandomUniform(-0.05, 0.05)
    mixed_precision.set_global_policy("float32")
    e = keras.layers.Embedding(10, 2)
    np.testing.assert_array_equal(e(tf.constant([[1.0, 2.7]])).numpy(),
                                  e.embeddings.numpy()[[[1, 2]]])  # floats cast to int32


def test_mask_and_config():
    e = keras.layers.Embedding(10, 4, mask_zero=True, input_length=3)
    np.testing.assert_array_equal(e.compute_mask(tf.constant([[0, 1, 2]])).numpy(),
                                  [[False, True, True]])
    assert keras.layers.Embedding(10, 4).compute_mask(tf.constant([[0, 1]])) is None
    assert e.supports_masking
    config = e.get_config()
    for key, value in (("input_dim", 10), ("output_dim", 4), ("mask_zero", True),
                       ("input_length", 3), ("embeddings_regularizer", None),
                       ("embeddings_constraint", None)):
        assert config[key] == value
    assert config["embeddings_initializer"]["class_name"] == "RandomUniform"
    assert config["embeddings_initializer"]["config"]["minval"] == -0.05
    again = keras.layers.Embedding.from_config(config)
    assert again.input_dim == 10 and again.mask_zero
    assert e.compute_output_shape((None, 3)) == (None, 3, 4)
    mixed_precision.set_global_policy("mixed_float16")
    # tf-keras 2.21's config, key for key and in its order
    want = {"name": "embedding_x", "trainable": True,
            "dtype": {"module": "keras.mixed_precision", "class_name": "Policy",
                      "config": {"name": "mixed_float16"}, "registered_name": None},
            "batch_input_shape": (None, None), "input_dim": 10, "output_dim": 4,
            "embeddings_initializer": {"module": "keras.initializers", "class_name": "RandomUniform",
                                       "config": {"minval": -0.05, "maxval": 0.05, "seed": None},
                                       "registered_name": None},
            "embeddings_regularizer": None, "activity_regularizer": None,
            "embeddings_constraint": None, "mask_zero": True, "input_length": None}
    got = keras.layers.Embedding(10, 4, mask_zero=True, name="embedding_x").get_config()
    assert list(got) == list(want) and got == want
    with pytest.raises(ValueError, match="should be positive"):
        keras.layers.Embedding(0, 4)


def test_gradient_reaches_the_table_and_fit_learns():
    e = keras.layers.Embedding(5, 3, embeddings_initializer="ones")
    ids = tf.constant([[1, 1, 4]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(e(ids) * tf.constant([[[1.0], [2.0], [3.0]]]))
    (g,) = tape.gradient(y, e.trainable_variables)
    want = np.zeros((5, 3))
    want[1] = 3.0
    want[4] = 3.0
    np.testing.assert_array_equal(np.asarray(g), want)
    mixed_precision.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.layers.Embedding(8, 4, input_length=2), keras.layers.Flatten(),
                              keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).integers(0, 8, (32, 2))
    yv = (x[:, :1] % 2).astype(np.float32)
    hist = model.fit(x, yv, epochs=5, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]


def test_out_of_range_id_is_tensorflows_error():
    e = keras.layers.Embedding(10, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0,0\] = 11 is not in \[0, 10\)"):
        e(tf.constant([[11]]))
