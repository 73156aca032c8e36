"""Convolution (cuDNN), pooling and batch normalization on the GPU against the CPU backend, over
a grid of shapes, strides, paddings (TensorFlow's asymmetric SAME included), dilations, groups
and both layouts, forward and backward, within the CPU-vs-GPU rows of the tolerance table.
Marked ``gpu``: skipped without one; under MIXPREC_EMULATE_GPU=1 it runs against the emulated
GPU (the CPU kernels), which checks this file, not the kernels. The float32 cases run with TF32
off (strict float32); test_conv_tf32 checks the default."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from mixprec.config import experimental as config_experimental
from tolerances import NP_DTYPE, assert_gpu_close, round_to

pytestmark = pytest.mark.gpu

CPU, GPU = "/CPU:0", "/GPU:0"
DTYPES = ["float32", "bfloat16", "float16"]


@pytest.fixture(autouse=True)
def _strict_float32():
    prev = config_experimental.tensor_float_32_execution_enabled()
    config_experimental.enable_tensor_float_32_execution(False)
    yield
    config_experimental.enable_tensor_float_32_execution(prev)


@pytest.fixture
def cudnn():
    """Convolutions on a real GPU need cuDNN 9 (optional, opened at run time): skipped, saying
    why, where it cannot be opened (test_conv_without_cudnn_raises_what_to_install checks the
    error a user then gets)."""
    if _core.backend_name(1) == "cuda":
        from mixprec import _gpu_info
        version, where = _gpu_info.plugin().cudnn_probe()
        if version == 0:
            pytest.skip(where)


def _run(device, fn, arrays, seed):
    """fn(*tensors) on device: its output and the gradients of sum(output * w) for every
    floating input, as numpy."""
    with tf.device(device):
        ts = [tf.constant(a) for a in arrays]
        with tf.GradientTape() as tape:
            for t in ts:
                tape.watch(t)
            out = fn(*ts)
            w = np.random.default_rng(seed).uniform(0.5, 1.5, out.shape).astype(NP_DTYPE[out.dtype.name])
            loss = tf.reduce_sum(out * tf.constant(w))
        gs = tape.gradient(loss, ts)
        assert out.device.endswith("device:" + device.strip("/")), out.device
        return out.numpy(), [g.numpy() for g in gs]


def _check(fn, arrays, dt, case, kind="convolution", seed=0):
    cpu, cpu_g = _run(CPU, fn, arrays, seed)
    gpu, gpu_g = _run(GPU, fn, arrays, seed)
    assert gpu.dtype == cpu.dtype, case
    assert_gpu_close(gpu, cpu, dt, kind, err_msg=case)
    for i, (g, c) in enumerate(zip(gpu_g, cpu_g)):
        assert_gpu_close(g, c, dt, kind, err_msg="%s d/dinput%d" % (case, i))


def _rnd(shape, dt, rng):
    return round_to(rng.standard_normal(shape), dt).astype(NP_DTYPE[dt])


# padding, strides, dilations, groups (4 input channels: 4 = depthwise)
CONV_CASES = [
    ("VALID", (1, 1), (1, 1), 1),
    ("SAME", (1, 1), (1, 1), 1),
    ("SAME", (2, 2), (1, 1), 1),  # asymmetric: the odd pixel after (an explicit border on the GPU)
    ("SAME", (2, 1), (1, 1), 2),
    ("VALID", (2, 3), (1, 1), 1),
    ("SAME", (1, 1), (2, 2), 1),
    ("VALID", (1, 2), (2, 1), 2),
    ("SAME", (2, 2), (1, 1), 4),
    ("VALID", (1, 1), (1, 1), 4),
    (((0, 0), (1, 2), (2, 0), (0, 0)), (1, 1), (1, 1), 1),  # explicit, asymmetric both ways
    (((0, 0), (1, 1), (0, 1), (0, 0)), (2, 2), (1, 2), 2),
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_conv2d_grid(dt, fmt, cudnn):
    rng = np.random.default_rng(31)
    n, h, w, c = 2, 9, 8, 4
    for padding, s, d, g in CONV_CASES:
        kh, kw, oc = 3, 2, 8
        x = _rnd((n, c, h, w) if fmt == "NCHW" else (n, h, w, c), dt, rng)
        f = _rnd((kh, kw, c // g, oc), dt, rng)
        pad = padding
        if isinstance(padding, tuple) and fmt == "NCHW":
            pad = (padding[0], padding[3], padding[1], padding[2])
        pad = [list(p) for p in pad] if isinstance(pad, tuple) else pad

        def fn(x, f, pad=pad, s=s, d=d):
            return tf.nn.conv2d(x, f, list(s), pad, data_format=fmt, dilations=list(d))

        _check(fn, [x, f], dt, "conv2d %s %s padding=%s strides=%s dilations=%s groups=%d" % (dt, fmt, padding, s,
                                                                                             d, g))


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_conv_shapes_of_a_cnn(dt, cudnn):
    """Seed 004's first layers and a ResNet-style 3x3 block at a small batch."""
    rng = np.random.default_rng(32)
    for (n, h, w, c, oc, k, s, padding) in [(8, 28, 28, 1, 32, 3, 1, "VALID"), (8, 13, 13, 32, 64, 3, 1, "VALID"),
                                            (4, 14, 14, 64, 64, 3, 1, "SAME"), (4, 14, 14, 64, 128, 3, 2, "SAME"),
                                            (4, 14, 14, 64, 128, 1, 2, "VALID")]:
        x, f = _rnd((n, h, w, c), dt, rng), _rnd((k, k, c, oc), dt, rng)
        _check(lambda x, f, s=s, padding=padding: tf.nn.conv2d(x, f, s, padding), [x, f], dt,
               "conv2d %s x=%s filter=%s stride %d %s" % (dt, x.shape, f.shape, s, padding))


