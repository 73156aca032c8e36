"""The gemm_bias_act backend slot (csrc/backend.def), the one fused-GEMM slot (bias and ReLU
optional): the fused MatMul + bias (+ ReLU) op and Keras' Dense forward reach it when the
device's backend has it (the CPU: oneDNN's bias argument or its own composition; cuBLASLt's
bias / ReLU+bias epilogue on CUDA), and fall back to gemm + bias rows + ReLU through the
NULL-checked funnel when it does not. Dispatch is told apart on the emulated GPU, which
inherits the CPU's slot (it calls the CPU kernels directly): without its `gemm` slot the fused
op still runs through gemm_bias_act, and without both it names the missing `gemm`. Skipped
where a real GPU is registered (slots cannot be removed there; test_cuda_parity.py checks the
real kernel)."""

import gc

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core, keras
from tolerances import NP_DTYPE, assert_bits_equal, assert_close, round_to

FLOATS = ("float16", "bfloat16", "float32", "float64")


@pytest.fixture
def emulated():
    """make(without) installs an emulated GPU:0 lacking the named slots; restored after."""
    if _core.backend_name(1) == "cuda":
        pytest.skip("a real GPU is registered; slot removal needs the emulated GPU")
    was_on = _core.device_count(1) > 0

    def make(without=None):
        gc.collect()
        _core._emulate_gpu(False)
        _core._emulate_gpu(True, without)

    yield make
    gc.collect()
    _core._emulate_gpu(False)
    if was_on:
        _core._emulate_gpu(True)


def _operands(dt, M, N, K, ta, tb, seed=3):
    rng = np.random.default_rng(seed)
    a = round_to(rng.standard_normal((M, K)), dt)
    b = round_to(rng.standard_normal((K, N)), dt)
    c = round_to(rng.standard_normal(N), dt)
    A, B = (a.T if ta else a), (b.T if tb else b)
    cast = lambda v: np.ascontiguousarray(v).astype(NP_DTYPE[dt])  # noqa: E731
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64) + np.asarray(c, np.float64)
    return cast(A), cast(B), cast(c), ref


def _fused(A, B, c, ta, tb, act):
    with tf.device("/GPU:0"):
        y = _core.matmul_bias_act(tf.constant(A), tf.constant(B), tf.constant(c), ta, tb, act)
    assert y.device.endswith("GPU:0")
    return y.numpy()


def test_slot_is_listed_for_the_cpu_and_the_emulated_gpu(emulated):
    emulated()
    assert _core._backend_slots(1)["gemm_bias_act"] is True
    assert _core._backend_slots(0)["gemm_bias_act"] is True
    assert "gemm_bias" not in _core._backend_slots(0)  # folded into gemm_bias_act


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("act", [0, 1])
def test_fused_slot_equals_the_fallback_bit_for_bit(emulated, dt, ta, tb, act):
    """Through the slot and through the op layer's composition the same numbers come out
    (16-bit: float32 sums with the bias, one rounding), and both match float64 NumPy."""
    A, B, c, ref = _operands(dt, 7, 5, 6, ta, tb)
    emulated()
    fused = _fused(A, B, c, ta, tb, act)
    emulated("gemm_bias_act")
    composed = _fused(A, B, c, ta, tb, act)
    assert fused.dtype == NP_DTYPE[dt] and fused.shape == (7, 5)
    assert_bits_equal(fused, composed)
    assert_close(fused, round_to(np.maximum(ref, 0) if act else ref, dt), dt, "matmul")


def test_the_fused_op_dispatches_to_the_slot(emulated):
    """With gemm removed, only the gemm_bias_act slot can compute the fused op; plain MatMul,
    which has no such slot, reports the missing gemm."""
    A, B, c, ref = _operands("float32", 4, 3, 5, False, False)
    emulated("gemm")
    assert_close(_fused(A, B, c, False, False, 1), round_to(np.maximum(ref, 0), "float32"), "float32", "matmul")
    with tf.device("/GPU:0"), pytest.raises(NotImplementedError, match=r"does not implement gemm \(GPU:0\)"):
        tf.matmul(tf.constant(A), tf.constant(B))


