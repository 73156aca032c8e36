"""Backend parity: every op of csrc/ops.def (enumerated from _core.op_table()), every dtype it
supports, forward and backward, run on GPU:0 and on the CPU backend from the same inputs and
compared under the CPU-vs-GPU section of tests/tolerances.py (as ggml's test-backend-ops
checks every backend against the CPU). The inputs and calls of the elementwise ops are
test_ops.py's rows. Marked ``gpu``: skipped when no GPU is listed. Under
MIXPREC_EMULATE_GPU=1 it runs against the emulated GPU (the CPU kernels), which checks this
file, not the kernels.

NOTE: float32 products are compared with TF32 off (strict float32); test_matmul_tf32 checks
the default, TF32 on."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from mixprec.config import experimental as config_experimental
from test_ops import BOOL_ROWS, ELEMENTWISE, FLOATS, INTS
from tolerances import NP_DTYPE, assert_gpu_close, gpu_tolerance, round_to

pytestmark = pytest.mark.gpu

CPU, GPU = "/CPU:0", "/GPU:0"
ALL = FLOATS + INTS + ("bool",)


@pytest.fixture(autouse=True)
def _strict_float32():
    prev = config_experimental.tensor_float_32_execution_enabled()
    config_experimental.enable_tensor_float_32_execution(False)
    yield
    config_experimental.enable_tensor_float_32_execution(prev)


def run(device, fn, arrays, grad=False, seed=0):
    """fn(*tensors) on `device` from numpy arrays: the output as numpy and, when grad, the
    gradients of sum(output * w) (w fixed, in [0.5, 1.5]) for each input (None for integer
    inputs and unconnected ones)."""
    with tf.device(device):
        ts = [tf.constant(a) for a in arrays]
        if not grad:
            out = fn(*ts)
            assert out.device.endswith("device:" + device.strip("/"))
            return out.numpy(), None
        with tf.GradientTape() as tape:
            for t in ts:
                if t.dtype.is_floating:
                    tape.watch(t)
            out = fn(*ts)
            w = np.random.default_rng(seed).uniform(0.5, 1.5, out.shape).astype(NP_DTYPE[out.dtype.name])
            loss = tf.reduce_sum(out * tf.constant(w))
        gs = tape.gradient(loss, ts)
        assert out.device.endswith("device:" + device.strip("/"))
        return out.numpy(), [None if g is None else g.numpy() for g in gs]


def check(fn, arrays, dtype, kind, grad=False, grad_kind=None, err=""):
    """fn on both devices: the outputs compared under (dtype, kind), the gradients under
    (dtype, grad_kind or kind); `dtype` is the output's and the gradients' float dtype."""
    cpu, cpu_g = run(CPU, fn, arrays, grad)
    gpu, gpu_g = run(GPU, fn, arrays, grad)
    assert gpu.dtype == cpu.dtype, err
    assert_gpu_close(gpu, cpu, dtype, kind, err_msg=err)
    if grad:
        for i, (g, c) in enumerate(zip(gpu_g, cpu_g)):
            assert (g is None) == (c is None), "%s: gradient %d exists on one device only" % (err, i)
            if c is not None:
                assert_gpu_close(g, c, dtype, grad_kind or kind, err_msg="%s d/dinput%d" % (err, i))


COVERED = set()


def covers(*names):
    COVERED.update(names)


# --------------------------------------------------------------------------- elementwise

NO_GRAD = {"floor", "ceil", "round", "sign", "is_finite", "is_nan", "is_inf", "floordiv", "floormod"}
EW_CASES = [(r, dt) for r in ELEMENTWISE for dt in r.floats + r.ints]
covers(*[r.name for r in ELEMENTWISE + BOOL_ROWS])


@pytest.mark.parametrize("row,dt", EW_CASES, ids=["%s-%s" % (r.name, dt) for r, dt in EW_CASES])
def test_elementwise(row, dt):
    rng = np.random.default_rng(sum(map(ord, row.name + dt)))
    if dt in FLOATS:
        xs = [round_to(x, dt) for x in row.domain(rng, 3000, row.nin)]
    else:
        xs = row.int_domain(rng, 3000, row.nin, dt)
    check(row.call, xs, dt, row.kind, err="%s %s" % (row.name, dt))
    if dt in FLOATS and not row.bool_out and row.name not in NO_GRAD and not row.name.endswith("_grad"):
        finite = np.all([np.isfinite(x.astype(np.float64)) for x in xs], axis=0)
        check(row.call, [x[finite] for x in xs], dt, row.kind, grad=True, err="%s %s backward" % (row.name, dt))


@pytest.mark.parametrize("row", BOOL_ROWS, ids=lambda r: r.name)
def test_logical(row):
    rng = np.random.default_rng(5)
    xs = [rng.integers(0, 2, 1000).astype(bool) for _ in range(row.nin)]
    check(row.call, xs, "bool", "exact", err=row.name)


@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("sa,sb", [((4, 1, 5), (3, 1)), ((1,), (2, 3)), ((2, 3, 4), (4,)), ((5, 1), (1, 6))])
def test_broadcasting(dt, sa, sb):
    rng = np.random.default_rng(11)
    a, b = (rng.uniform(-20, 20, s).astype(NP_DTYPE[dt]) for s in (sa, sb))
    check(lambda x, y: x * y - y, [a, b], dt, "elementwise", grad=dt in FLOATS, grad_kind="reduction",
          err="broadcast %s %s" % (sa, sb))


# --------------------------------------------------------------------------- casts, copies, layout

covers("cast", "identity", "stop_gradient", "reshape", "transpose", "concat", "stack", "strided_slice",
       "broadcast_to", "strided_slice_grad", "where")


def cast_values(dt):
    rng = np.random.default_rng(3)
    if dt in FLOATS:
        v = np.concatenate([rng.standard_normal(500) * 300, rng.standard_normal(200) * 1e-6,
                            [0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520, 1e-8, -1e-8, 2.0**-24, 3e38,
                             -3e38, 2.0**31, -2.0**31 - 1, 300, -129, 255.5, 127.5, 2.0**63]])
        with np.errstate(over="ignore"):  # the large values become inf in 16 bits, on purpose
            return v.astype(NP_DTYPE[dt])
    if dt == "bool":
        return rng.integers(0, 2, 300).astype(bool)
    info = np.iinfo(dt)
    return np.concatenate([rng.integers(info.min, info.max, 500, endpoint=True),
                           [info.min, info.max, 0, 1, -1 if info.min < 0 else 2]]).astype(dt)


@pytest.mark.parametrize("src", ALL)
def test_cast_every_pair(src):
    x = cast_values(src)
    for dst in ALL:
        check(lambda t: tf.cast(t, dst), [x], dst, "exact", err="cast %s -> %s" % (src, dst))
    if src in FLOATS:
        for dst in FLOATS:
            check(lambda t: tf.cast(t, dst), [x[np.isfinite(x.astype(np.float64))]], src, "exact", grad=True,
                  err="cast %s -> %s backward" % (src, dst))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 1000, 4099])
def test_vectorised_casts_every_length_and_offset(n):
    """The 128-bit cast kernels: lengths around the 8-element vector, and a misaligned view."""
    x = np.random.default_rng(n).standard_normal(n + 3).astype(np.float32) * 100
    for dst in ("float16", "bfloat16"):
        check(lambda t: tf.cast(t, dst), [x], dst, "exact")
        check(lambda t: tf.cast(t[3:], dst), [x], dst, "exact")  # a view at a 12-byte offset
        back = x.astype(NP_DTYPE[dst])
        check(lambda t: tf.cast(t, "float32"), [back], "float32", "exact")
        check(lambda t: tf.cast(t[1:], "float32"), [back], "float32", "exact")


@pytest.mark.parametrize("dt", ALL)
def test_layout_ops(dt):
    x = cast_values(dt)[:120].reshape(2, 3, 4, 5)
    grad = dt in FLOATS
    if grad:
        x = np.where(np.isfinite(x.astype(np.float64)), x, 1).astype(x.dtype)
    cases = {
        "identity": lambda t: tf.identity(t),
        "stop_gradient": lambda t: tf.stop_gradient(t) * tf.ones_like(t) if grad else tf.stop_gradient(t),
        "reshape": lambda t: tf.reshape(t, [6, 20]),
        "transpose": lambda t: tf.transpose(t, [3, 1, 0, 2]),
        "concat": lambda t: tf.concat([t, t[:, :1], t], 1),
        "stack": lambda t: tf.stack([t, t], axis=2),
        "strided_slice": lambda t: t[1:, ::2, ::-1, 1:4],
        "broadcast_to": lambda t: tf.broadcast_to(t[:1, :1], [3, 2, 4, 5]),
    }
    for name, fn in cases.items():
        check(fn, [x], dt, "exact", grad=grad, grad_kind="reduction", err="%s %s" % (name, dt))


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_where(dt):
    rng = np.random.default_rng(9)
    c = rng.integers(0, 2, (4, 1, 6)).astype(bool)
    a = cast_values(dt)[:30].reshape(5, 6)
    b = cast_values(dt)[30:36]
    check(lambda ct, at, bt: tf.where(ct, at, bt), [c, a, b], dt, "exact", err="where %s" % dt)
    if dt in FLOATS:
        a, b = (np.where(np.isfinite(v.astype(np.float64)), v, 2).astype(v.dtype) for v in (a, b))
        check(lambda ct, at, bt: tf.where(ct, at, bt), [c, a, b], dt, "exact", grad=True, grad_kind="reduction",
              err="where %s backward" % dt)


# --------------------------------------------------------------------------- reductions

REDUCTIONS = {"reduce_sum": "reduction", "reduce_mean": "reduction", "reduce_max": "exact",
              "reduce_min": "exact", "reduce_prod": "reduction"}
covers(*REDUCTIONS, "reduce_all", "reduce_any", "argmax", "argmin")
SHAPES_AXES = [((3, 4, 5), None), ((3, 4, 5), [1]), ((3, 4, 5), [0, 2]), ((3, 4, 5), [2]), ((3, 4, 5), [0]),
               ((1, 70000), [1]), ((70000, 3), [0]), ((5, 3000, 7), [1]), ((2, 0, 3), [1])]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_reductions(name, dt):
    rng = np.random.default_rng(13)
    for shape, axes in SHAPES_AXES:
        if dt in FLOATS:
            lo, hi = (0.9, 1.1) if name == "reduce_prod" else (-3, 3)
            x = rng.uniform(lo, hi, shape).astype(NP_DTYPE[dt])
        else:
            x = rng.integers(-3, 4, shape).astype(dt)
        for keepdims in (False, True):
            fn = lambda t: getattr(tf, name)(t, axis=axes, keepdims=keepdims)  # noqa: E731
            check(fn, [x], dt, REDUCTIONS[name], grad=dt in FLOATS and x.size < 100000,
                  grad_kind="reduction", err="%s %s %s axes=%s" % (name, dt, shape, axes))
    if dt in FLOATS:  # NaN sticks, inf survives
        x = rng.uniform(-3, 3, (4, 9)).astype(NP_DTYPE[dt])
        x[1, 3], x[2, 0], x[3, 8] = np.nan, np.inf, -np.inf
        check(lambda t: getattr(tf, name)(t, axis=1), [x], dt, REDUCTIONS[name], err="%s specials" % name)


@pytest.mark.parametrize("name", ["reduce_all", "reduce_any"])
def test_bool_reductions(name):
    rng = np.random.default_rng(17)
    for shape, axes in SHAPES_AXES:
        x = rng.random(shape) < 0.97
        check(lambda t: getattr(tf, name)(t, axis=axes), [x], "bool", "exact", err="%s %s" % (name, shape))


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_argmax_argmin(dt):
    rng = np.random.default_rng(19)
    x = rng.integers(-5, 6, (6, 50, 7)).astype(NP_DTYPE[dt])  # many ties: the first index wins
    if dt in FLOATS:
        x[2, 10, 3] = x[2, 30, 3] = np.nan
        x[4, :, 1] = np.nan
    for axis in (0, 1, 2):
        for fn in (tf.argmax, tf.argmin):
            check(lambda t: fn(t, axis=axis), [x], "int64", "exact", err="%s %s axis %d" % (fn.__name__, dt, axis))


# --------------------------------------------------------------------------- matmul, softmax, losses

covers("matmul", "softmax", "log_softmax", "sparse_softmax_cross_entropy_with_logits",
       "softmax_cross_entropy_with_logits")
MATMULS = [  # (shape a, shape b, transpose_a, transpose_b)
    ((64, 48), (48, 80), False, False),
    ((48, 64), (48, 80), True, False),
    ((64, 48), (80, 48), False, True),
    ((48, 64), (80, 48), True, True),
    ((3, 17, 33), (33, 9), False, False),  # one b for a batch of a: one tall product
    ((2, 3, 8, 16), (3, 16, 4), False, False),  # batch broadcast: b materialised
    ((1, 5, 7), (4, 7, 3), False, False),  # a broadcast over b's batch (stride 0)
    ((5, 0), (0, 4), False, False),  # empty contraction
    ((1, 1), (1, 1), False, False),
    ((256, 10), (10, 128), False, False),
]


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_matmul(dt):
    rng = np.random.default_rng(23)
    for sa, sb, ta, tb in MATMULS:
        if dt in FLOATS:
            a, b = (rng.uniform(-1, 1, s).astype(NP_DTYPE[dt]) for s in (sa, sb))
        else:
            a, b = (rng.integers(-9, 10, s).astype(dt) for s in (sa, sb))
        fn = lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb)  # noqa: E731
        check(fn, [a, b], dt, "matmul", grad=dt in FLOATS, err="matmul %s %s %s %s %s" % (dt, sa, sb, ta, tb))


covers("matmul_bias_act")


@pytest.mark.parametrize("dt", FLOATS)
def test_matmul_bias_act(dt):
    """MatMul + bias (+ ReLU), one op: on the GPU its forward is the gemm_bias_act slot
    (cuBLASLt's bias / ReLU+bias epilogue, or its composition where cuBLASLt declines)."""
    rng = np.random.default_rng(24)
    for (sa, sb, ta, tb), act in zip(MATMULS[:4] + [MATMULS[-1]], (0, 1, 1, 0, 1)):
        if len(sa) != 2:
            continue
        a, b = (rng.uniform(-1, 1, s).astype(NP_DTYPE[dt]) for s in (sa, sb))
        c = rng.uniform(-1, 1, sb[0] if tb else sb[1]).astype(NP_DTYPE[dt])
        fn = lambda x, y, z: _core.matmul_bias_act(x, y, z, ta, tb, act)  # noqa: E731
        check(fn, [a, b, c], dt, "matmul", grad=True, err="matmul_bias_act %s %s %s %s" % (dt, sa, sb, act))


def test_matmul_bias_act_reaches_the_epilogue_slot():
    """The CUDA backend fills gemm_bias_act (cuda/plugin.cpp), the one fused-GEMM slot; so
    does the CPU (oneDNN's bias argument or its own composition)."""
    assert _core._backend_slots(1)["gemm_bias_act"] is True
    assert _core._backend_slots(0)["gemm_bias_act"] is True


@pytest.mark.parametrize("dt", FLOATS)
def test_matmul_bias_act_epilogue_shapes(dt):
    """Shapes that reach cuBLASLt's tensor-core epilogue kernels (multiples of 8 and 16,
    the guide's Dense sizes) and shapes that do not (odd sizes, a bias at an odd address
    — a slice view — which runs the composition), forward only, against the CPU."""
    rng = np.random.default_rng(41)
    for M, K, N, act in ((256, 784, 512, 1), (64, 128, 10, 0), (33, 17, 9, 1), (1, 8, 8, 1), (128, 64, 1, 0)):
        a = rng.uniform(-1, 1, (M, K)).astype(NP_DTYPE[dt])
        b = rng.uniform(-1, 1, (K, N)).astype(NP_DTYPE[dt])
        c = rng.uniform(-1, 1, N).astype(NP_DTYPE[dt])
        fn = lambda x, y, z: _core.matmul_bias_act(x, y, z, False, False, act)  # noqa: E731
        check(fn, [a, b, c], dt, "matmul", err="matmul_bias_act %s %dx%dx%d act=%d" % (dt, M, K, N, act))
        c_pad = np.concatenate([c[:1], c])  # bias = a view one element in (an unaligned address)
        fn = lambda x, y, z: _core.matmul_bias_act(x, y, z[1:], False, False, act)  # noqa: E731
        check(fn, [a, b, c_pad], dt, "matmul", err="matmul_bias_act unaligned bias %s %dx%dx%d" % (dt, M, K, N))


def test_matmul_bias_act_relu_keeps_nan_on_the_gpu():
    """TensorFlow's Relu (and the CPU's) keeps NaN; the cuBLASLt ReLU epilogue must too. If this
    fails on a GPU, the epilogue clamps NaN to 0: run RELU_BIAS as BIAS + the unary ReLU."""
    a = np.array([[np.nan, 1.0], [1.0, 1.0]] * 8, np.float32)
    b = np.eye(2, dtype=np.float32)
    c = np.array([-5.0, 0.5], np.float32)
    check(lambda x, y, z: _core.matmul_bias_act(x, y, z, False, False, 1), [a, b, c], "float32", "matmul",
          err="NaN through ReLU")


def test_matmul_bias_act_tf32():
    """float32 with TF32 on (the default): the epilogue's plan is TF32's, within its error."""
    rng = np.random.default_rng(43)
    a, b = rng.uniform(-1, 1, (256, 512)).astype(np.float32), rng.uniform(-1, 1, (512, 128)).astype(np.float32)
    c = rng.uniform(-1, 1, 128).astype(np.float32)
    config_experimental.enable_tensor_float_32_execution(True)
    check(lambda x, y, z: _core.matmul_bias_act(x, y, z, False, False, 1), [a, b, c], "float32", "matmul_tf32",
          err="tf32 on")


def test_matmul_tf32():
    """The default (TF32 on, as TensorFlow on Ampere+): float32 products within TF32's error of
    the CPU's; with it off, within float32's (the fixture's setting, test_matmul)."""
    rng = np.random.default_rng(29)
    a, b = rng.uniform(-1, 1, (256, 512)).astype(np.float32), rng.uniform(-1, 1, (512, 128)).astype(np.float32)
    config_experimental.enable_tensor_float_32_execution(True)
    check(tf.matmul, [a, b], "float32", "matmul_tf32", err="tf32 on")


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax(dt, log):
    rng = np.random.default_rng(31)
    fn = tf.nn.log_softmax if log else tf.nn.softmax
    for shape in [(8, 10), (300, 1000), (3, 4, 5), (2, 5000), (1, 1)]:
        x = rng.uniform(-10, 10, shape).astype(NP_DTYPE[dt])
        check(fn, [x], dt, "softmax", grad=True, err="%s %s %s" % (fn.__name__, dt, shape))
    x = rng.uniform(-10, 10, (4, 6)).astype(NP_DTYPE[dt])
    x[1, 2], x[2] = np.nan, -np.inf
    check(fn, [x], dt, "softmax", err="%s specials" % fn.__name__)


@pytest.mark.parametrize("dt", FLOATS)
def test_softmax_cross_entropy(dt):
    rng = np.random.default_rng(37)
    for rows, cols in [(64, 10), (7, 1000), (1, 3)]:
        logits = rng.uniform(-8, 8, (rows, cols)).astype(NP_DTYPE[dt])
        labels = rng.integers(0, cols, rows).astype(np.int64)
        check(lambda lab, lo: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=lo),
              [labels, logits], dt, "softmax", grad=True, err="sparse xent %s %dx%d" % (dt, rows, cols))
        probs = rng.dirichlet(np.ones(cols), rows).astype(NP_DTYPE[dt])
        probs[0, 0] = 0
        check(lambda lab, lo: tf.nn.softmax_cross_entropy_with_logits(labels=lab, logits=lo),
              [probs, logits], dt, "softmax", grad=True, err="dense xent %s %dx%d" % (dt, rows, cols))