def test_conv_tf32(cudnn):
    """TF32 on (the default): float32 convolutions within the TF32 row."""
    config_experimental.enable_tensor_float_32_execution(True)
    rng = np.random.default_rng(33)
    x, f = _rnd((4, 12, 12, 16), "float32", rng), _rnd((3, 3, 16, 32), "float32", rng)
    cpu, _ = _run(CPU, lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), [x, f], 0)
    gpu, _ = _run(GPU, lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), [x, f], 0)
    # 144 products per output: TF32's 10-bit mantissa, relative to the terms' magnitude
    assert_gpu_close(gpu / 12.0, cpu / 12.0, "float32", "matmul_tf32", err_msg="conv2d with TF32")


POOL_CASES = [((2, 2), (2, 2), "VALID"), ((2, 2), (2, 2), "SAME"), ((3, 3), (2, 2), "SAME"),
              ((3, 2), (1, 2), "SAME"), ((3, 3), (1, 1), "VALID"), ((1, 3), (2, 1), "SAME")]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_grid(dt, fmt, kind):
    rng = np.random.default_rng(34)
    pool = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    n, h, w, c = 2, 7, 6, 3
    for k, s, padding in POOL_CASES:
        x = _rnd((n, c, h, w) if fmt == "NCHW" else (n, h, w, c), dt, rng)
        _check(lambda x, k=k, s=s, padding=padding: pool(x, list(k), list(s), padding, data_format=fmt), [x], dt,
               "%s_pool2d %s %s ksize=%s strides=%s %s" % (kind, dt, fmt, k, s, padding))


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_max_pool_ties_nan_and_second_order(fmt):
    """Ties go to the window's first maximum, NaN is skipped while a window has a number (the
    CPU's and TensorFlow's rule), and MaxPoolGradGrad (the gradient of a max-pool gradient) agrees."""
    rng = np.random.default_rng(35)
    x = rng.integers(0, 3, (2, 6, 6, 2)).astype(np.float32)
    x[0, 1, 1, 0] = np.nan
    if fmt == "NCHW":
        x = x.transpose(0, 3, 1, 2).copy()
    fn = lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME", data_format=fmt)  # noqa: E731
    cpu, cpu_g = _run(CPU, fn, [x], 1)
    gpu, gpu_g = _run(GPU, fn, [x], 1)
    np.testing.assert_array_equal(gpu, cpu)
    np.testing.assert_array_equal(np.isnan(gpu_g[0]), np.isnan(cpu_g[0]))
    assert_gpu_close(gpu_g[0], cpu_g[0], "float32", "convolution", err_msg="max_pool gradient with ties")

    def second(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.nn.max_pool2d(x, 2, 1, "SAME", data_format=fmt)
            g = inner.gradient(y, x, output_gradients=y * y)
        return outer.gradient(g, x, output_gradients=x)

    z = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)
    with tf.device(CPU):
        c2 = second(tf.constant(z)).numpy()
    with tf.device(GPU):
        g2 = second(tf.constant(z)).numpy()
    assert_gpu_close(g2, c2, "float32", "convolution", err_msg="max_pool second order")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_batch_norm_training_inference_and_gradients(dt, fmt):
    rng = np.random.default_rng(36)
    shape = (4, 3, 5, 6) if fmt == "NCHW" else (4, 5, 6, 3)
    x = _rnd(shape, dt, rng)
    scale, offset = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    mean, var = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2.0, 3).astype(np.float32)

    def training(x, s, o):
        y, m, v = tf.nn.fused_batch_norm(x, s, o, epsilon=1e-3, data_format=fmt)
        return tf.cast(y, "float32") + tf.reduce_sum(m) + tf.reduce_sum(v)

    def inference(x, s, o, m, v):
        y, _, _ = tf.nn.fused_batch_norm(x, s, o, mean=m, variance=v, epsilon=1e-3, is_training=False,
                                         data_format=fmt)
        return y

    _check(training, [x, scale, offset], dt, "fused_batch_norm training %s %s" % (dt, fmt), kind="reduction")
    _check(inference, [x, scale, offset, mean, var], dt, "fused_batch_norm inference %s %s" % (dt, fmt),
           kind="reduction")


