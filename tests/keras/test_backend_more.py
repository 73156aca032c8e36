"""keras.backend's transposed/separable/3-D convolutions, 3-D pooling and padding, image
and volume resizing and rnn (keras/_backend_more.py), against the values tf-keras 2.21
printed for the same inputs (rounded to 5 decimals)."""

import numpy as np

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

K = keras.backend
# TensorFlow's values were printed rounded to 5 decimals: the matmul row covers it
RTOL, ATOL = TOLERANCE[("float32", "matmul")]


def close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=RTOL, atol=ATOL)


def test_convolutions_pooling_padding_resizing():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.random((2, 4, 3, 2)).astype("float32"))
    k = tf.constant(rng.random((3, 3, 5, 2)).astype("float32"))
    close(K.conv2d_transpose(x, k, (2, 8, 6, 5), strides=(2, 2), padding="same").numpy()
          .ravel()[:4], [0.27815, 0.56593, 0.57409, 0.25464])
    dk = tf.constant(rng.random((3, 3, 2, 1)).astype("float32"))
    pk = tf.constant(rng.random((1, 1, 2, 4)).astype("float32"))
    close(K.separable_conv2d(x, dk, pk, padding="same").numpy().ravel()[:4],
          [0.74867, 0.61883, 0.87756, 1.3509])
    v = tf.constant(rng.random((1, 4, 4, 4, 2)).astype("float32"))
    k3 = tf.constant(rng.random((2, 2, 2, 2, 3)).astype("float32"))
    close(K.conv3d(v, k3).numpy().ravel()[:4], [4.34544, 3.88393, 5.28572, 5.65973])
    assert K.pool3d(v, (2, 2, 2), (2, 2, 2), pool_mode="avg").shape == (1, 2, 2, 2, 2)
    assert K.spatial_3d_padding(v).shape == (1, 6, 6, 6, 2)
    assert K.resize_images(x, 2, 3, "channels_last").shape == (2, 8, 9, 2)
    assert K.resize_volumes(v, 2, 1, 2, "channels_last").shape == (1, 8, 4, 8, 2)
    close(K.resize_images(x, 2, 2, "channels_last", interpolation="bilinear").numpy()
          .ravel()[:4], [0.63696, 0.26979, 0.48796, 0.20647])


def test_rnn_with_masks_and_backwards():
    rng = np.random.default_rng(0)
    for shape in ((2, 4, 3, 2), (3, 3, 5, 2), (3, 3, 2, 1), (1, 1, 2, 4), (1, 4, 4, 4, 2),
                  (2, 2, 2, 2, 3)):  # the draws of the test above, in order
        rng.random(shape)
    seq = tf.constant(rng.random((2, 3, 4)).astype("float32"))
    W = tf.constant(rng.random((4, 2)).astype("float32"))

    def step(inp, states):
        h = tf.tanh(tf.matmul(inp, W) + states[0])
        return h, [h]
    mask = tf.constant([[True, True, False], [True, False, True]])
    last, outs, st = K.rnn(step, seq, [tf.zeros((2, 2))], mask=mask)
    assert outs.shape == (2, 3, 2)
    close(last.numpy(), [[0.9003, 0.6139], [0.92127, 0.50295]])
    close(outs.numpy()[:, :, 0], [[0.88657, 0.9003, 0.9003], [0.61764, 0.61764, 0.92127]])
    np.testing.assert_array_equal(st[0].numpy(), last.numpy())
    _, outs_b, st_b = K.rnn(step, seq, [tf.zeros((2, 2))], go_backwards=True, mask=mask,
                            zero_output_for_mask=True)
    close(outs_b.numpy()[:, :, 0], [[0.0, 0.52789, 0.95902], [0.75294, 0.0, 0.90036]])
    close(st_b[0].numpy(), [[0.95902, 0.62897], [0.90036, 0.50311]])
    _, one, _ = K.rnn(step, seq, [tf.zeros((2, 2))], return_all_outputs=False)
    assert one.shape == (2, 1, 2)