def test_sparse_cross_entropy_with_a_bad_label_is_nan_on_the_gpu():
    """TensorFlow's GPU behaviour: no error (it would need a host synchronisation), a NaN loss."""
    if _core.backend_name(1) != "cuda":
        pytest.skip("the CUDA kernel's behaviour (the emulated GPU raises, as the CPU)")
    with tf.device(GPU):
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0, 7]),
                                                              logits=tf.zeros([2, 3]))
    out = loss.numpy()
    assert np.isfinite(out[0]) and np.isnan(out[1])


# --------------------------------------------------------------------------- creation, random

covers("fill", "range", "one_hot", "random_uniform", "random_normal", "truncated_normal")


def made_on(device, fn):
    with tf.device(device):
        t = fn()
        assert t.device.endswith(device.strip("/"))
        return t.numpy()


@pytest.mark.parametrize("dt", ALL)
def test_fill_range_one_hot(dt):
    cases = [lambda: tf.fill([3, 70001], True if dt == "bool" else 3, dt), lambda: tf.zeros([5, 7], dt),
             lambda: tf.one_hot(tf.constant([0, 3, -1, 2, 9]), 4, on_value=1, off_value=0, dtype=dt)]
    if dt != "bool":
        cases.append(lambda: tf.range(2, 300, 3, dtype=dt) if dt not in ("int8", "uint8") else tf.range(100, dtype=dt))
    if dt in FLOATS:
        cases += [lambda: tf.fill([1000], 1.0 / 3.0, dt), lambda: tf.range(0.0, 1.0, 0.001, dtype=dt),
                  lambda: tf.fill([4], -np.inf, dt)]
    for i, fn in enumerate(cases):
        assert_gpu_close(made_on(GPU, fn), made_on(CPU, fn), dt, "exact", err_msg="creation case %d %s" % (i, dt))