def test_a_cnn_block_in_mixed_float16(cudnn):
    """conv -> batch norm -> relu -> max pool -> avg pool under float16 data, float32 statistics."""
    rng = np.random.default_rng(37)
    x, f = _rnd((4, 10, 10, 8), "float16", rng), _rnd((3, 3, 8, 16), "float16", rng)
    s, o = rng.uniform(0.5, 1.5, 16).astype(np.float32), rng.standard_normal(16).astype(np.float32)

    def block(x, f, s, o):
        h = tf.nn.conv2d(x, f, 1, "SAME")
        m, v = tf.nn.moments(tf.cast(h, "float32"), [0, 1, 2])
        h = tf.nn.relu(tf.nn.batch_normalization(h, tf.cast(m, "float16"), tf.cast(v, "float16"),
                                                 tf.cast(o, "float16"), tf.cast(s, "float16"), 1e-3))
        return tf.nn.avg_pool2d(tf.nn.max_pool2d(h, 2, 2, "SAME"), 2, 1, "VALID")

    _check(block, [x, f, s, o], "float16", "cnn block mixed_float16", kind="convolution")


def test_every_window_slot_is_filled():
    """The GPU backend implements conv, pool, batch_norm, the fused Conv2D + bias (+ ReLU) and
    the batch statistics (the emulated GPU: the CPU's)."""
    slots = _core._backend_slots(1)
    assert slots is not None
    for slot in ("conv", "pool", "batch_norm", "conv_bias_act", "batch_stats"):
        assert slots.get(slot), "GPU:0 lacks the %s slot" % slot


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_conv2d_bias_relu(dt, fmt, cudnn):
    """_FusedConv2D (the Keras Conv2D layer's op): one cuDNN graph, or the convolution and one
    bias pass where cuDNN has no engine for it; forward and gradients."""
    rng = np.random.default_rng(38)
    for padding, s, relu in [("SAME", (1, 1), True), ("SAME", (2, 2), False), ("VALID", (1, 2), True)]:
        x = _rnd((2, 8, 9, 7) if fmt == "NCHW" else (2, 9, 7, 8), dt, rng)
        f, b = _rnd((3, 3, 8, 16), dt, rng), _rnd((16,), dt, rng)
        fn = lambda x, f, b, padding=padding, s=s, relu=relu: tf.nn._conv2d_bias_act(  # noqa: E731
            x, f, b, list(s), padding, fmt, None, relu)
        _check(fn, [x, f, b], dt, "_FusedConv2D %s %s %s strides=%s relu=%s" % (dt, fmt, padding, s, relu))


@pytest.mark.parametrize("dt", DTYPES)
def test_fused_matmul_bias_relu(dt):
    """_FusedMatMul (the Keras Dense layer's op) on the GPU: the gemm with the bias rows as its
    accumulator (beta = 1), ReLU in place."""
    rng = np.random.default_rng(39)
    a, w, b = _rnd((33, 40), dt, rng), _rnd((40, 24), dt, rng), _rnd((24,), dt, rng)
    for relu in (0, 1):
        _check(lambda a, w, b, relu=relu: _core.matmul_bias_act(a, w, b, False, False, relu), [a, w, b], dt,
               "_FusedMatMul %s relu=%d" % (dt, relu), kind="matmul")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("axes", [(0, 1, 2), (0, 2, 3)])
def test_batch_moments_and_their_gradient(dt, axes):
    """tf.nn.moments over a batch (BatchMoments, batch_stats.cu) and its gradient."""
    rng = np.random.default_rng(40)
    x = _rnd((6, 5, 4, 7), dt, rng)

    def fn(x):
        m, v = tf.nn.moments(tf.cast(x, "float32"), list(axes))
        return m * 3.0 + v

    _check(fn, [x], "float32", "moments %s axes=%s" % (dt, axes), kind="reduction")


def test_conv_without_cudnn_raises_what_to_install():
    """A GPU convolution where cuDNN cannot be opened (MIXPREC_CUDNN_LIBRARY names no file, so
    nothing else is tried): NotImplementedError naming the op and what to install; the process
    goes on, and pooling (not cuDNN) still runs."""
    if _core.backend_name(1) != "cuda":
        pytest.skip("needs the real CUDA backend (the emulated GPU runs the CPU's convolutions)")
    import os
    import subprocess
    import sys

    code = ("import mixprec as tf\n"
            "x = tf.ones([1, 4, 4, 1]); f = tf.ones([2, 2, 1, 1])\n"
            "assert x.device.endswith('GPU:0'), x.device\n"
            "try:\n"
            "    tf.nn.conv2d(x, f, 1, 'VALID')\n"
            "except NotImplementedError as e:\n"
            "    print(e)\n"
            "print(float(tf.reduce_sum(tf.nn.max_pool2d(x, 2, 2, 'VALID'))))\n")
    env = dict(os.environ, MIXPREC_CUDNN_LIBRARY="/nonexistent/libcudnn.so.9")
    env.pop("MIXPREC_EMULATE_GPU", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Conv2D on GPU:0 needs cuDNN" in out.stdout and "pip install nvidia-cudnn-cu" in out.stdout, out.stdout
    assert out.stdout.strip().endswith("4.0"), out.stdout