def test_without_the_slot_the_fallback_goes_through_the_funnel(emulated):
    """No gemm_bias_act: the composition's slots are called through MP_BACKEND_CALL, so a
    backend missing one of them is a NotImplementedError naming it, not a crash."""
    A, B, c, ref = _operands("float32", 4, 3, 5, False, False)
    emulated("gemm_bias_act")
    assert_close(_fused(A, B, c, False, False, 0), round_to(ref, "float32"), "float32", "matmul")
    emulated("gemm_bias_act,gemm")
    with pytest.raises(NotImplementedError, match=r"emulated-gpu backend does not implement gemm \(GPU:0\)"):
        _fused(A, B, c, False, False, 0)
    emulated("gemm_bias_act,unary")
    with pytest.raises(NotImplementedError, match="does not implement unary"):
        _fused(A, B, c, False, False, 1)


def test_empty_contraction_and_empty_output(emulated):
    """K == 0 is the bias rows (ReLU'd) without the slot; an empty output calls nothing."""
    emulated("gemm,gemm_bias_act")  # neither is needed for these
    c = np.array([-1.0, 2.0, -3.0], np.float32)
    y = _fused(np.zeros((4, 0), np.float32), np.zeros((0, 3), np.float32), c, False, False, 1)
    np.testing.assert_array_equal(y, np.tile(np.maximum(c, 0), (4, 1)))
    y = _fused(np.zeros((0, 2), np.float32), np.zeros((2, 3), np.float32), c, False, False, 1)
    assert y.shape == (0, 3)


def test_relu_keeps_nan_through_the_slot(emulated):
    """The CPU's ReLU keeps NaN (TensorFlow's Relu); the slot must too."""
    emulated()
    A = np.array([[np.nan, 1.0], [1.0, 1.0]], np.float32)
    B = np.eye(2, dtype=np.float32)
    y = _fused(A, B, np.array([-5.0, 0.5], np.float32), False, False, 1)
    assert np.isnan(y[0, 0]) and y[1, 0] == 0.0 and y[1, 1] == 1.5


@pytest.mark.parametrize("relu", [True, False])
def test_dense_forward_and_gradients_use_the_slot(emulated, relu):
    """Keras' Dense (relu or linear, with a bias, 2-D inputs) runs the fused op: on a GPU
    without `gemm` its forward still runs; its values and gradients are the CPU's, bit for bit."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    emulated()
    with tf.device("/CPU:0"):
        layer_cpu = keras.layers.Dense(4, activation="relu" if relu else None)
        y_cpu = layer_cpu(tf.constant(x)).numpy()
        weights = [w.numpy() for w in layer_cpu.weights]
    emulated("gemm")
    with tf.device("/GPU:0"):
        layer = keras.layers.Dense(4, activation="relu" if relu else None)
        layer.build((None, 6))
        layer.set_weights(weights)
        y = layer(tf.constant(x))
    assert y.device.endswith("GPU:0")
    assert_bits_equal(y.numpy(), y_cpu)  # the emulated GPU runs the CPU's kernels
    emulated()  # the backward needs gemm (dx, dW): the slot covers the forward only
    with tf.device("/GPU:0"):
        layer = keras.layers.Dense(4, activation="relu" if relu else None)
        layer.build((None, 6))
        layer.set_weights(weights)
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            loss = tf.reduce_sum(layer(xt) * 0.5)
        grads = tape.gradient(loss, [xt] + layer.trainable_weights)
    with tf.device("/CPU:0"):
        xc = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xc)
            loss = tf.reduce_sum(layer_cpu(xc) * 0.5)
        grads_cpu = tape.gradient(loss, [xc] + layer_cpu.trainable_weights)
    for g, gc_ in zip(grads, grads_cpu):
        assert_bits_equal(g.numpy(), gc_.numpy())