covers("shape_op", "range_t", "index_t")


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_traced_size_ops(dt):
    """The ops a trace records for tf.shape, tf.range of tensor bounds and x[i] of a tensor i."""
    x = np.arange(24).reshape(4, 6).astype(NP_DTYPE[dt])
    for out_type in ("int32", "int64"):
        cpu = made_on(CPU, lambda: _core.shape_op(tf.constant(x), tf.as_dtype(out_type)))
        gpu = made_on(GPU, lambda: _core.shape_op(tf.constant(x), tf.as_dtype(out_type)))
        assert_gpu_close(gpu, cpu, out_type, "exact", err_msg="shape_op %s" % dt)
    bounds = lambda: [tf.constant(v, dt) for v in (1, 20, 3)]  # noqa: E731
    cpu = made_on(CPU, lambda: _core.range_t(*bounds()))
    gpu = made_on(GPU, lambda: _core.range_t(*bounds()))
    assert_gpu_close(gpu, cpu, dt, "exact", err_msg="range_t %s" % dt)
    for i in (0, 3, -1):
        cpu = made_on(CPU, lambda: _core.index_t(tf.constant(x), tf.constant(i)))
        gpu = made_on(GPU, lambda: _core.index_t(tf.constant(x), tf.constant(i)))
        assert_gpu_close(gpu, cpu, dt, "exact", err_msg="index_t %s [%d]" % (dt, i))


