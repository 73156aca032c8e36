"""float32 products with a small batch side (csrc/gemm_small.c): oneDNN's matmul on one
thread per column block for M or K <= 64, OpenBLAS otherwise. Both routes are taken here on
every machine (gemm_path('float32', 'openblas') turns the small route off), against float64
products with the table's tolerances; on the small route the fused Dense product (bias as
oneDNN's argument) gives the composition's bits."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import assert_bits_equal, assert_close

SHAPES = [  # (M, K, N), transpose_a, transpose_b: the 3x256 model's products, tails, strides
    ((32, 784, 256), False, False), ((784, 32, 256), True, False), ((32, 256, 256), False, True),
    ((32, 784, 300), False, False), ((16, 200, 130), False, True), ((64, 100, 4100), False, False),
    ((700, 8, 96), True, False), ((48, 520, 64), True, True),
]


@pytest.fixture(params=["auto", "openblas"])
def route(request):
    _core.gemm_path("float32", request.param)
    yield request.param
    _core.gemm_path("float32", "auto")


def test_small_route_is_taken_by_shape():
    if not _core.gemm_small_f32(32, 256, 784):
        pytest.skip("no oneDNN thread controls (libgomp) here")
    assert _core.gemm_small_f32(784, 256, 32)
    assert not _core.gemm_small_f32(2048, 256, 784)  # a large batch stays OpenBLAS's
    assert not _core.gemm_small_f32(32, 10, 256)     # too little work: OpenBLAS
    _core.gemm_path("float32", "openblas")
    try:
        assert not _core.gemm_small_f32(32, 256, 784)
    finally:
        _core.gemm_path("float32", "auto")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_small_batch_products_match_float64(route, shape):
    (m, k, n), ta, tb = shape
    rng = np.random.default_rng(m * 7 + n)
    a = (rng.standard_normal((k, m) if ta else (m, k)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    got = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=ta, transpose_b=tb)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    assert_close(got, ref.astype(np.float32), "float32", "matmul", err_msg=route)
    # batched (each matrix its own product) and a gradient product accumulating nothing odd
    a3 = np.stack([a, 2 * a]).astype(np.float32)
    got3 = tf.matmul(tf.constant(a3), tf.constant(b), transpose_a=ta, transpose_b=tb).numpy()
    assert_bits_equal(got3[0], got.numpy())


@pytest.mark.parametrize("units,batch", [(256, 32), (300, 16)])
def test_fused_dense_gives_the_composition(route, units, batch):
    rng = np.random.default_rng(units)
    x = tf.constant(rng.standard_normal((batch, 784)).astype(np.float32))
    w = tf.constant((rng.standard_normal((784, units)) * 0.05).astype(np.float32))
    bias = tf.constant(rng.standard_normal(units).astype(np.float32))
    layer = tf.keras.layers.Dense(units, activation="relu")
    layer.build((None, 784))
    layer.kernel.assign(w)
    layer.bias.assign(bias)
    fused = layer(x)
    composed = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), bias))
    if _core.gemm_small_f32(batch, units, 784):  # the bias rides in oneDNN's sum: same bits
        assert_bits_equal(fused.numpy(), composed.numpy())
    else:  # OpenBLAS adds the product into the bias rows (beta = 1) panel by panel
        assert_close(fused, composed.numpy(), "float32", "matmul")
    traced = tf.function(lambda v: layer(v))(x)
    assert_bits_equal(traced.numpy(), fused.numpy())


def test_small_batch_dense_gradients_match_finite_differences():
    """The three products of a Dense layer's step at batch 8 (forward, dX, dW), against
    float64 central differences of the same function."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((8, 96))
    w0 = rng.standard_normal((96, 80)) * 0.1
    c = rng.standard_normal((8, 80))

    def f64(x, w):
        return float(np.sum(np.tanh(x @ w) * c))

    x, w = tf.Variable(x0.astype(np.float32)), tf.Variable(w0.astype(np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.tanh(tf.matmul(x, w)) * tf.constant(c.astype(np.float32)))
    gx, gw = tape.gradient(loss, [x, w])
    eps = 1e-6
    for arr, g, idx in ((x0, gx, [(0, 0), (7, 95), (3, 40)]), (w0, gw, [(0, 0), (95, 79), (50, 3)])):
        for i in idx:
            p, q = arr.copy(), arr.copy()
            p[i] += eps
            q[i] -= eps
            fd = (f64(p, w0) - f64(q, w0)) / (2 * eps) if arr is x0 else (f64(x0, p) - f64(x0, q)) / (2 * eps)
            assert_close(np.float32(g.numpy()[i]), np.float32(fd), "float32", "finite_difference")


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES[:4], ids=str)
def test_widened_16_bit_products_take_the_same_route(route, dt, shape):
    """16-bit products widened to float32 (gemm_path(dt, 'widen')) multiply through the
    float32 route in force: float32 accumulation, one rounding."""
    from tolerances import NP_DTYPE, round_to
    _core.gemm_path(dt, "widen")
    try:
        (m, k, n), ta, tb = shape
        rng = np.random.default_rng(n + k)
        a = round_to(rng.standard_normal((k, m) if ta else (m, k)) / np.sqrt(k), dt)
        b = round_to(rng.standard_normal((n, k) if tb else (k, n)), dt)
        got = tf.matmul(tf.constant(a.astype(NP_DTYPE[dt])), tf.constant(b.astype(NP_DTYPE[dt])),
                        transpose_a=ta, transpose_b=tb)
        assert got.dtype == dt
        ref = (a.T if ta else a) @ (b.T if tb else b)
        assert_close(got, round_to(ref, dt), dt, "matmul", err_msg=route)
    finally:
        _core.gemm_path(dt, "auto")