covers("strided_slice_t", "slice_t", "strided_slice_t_grad")


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_tensor_bound_slices(dt):
    """tf.strided_slice / tf.slice with tensor specs (read on the host) and their gradient."""
    x = np.arange(24).reshape(4, 6).astype(NP_DTYPE[dt])
    for f in (lambda: tf.strided_slice(tf.constant(x), [-1, 1], [0, 6], [-1, 2], end_mask=1),
              lambda: tf.strided_slice(tf.constant(x), [1, 0, 2], [2, 0, 3], new_axis_mask=2,
                                       shrink_axis_mask=1),
              lambda: tf.slice(tf.constant(x), [1, 2], [-1, 3]),
              lambda: _core.strided_slice_t_grad(tf.ones([2, 3], dt), tf.constant(x), [1, 0],
                                                 [3, 6], [1, 2])):
        assert_gpu_close(made_on(GPU, f), made_on(CPU, f), dt, "exact", err_msg="slices %s" % dt)


covers("gather", "gather_grad", "cumsum")


@pytest.mark.parametrize("dt", ALL)
def test_gather_and_its_gradient(dt):
    """tf.gather on every axis (the gather slot), and for floats its dense gradient (the
    scatter_add slot: atomics on the GPU, so summed repeats compare as a reduction)."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, (6, 70, 5))
    x = x > 0 if dt == "bool" else x.astype(NP_DTYPE[dt])
    idx = rng.integers(0, 6, (40, 3))
    for axis in (0, 1, 2):
        i = idx % x.shape[axis]
        fn = lambda p: tf.gather(p, tf.constant(i), axis=axis)  # noqa: E731
        check(fn, [x], dt, "exact", grad=dt in FLOATS, grad_kind="reduction",
              err="gather axis %d %s" % (axis, dt))


covers("gather_nd", "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
       "tensor_scatter_min", "tensor_scatter_max", "top_k_indices", "unique", "where_indices",
       "reverse", "roll")


@pytest.mark.parametrize("dt", ALL)
def test_array_ops(dt):
    """The array ops (csrc/ops_array.c, ops_sort.c): the gather, scatter_nd and sort slots and
    the host-computed Unique / Where, on the GPU as on the CPU, gradients included (scatter_nd
    runs the updates in index order on both, so even duplicate sums agree)."""
    rng = np.random.default_rng(8)
    x = rng.integers(-4, 5, (6, 50, 3)).astype(np.float64)
    x = x > 0 if dt == "bool" else x.astype(NP_DTYPE[dt])
    idx = np.stack([rng.integers(0, 6, 40), rng.integers(0, 50, 40)], -1)
    upd = x[:4, :40].reshape(40, 4, 3)[:, 0]
    grad = dt in FLOATS
    check(lambda p: tf.gather_nd(p, tf.constant(idx)), [x], dt, "exact", grad=grad,
          grad_kind="reduction", err="gather_nd %s" % dt)
    check(lambda p: tf.reverse(p, [0, 2]), [x], dt, "exact", grad=grad, err="reverse %s" % dt)
    check(lambda p: tf.roll(p, [7, -2], [1, 2]), [x], dt, "exact", grad=grad, err="roll %s" % dt)
    check(lambda p: tf.where(p), [x], dt, "exact", err="where %s" % dt)
    check(lambda p: tf.unique(tf.reshape(p, [-1])).y, [x], dt, "exact", err="unique %s" % dt)
    modes = ("update",) if dt == "bool" else ("update", "add", "sub", "min", "max")
    for mode in modes:
        fn = getattr(tf, "tensor_scatter_nd_" + mode)
        check(lambda p, u: fn(p, tf.constant(idx), u), [x, upd], dt, "exact" if mode != "add"
              else "reduction", grad=grad, grad_kind="reduction", err="scatter %s %s" % (mode, dt))
    if dt != "bool":
        for direction in ("ASCENDING", "DESCENDING"):
            check(lambda p: tf.argsort(p, axis=1, direction=direction), [x], "int32", "exact",
                  err="argsort %s %s" % (direction, dt))
        check(lambda p: tf.math.top_k(p[:, :, 0], 7).values, [x], dt, "exact", grad=grad,
              err="top_k %s" % dt)


@pytest.mark.parametrize("dt", FLOATS + ("int32", "int64"))
def test_tile_pad_split_cumsum(dt):
    """The compositions of src/mixprec/_array_ops.py run on the GPU as on the CPU (their
    gradients too: broadcast_to's sums, concat's and slices' scatters)."""
    x = np.random.default_rng(6).uniform(-3, 3, (5, 40)).astype(NP_DTYPE[dt])
    cases = [("tile", lambda t: tf.tile(t, [2, 3]), "reduction"),
             ("pad", lambda t: tf.pad(t, [[1, 2], [3, 0]], constant_values=2), "exact"),
             ("reflect", lambda t: tf.pad(t, [[2, 2], [1, 3]], "REFLECT"), "reduction"),
             ("split", lambda t: tf.split(t, [10, -1, 5], axis=1)[1], "exact"),
             ("cumsum", lambda t: tf.cumsum(t, axis=1, exclusive=True, reverse=True), "reduction"),
             ("cumsum axis 0", lambda t: tf.cumsum(t, axis=0), "reduction")]
    for name, fn, grad_kind in cases:
        check(fn, [x], dt, "exact" if name != "cumsum" or dt.startswith("int") else "reduction",
              grad=dt in FLOATS, grad_kind=grad_kind, err="%s %s" % (name, dt))


covers("igamma_grad_a", "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "erfinv", "ndtri", "digamma", "igamma", "igammac", "zeta", "polygamma", "cumprod",
       "cumulative_logsumexp", "segment_reduce")


@pytest.mark.parametrize("dt", FLOATS)
def test_math_special_scans_and_segments(dt):
    """tf.math's special functions (special_math.h, shared by both backends), the scan slot and
    the segment_reduce slot (rows grouped on the host) on the GPU as on the CPU."""
    rng = np.random.default_rng(8)
    u = rng.uniform(0.05, 0.95, (300,)).astype(NP_DTYPE[dt])
    pos = rng.uniform(0.3, 6.0, (300,)).astype(NP_DTYPE[dt])
    cases = [("erfinv", lambda t: tf.math.erfinv(t * 2.0 - 1.0), [u]),
             ("ndtri", tf.math.ndtri, [u]),
             ("digamma", tf.math.digamma, [pos]),
             ("bessel_i0e", tf.math.bessel_i0e, [pos - 3.0]),
             ("bessel_i1", tf.math.bessel_i1, [pos - 3.0])]
    if dt in ("float32", "float64"):
        cases += [("igamma", tf.math.igamma, [pos, pos[::-1].copy()]),
                  ("igammac", lambda a, x: tf.math.igammac(tf.stop_gradient(a), x), [pos, pos[::-1].copy()]),
                  ("zeta", lambda s, q: tf.math.zeta(tf.stop_gradient(s) + 1.5, q), [pos, pos[::-1].copy()]),
                  ("polygamma", lambda x: tf.math.polygamma(tf.ones_like(x), x), [pos])]
    for name, fn, xs in cases:
        check(fn, xs, dt, "transcendental", grad=True, err="%s %s" % (name, dt))
    x = rng.uniform(0.5, 1.5, (6, 40)).astype(NP_DTYPE[dt])
    ids = np.array([0, 0, 1, 3, 3, 3])
    for name, fn in [
            ("cumprod", lambda t: tf.math.cumprod(t, axis=1, exclusive=True, reverse=True)),
            ("cumulative_logsumexp", lambda t: tf.math.cumulative_logsumexp(t, axis=0)),
            ("segment_sum", lambda t: tf.math.segment_sum(t, ids)),
            ("segment_max", lambda t: tf.math.segment_max(t, ids)),
            ("unsorted_segment_prod", lambda t: tf.math.unsorted_segment_prod(t, ids[::-1].copy(), 5)),
            ("unsorted_segment_mean", lambda t: tf.math.unsorted_segment_mean(t, ids, 4))]:
        check(fn, [x], dt, "reduction", grad=True, err="%s %s" % (name, dt))


@pytest.mark.parametrize("dt", FLOATS + ("int32", "int64"))
def test_random_streams_match(dt):
    def draws(device, dist):
        with tf.device(device):
            tf.random.set_seed(1234)
            if dist == "uniform":
                lo, hi = (0, 1) if dt in FLOATS else (-50, 1000)
                return tf.random.uniform([70001], lo, hi, dtype=dt).numpy()
            fn = tf.random.normal if dist == "normal" else tf.random.truncated_normal
            return fn([70001], 1.0, 2.0, dtype=dt).numpy()

    assert_gpu_close(draws(GPU, "uniform"), draws(CPU, "uniform"), dt, "exact", err_msg="uniform")
    if dt not in FLOATS:
        return
    assert_gpu_close(draws(GPU, "normal"), draws(CPU, "normal"), dt, "random_normal", err_msg="normal")
    g, c = draws(GPU, "truncated"), draws(CPU, "truncated")
    # a draw within an ulp of the +-2 sigma cut can be accepted on one backend only: a few
    # elements may differ entirely (about 3e-8 of them, docs/cuda.md)
    rtol, atol = gpu_tolerance(dt, "random_normal")
    differ = ~np.isclose(g.astype(np.float64), c.astype(np.float64), rtol=rtol, atol=atol)
    assert differ.mean() < 1e-3


@pytest.mark.parametrize("dt", FLOATS + ("int32", "int64"))
def test_tensorflow_streams_match(dt):
    """TensorFlow's Philox conversions (MP_RANDOM_TF_* and a Generator's MP_RANDOM_TFG_*,
    random.cu's random_tf_kernel) give the CPU's numbers: stateless draws with a bounded and
    an unbounded integer range, and a Generator's, whose counter starts at its state."""
    def draws(device, kind):
        with tf.device(device):
            if kind == "uniform":
                if dt in FLOATS:
                    return tf.random.stateless_uniform([70001], [7, 11], dtype=dt).numpy()
                return tf.random.stateless_uniform([70001], [7, 11], -50, 1000, dtype=dt).numpy()
            if kind == "bits":
                return tf.random.stateless_uniform([70001], [7, 11], minval=None, maxval=None, dtype=dt).numpy()
            if kind == "generator":
                g = tf.random.Generator.from_seed(5)
                g.uniform([1000], dtype="float32")  # advances the counter
                return g.uniform([70001], dtype=dt).numpy() if dt in FLOATS else g.uniform_full_int([70001], dtype=dt).numpy()
            fn = tf.random.stateless_normal if kind == "normal" else tf.random.stateless_truncated_normal
            return fn([70001], [7, 11], dtype=dt).numpy()

    kinds = ("uniform", "generator") + (("normal", "truncated") if dt in FLOATS else ("bits",))
    for kind in kinds:
        g, c = draws(GPU, kind), draws(CPU, kind)
        if kind in ("uniform", "bits", "generator"):
            assert_gpu_close(g, c, dt, "exact", err_msg=kind)
            continue
        rtol, atol = gpu_tolerance(dt, "random_normal")
        differ = ~np.isclose(g.astype(np.float64), c.astype(np.float64), rtol=rtol, atol=atol)
        assert differ.mean() < 1e-3, kind


# --------------------------------------------------------------------------- convolution, pooling, batch norm
# cuDNN's convolutions, pool.cu and batch_norm.cu on a real GPU; the grid of shapes is
# test_cuda_cnn.py's.

covers("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "max_pool", "max_pool_grad",
       "max_pool_grad_grad", "avg_pool", "avg_pool_grad", "batch_norm", "conv2d_bias_act",
       # moments (BatchMoments) and batch norm's backward (BatchNormGradSums, BatchMomentsGrad)
       "batch_moments", "batch_moments_grad", "batch_norm_grad_sums")


def _cnn_block(x, f, s, o):
    h = tf.nn.conv2d(x, f, [2, 1], "SAME")
    h = h + tf.nn._conv2d_bias_act(x, f, tf.cast(o, x.dtype), [2, 1], "SAME", "NHWC", None, True)
    m, v = tf.nn.moments(tf.cast(h, "float32"), [0, 1, 2])
    h = tf.nn.batch_normalization(h, m, v, o, s, 1e-3)
    return tf.nn.max_pool2d(h, 2, 2, "SAME") + tf.nn.avg_pool2d(h, 3, 2, "SAME")


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16"])
def test_convolution_pooling_batch_norm(dt):
    rng = np.random.default_rng(21)
    arrays = [round_to(rng.standard_normal((2, 6, 5, 3)), dt).astype(NP_DTYPE[dt]),
              round_to(rng.standard_normal((3, 3, 3, 4)), dt).astype(NP_DTYPE[dt]),
              rng.uniform(0.5, 1.5, 4).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    if _core.backend_name(1) == "cuda":
        from mixprec import _gpu_info
        version, why = _gpu_info.plugin().cudnn_probe()
        if version == 0:
            pytest.skip("GPU convolutions need cuDNN: " + why)
    check(_cnn_block, arrays, dt, "convolution", grad=True, err="conv + BN + pooling")


# --------------------------------------------------------------------------- the tripwire


def test_every_op_has_a_parity_case():
    names = {row[2] for row in _core.op_table()}
    missing = sorted(names - COVERED)
    assert not missing, "ops of ops.def with no GPU parity case: %s (add them to tests/test_cuda_parity.py)" % missing


covers("all_reduce")


def test_all_reduce_engines_take_their_memory():
    # the in-process engine sums host buffers: a GPU tensor is refused with a clear error
    # (NCCL takes those); the emulated GPU keeps host memory, so it is summed
    one = _core.comm_threads(1, 30.0)
    x = np.arange(4, dtype=np.float32)
    with tf.device(GPU):
        t = tf.constant(x)
    try:
        out = _core.all_reduce(one, 0, t)
    except Exception as e:  # noqa: BLE001 — the class depends on the device error mapping
        assert "takes host tensors" in str(e)
    else:
        np.testing.assert_array_equal(out.numpy(), x)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_linalg_host_round_trip(dt):
    """MatrixInverse / MatrixDeterminant on the GPU: the linalg slot copies to the host, runs
    the CPU's LAPACK and copies back, so the GPU's results are the CPU's bit for bit."""
    x = (np.random.default_rng(5).standard_normal((3, 4, 4)) + 4 * np.eye(4)).astype(NP_DTYPE[dt])
    for fn in (lambda: _core.matrix_inverse(tf.constant(x)), lambda: _core.matrix_inverse(tf.constant(x), True),
               lambda: _core.matrix_determinant(tf.constant(x))):
        assert_gpu_close(made_on(GPU, fn), made_on(CPU, fn), dt, "exact", err_msg="linalg %s" % dt)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        made_on(GPU, lambda: _core.matrix_inverse(tf.zeros([2, 2], dt)))


covers("matrix_inverse", "matrix_determinant")


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "float64"])
def test_image_projective_transform_parity(dt):
    """ImageProjectiveTransformV3 on the GPU: the CPU's formulas (projective_math.h), so the
    same values bit for bit, every fill mode and interpolation, shared and per-image rows."""
    r = np.random.default_rng(9)
    x = (r.standard_normal((3, 6, 7, 2)) * 3).astype(np.float32)
    t = np.array([[0.8, -0.5, 2.2, 0.4, 1.3, -3.1, 0.0, 0.0], [1.0, 0.0, -9.5, 0.0, 1.0, 12.2, 0.0, 0.0],
                  [0.9, 0.1, 0.3, -0.2, 0.7, 0.4, 0.03, -0.02]], np.float32)
    for interp in (0, 1):
        for fill in range(4):
            for tt in (t, t[1:2]):
                def fn():
                    return _core.image_projective_transform(tf.cast(tf.constant(x), dt), tf.constant(tt), [5, 8],
                                                            interp, fill, -1.25)
                assert_gpu_close(made_on(GPU, fn), made_on(CPU, fn), dt, "exact",
                                 err_msg="projective %s %d %d" % (dt, interp, fill))


covers("image_projective_transform")


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_linalg_decompositions_host_round_trip(dt):
    """The decompositions and solves on the GPU: the same host round trip (two inputs for the
    solves, non-square shapes for qr/svd), so the GPU's results are the CPU's bit for bit."""
    r = np.random.default_rng(6)
    x = (r.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(NP_DTYPE[dt])
    w = r.standard_normal((2, 5, 3)).astype(NP_DTYPE[dt])
    b = r.standard_normal((2, 4, 2)).astype(NP_DTYPE[dt])
    spd = (x @ np.swapaxes(x, -1, -2)).astype(NP_DTYPE[dt])
    calls = [lambda: _core.cholesky(tf.constant(spd)),
             lambda: _core.matrix_triangular_solve(tf.constant(x), tf.constant(b), False, True),
             lambda: _core.matrix_solve(tf.constant(x), tf.constant(b), True),
             lambda: _core.self_adjoint_eig(tf.constant(spd), 0), lambda: _core.self_adjoint_eig(tf.constant(spd), 1),
             lambda: _core.log_matrix_determinant(tf.constant(x), 0),
             lambda: _core.log_matrix_determinant(tf.constant(x), 1),
             lambda: _core.matrix_band_part(tf.constant(w), 1, 0), lambda: _core.lu(tf.constant(x), 0),
             lambda: _core.lu(tf.constant(x), 1)]
    for full in (False, True):
        calls += [lambda f=full, k=k: _core.qr(tf.constant(w), f, k) for k in (0, 1)]
        calls += [lambda f=full, k=k: _core.svd(tf.constant(w), f, k) for k in (0, 1, 2)]
    for i, fn in enumerate(calls):
        assert_gpu_close(made_on(GPU, fn), made_on(CPU, fn), dt, "exact", err_msg="linalg call %d %s" % (i, dt))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input matrix is not invertible."):
        made_on(GPU, lambda: _core.matrix_solve(tf.zeros([2, 2], dt), tf.ones([2, 1], dt)))


covers("cholesky", "matrix_triangular_solve", "matrix_solve", "qr", "self_adjoint_eig", "svd",
       "log_matrix_determinant", "matrix_band_part", "lu")
