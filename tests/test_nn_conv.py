"""Convolution and pooling (tf.nn.conv2d/conv1d/depthwise_conv2d/max_pool/avg_pool ...)
against a float64 NumPy reference over a grid of shapes, strides, paddings, dilations,
groups and both layouts; 16-bit dtypes within their tolerance rows; gradients of every
dtype against the float64 gradients (which tests/test_tape.py checks against finite
differences); oneDNN against the loop kernels; TensorFlow's errors."""

import gc
import itertools

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import NP_DTYPE, assert_close, round_to

DTYPES = ("float32", "bfloat16", "float16", "float64")


# ------------------------------------------------------------------ float64 references

def same_pads(size, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return total // 2, total - total // 2


def resolve_pads(padding, h, w, kh, kw, s, d):
    if padding == "VALID":
        return (0, 0, 0, 0)
    if padding == "SAME":
        return same_pads(h, kh, s[0], d[0]) + same_pads(w, kw, s[1], d[1])
    return tuple(padding)  # explicit (top, bottom, left, right)


def ref_conv2d(x, f, s, d, pads, nchw):
    x = np.asarray(x, np.float64)
    f = np.asarray(f, np.float64)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    n, h, w, c = x.shape
    kh, kw, icg, oc = f.shape
    g = c // icg
    ocg = oc // g
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (h + pt + pb - ((kh - 1) * d[0] + 1)) // s[0] + 1
    ow = (w + pl + pr - ((kw - 1) * d[1] + 1)) // s[1] + 1
    y = np.zeros((n, oh, ow, oc))
    for i, j in itertools.product(range(kh), range(kw)):
        patch = xp[:, i * d[0]:i * d[0] + (oh - 1) * s[0] + 1:s[0],
                   j * d[1]:j * d[1] + (ow - 1) * s[1] + 1:s[1], :]
        for gi in range(g):
            y[..., gi * ocg:(gi + 1) * ocg] += (
                patch[..., gi * icg:(gi + 1) * icg] @ f[i, j, :, gi * ocg:(gi + 1) * ocg])
    return y.transpose(0, 3, 1, 2) if nchw else y


def ref_pool(x, k, s, pads, nchw, kind):
    x = np.asarray(x, np.float64)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    n, h, w, c = x.shape
    pt, pb, pl, pr = pads
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    ones = np.pad(np.ones((1, h, w, 1)), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (h + pt + pb - k[0]) // s[0] + 1
    ow = (w + pl + pr - k[1]) // s[1] + 1
    acc = np.full((n, oh, ow, c), fill)
    cnt = np.zeros((1, oh, ow, 1))
    for i, j in itertools.product(range(k[0]), range(k[1])):
        sl = (slice(None), slice(i, i + (oh - 1) * s[0] + 1, s[0]), slice(j, j + (ow - 1) * s[1] + 1, s[1]))
        if kind == "max":
            acc = np.maximum(acc, xp[sl])
        else:
            acc = acc + xp[sl]
            cnt = cnt + ones[sl]
    y = acc if kind == "max" else acc / cnt
    return y.transpose(0, 3, 1, 2) if nchw else y


def rnd(shape, dt, rng):
    return round_to(rng.standard_normal(shape), dt)


def t(a, dt):
    return tf.constant(np.asarray(a).astype(NP_DTYPE[dt]))


def _explicit_list(pads, nchw):
    sp = [[pads[0], pads[1]], [pads[2], pads[3]]]
    return [[0, 0], [0, 0]] + sp if nchw else [[0, 0]] + sp + [[0, 0]]


# ------------------------------------------------------------------ the grid

PADDINGS = ("VALID", "SAME", (1, 2, 0, 1))
STRIDES = ((1, 1), (2, 1), (2, 3))
DILATIONS = ((1, 1), (2, 1))
GROUPS = (1, 2, 4)  # 4 = depthwise (one channel per group)


def conv_grid():
    for padding, s, d, g, nchw in itertools.product(PADDINGS, STRIDES, DILATIONS, GROUPS, (False, True)):
        yield padding, s, d, g, nchw


@pytest.mark.parametrize("dt", DTYPES)
def test_conv2d_forward_and_gradients_match_float64_reference(dt):
    rng = np.random.default_rng(1)
    n, h, w, c = 2, 7, 6, 4
    for padding, s, d, g, nchw in conv_grid():
        kh, kw, oc = 3, 2, 4 * (2 if g == 4 else 1)
        x = rnd((n, c, h, w) if nchw else (n, h, w, c), dt, rng)
        f = rnd((kh, kw, c // g, oc), dt, rng)
        pads = resolve_pads(padding, h, w, kh, kw, s, d)
        pad_arg = _explicit_list(padding, nchw) if isinstance(padding, tuple) else padding
        fmt = "NCHW" if nchw else "NHWC"
        case = "padding=%s strides=%s dilations=%s groups=%d %s" % (padding, s, d, g, fmt)
        expected = ref_conv2d(x, f, s, d, pads, nchw)
        xt, ft = t(x, dt), t(f, dt)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            tape.watch(ft)
            y = tf.nn.conv2d(xt, ft, list(s), pad_arg, data_format=fmt, dilations=list(d))
        assert y.dtype == dt, case
        assert tuple(y.shape) == expected.shape, case
        assert_close(y, round_to(expected, dt), dt, "convolution", err_msg=case)
        wgt = rnd(expected.shape, dt, rng)
        gx, gf = tape.gradient(y, [xt, ft], output_gradients=t(wgt, dt))
        assert gx.dtype == dt and gf.dtype == dt
        # the same gradients in float64 (finite-difference-checked in test_tape.py)
        x64, f64 = t(x, "float64"), t(f, "float64")
        with tf.GradientTape() as tape:
            tape.watch(x64)
            tape.watch(f64)
            y64 = tf.nn.conv2d(x64, f64, list(s), pad_arg, data_format=fmt, dilations=list(d))
        ex, ef = tape.gradient(y64, [x64, f64], output_gradients=t(wgt, "float64"))
        assert_close(gx, round_to(ex.numpy(), dt), dt, "convolution", err_msg="dx " + case)
        assert_close(gf, round_to(ef.numpy(), dt), dt, "convolution", err_msg="dfilter " + case)


POOL_WINDOWS = ((2, 2), (3, 2), (1, 3))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_forward_and_gradients_match_float64_reference(dt, kind):
    rng = np.random.default_rng(2)
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    n, h, w, c = 2, 7, 5, 3
    for padding, k, s, nchw in itertools.product(("VALID", "SAME"), POOL_WINDOWS, STRIDES, (False, True)):
        x = rnd((n, c, h, w) if nchw else (n, h, w, c), dt, rng)
        pads = resolve_pads(padding, h, w, k[0], k[1], s, (1, 1))
        fmt = "NCHW" if nchw else "NHWC"
        case = "%s padding=%s ksize=%s strides=%s %s" % (kind, padding, k, s, fmt)
        expected = ref_pool(x, k, s, pads, nchw, kind)
        xt = t(x, dt)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = fn(xt, list(k), list(s), padding, data_format=fmt)
        assert y.dtype == dt and tuple(y.shape) == expected.shape, case
        if kind == "max":
            np.testing.assert_array_equal(y.numpy().astype(np.float64), expected, err_msg=case)
        else:
            # sums of random-sign terms: relative to the terms, as convolutions
            assert_close(y, round_to(expected, dt), dt, "convolution", err_msg=case)
        wgt = rnd(expected.shape, dt, rng)
        gx = tape.gradient(y, xt, output_gradients=t(wgt, dt))
        x64 = t(x, "float64")
        with tf.GradientTape() as tape:
            tape.watch(x64)
            y64 = fn(x64, list(k), list(s), padding, data_format=fmt)
        ex = tape.gradient(y64, x64, output_gradients=t(wgt, "float64"))
        assert_close(gx, round_to(ex.numpy(), dt), dt, "convolution", err_msg="dx " + case)


def test_max_pool_gradient_goes_to_each_windows_maximum():
    x = tf.constant(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    g = tape.gradient(y, x).numpy().reshape(4, 4)
    expected = np.zeros((4, 4), np.float32)
    expected[1, 1] = expected[1, 3] = expected[3, 1] = expected[3, 3] = 1
    np.testing.assert_array_equal(g, expected)


def test_same_average_pooling_excludes_padding_from_the_count():
    x = tf.ones([1, 3, 3, 1])
    y = tf.nn.avg_pool2d(x, 2, 1, "SAME")
    np.testing.assert_array_equal(y.numpy(), np.ones((1, 3, 3, 1), np.float32))


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16"])
def test_onednn_matches_the_loop_kernels(dt):
    rng = np.random.default_rng(3)
    x = t(rnd((2, 9, 8, 6), dt, rng), dt)
    f = t(rnd((3, 3, 3, 4), dt, rng), dt)
    results = []
    for force in (False, True):
        prev = _core.dnnl_force_reference(force)
        try:
            with tf.GradientTape() as tape:
                tape.watch(x)
                tape.watch(f)
                y = tf.nn.conv2d(x, f, [2, 1], "SAME")
                z = tf.nn.max_pool2d(y, 3, 2, "SAME") + tf.nn.avg_pool2d(y, 3, 2, "SAME")
            results.append([y, z] + tape.gradient(z, [x, f]))
        finally:
            _core.dnnl_force_reference(prev)
    for a, b in zip(*results):
        assert_close(a, b.numpy(), dt, "convolution")


def _tf_max_pool_rules(x, k, s, pad):
    """TensorFlow 2.21's max pooling with NaN (CPU, measured against it on random NaN-laden
    inputs): (y, the input position MaxPoolGrad gives each window's gradient, the position
    MaxPoolGradGrad gathers from or None). NaN never beats a value; MaxPool starts from the
    dtype's lowest value, MaxPoolGrad from the window's first element (a NaN there takes the
    gradient), MaxPoolGradGrad from nothing."""
    n_, h, w, c = x.shape
    if pad == "VALID":
        oh, ow, pt, pl = (h - k) // s + 1, (w - k) // s + 1, 0, 0
    else:
        oh, ow = -(-h // s), -(-w // s)
        pt, pl = max((oh - 1) * s + k - h, 0) // 2, max((ow - 1) * s + k - w, 0) // 2
    out = []
    for n, i, j, ch in np.ndindex(n_, oh, ow, c):
        idx = [(i * s - pt + a, j * s - pl + b) for a in range(k) for b in range(k)]
        idx = [(a, b) for a, b in idx if 0 <= a < h and 0 <= b < w]
        vals = [x[n, a, b, ch] for a, b in idx]
        ys = [v for v in vals if not np.isnan(v)]
        y = max(ys) if ys else None
        g, best = 0, vals[0]  # MaxPoolGrad: the first element, then each one above
        for t_, v in enumerate(vals[1:], 1):
            if v > best:
                g, best = t_, v
        gg, best = None, -np.inf  # MaxPoolGradGrad: the first element above -inf, ...
        for t_, v in enumerate(vals):
            if v > best:
                gg, best = t_, v
        out.append(((n, i, j, ch), y, (n,) + idx[g] + (ch,),
                    None if gg is None else (n,) + idx[gg] + (ch,)))
    return (oh, ow), out


_LOWEST = {"float32": -3.4028234663852886e38, "float64": -1.7976931348623157e308,
           "float16": -65504.0, "bfloat16": -np.inf}


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("k,s,pad", [(2, 2, "VALID"), (2, 1, "VALID"), (3, 2, "SAME")])
def test_max_pool_nan_follows_tensorflow(dt, k, s, pad, force):
    """NaN in a window: forward, MaxPoolGrad and MaxPoolGradGrad as TensorFlow 2.21 on the
    CPU (both routes: oneDNN and the loop kernels)."""
    rng = np.random.default_rng(k * 10 + s)
    x = rng.integers(-4, 5, (2, 6, 7, 2)) + rng.uniform(0, 0.5, (2, 6, 7, 2))
    x[rng.random(x.shape) < 0.3] = np.nan
    x[0, :4, :4, 0] = np.nan  # windows of NaNs only
    x = np.asarray(round_to(x, dt), np.float64)
    (oh, ow), rules = _tf_max_pool_rules(x, k, s, pad)
    up = (np.arange(2 * oh * ow * 2).reshape(2, oh, ow, 2) % 13 + 1.0)
    cc = (np.arange(x.size).reshape(x.shape) % 11 + 1.0)
    y_ref, g_ref, gg_ref = np.zeros(up.shape), np.zeros(x.shape), np.zeros(up.shape)
    for o, y, gi, ggi in rules:
        y_ref[o] = _LOWEST[dt] if y is None else y
        g_ref[gi] += up[o]
        gg_ref[o] = 0.0 if ggi is None else cc[ggi]
    prev = _core.dnnl_force_reference(force)
    try:
        xt, ut, ct = t(x, dt), t(up, dt), t(cc, dt)
        with tf.GradientTape(persistent=True) as outer:
            outer.watch(ut)
            with tf.GradientTape() as tape:
                tape.watch(xt)
                yt = tf.nn.max_pool2d(xt, k, s, pad)
                loss = tf.reduce_sum(yt * ut)
            gt = tape.gradient(loss, xt)
            loss2 = tf.reduce_sum(gt * ct)
        ggt = outer.gradient(loss2, ut)
    finally:
        _core.dnnl_force_reference(prev)
    np.testing.assert_array_equal(np.asarray(yt.numpy(), np.float64), y_ref)
    assert_close(gt, g_ref, dt, "reduction")
    np.testing.assert_array_equal(np.asarray(ggt.numpy(), np.float64), gg_ref)


def test_onednn_reports_its_instruction_set():
    assert _core.dnnl_info().startswith("oneDNN 3.")


# ------------------------------------------------------------------ 1-D, depthwise, convolution

@pytest.mark.parametrize("fmt", ["NWC", "NCW"])
def test_conv1d_and_pool1d_are_2d_with_height_one(fmt):
    rng = np.random.default_rng(4)
    nchw = fmt == "NCW"
    x = rng.standard_normal((2, 3, 9) if nchw else (2, 9, 3))
    f = rng.standard_normal((3, 3, 5))
    y = tf.nn.conv1d(tf.constant(x), tf.constant(f), 2, "SAME", data_format=fmt, dilations=1)
    x2 = x[:, :, None, :] if nchw else x[:, None, :, :]
    e = ref_conv2d(x2, f[None], (1, 2), (1, 1), (0, 0) + same_pads(9, 3, 2, 1), nchw)
    e = e[:, :, 0, :] if nchw else e[:, 0, :, :]
    assert_close(y, e, "float64", "convolution")
    assert_close(tf.nn.convolution(tf.constant(x), tf.constant(f), 2, "SAME", data_format=fmt), e,
                 "float64", "convolution")
    for kind, fn in (("max", tf.nn.max_pool1d), ("avg", tf.nn.avg_pool1d)):
        p = fn(tf.constant(x), 3, 2, "SAME", data_format=fmt)
        e = ref_pool(x2, (1, 3), (1, 2), (0, 0) + same_pads(9, 3, 2, 1), nchw, kind)
        assert_close(p, e[:, :, 0, :] if nchw else e[:, 0, :, :], "float64", "reduction")
        q = (tf.nn.max_pool if kind == "max" else tf.nn.avg_pool)(tf.constant(x), 3, 2, "SAME", data_format=fmt)
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_depthwise_conv2d_orders_output_channels_as_tensorflow():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 5, 5, 3))
    f = rng.standard_normal((3, 3, 3, 2))
    y = tf.nn.depthwise_conv2d(tf.constant(x), tf.constant(f), [1, 1, 1, 1], "VALID").numpy()
    for c in range(3):
        for m in range(2):
            e = ref_conv2d(x[..., c:c + 1], f[:, :, c:c + 1, m:m + 1], (1, 1), (1, 1), (0, 0, 0, 0), False)
            np.testing.assert_allclose(y[..., c * 2 + m], e[..., 0], rtol=1e-12, atol=1e-12)


def test_conv2d_accepts_extra_leading_batch_dimensions():
    x = tf.ones([2, 3, 5, 5, 1])
    y = tf.nn.conv2d(x, tf.ones([3, 3, 1, 2]), 1, "VALID")
    assert y.shape == (2, 3, 3, 3, 2)
    np.testing.assert_array_equal(y.numpy(), np.full((2, 3, 3, 3, 2), 9.0, np.float32))


def test_explicit_backprop_ops_match_the_tape():
    rng = np.random.default_rng(6)
    x = tf.constant(rng.standard_normal((2, 6, 6, 2)))
    f = tf.constant(rng.standard_normal((3, 3, 2, 3)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.watch(f)
        y = tf.nn.conv2d(x, f, 2, "SAME")
    dy = tf.constant(rng.standard_normal(tuple(y.shape)))
    gx, gf = tape.gradient(y, [x, f], output_gradients=dy)
    bx = tf.nn.conv2d_backprop_input([2, 6, 6, 2], f, dy, 2, "SAME")
    bf = tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], dy, 2, "SAME")
    np.testing.assert_allclose(bx.numpy(), gx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bf.numpy(), gf.numpy(), rtol=1e-12)


def test_empty_batch():
    y = tf.nn.conv2d(tf.zeros([0, 5, 5, 2]), tf.ones([3, 3, 2, 4]), 1, "SAME")
    assert y.shape == (0, 5, 5, 4)
    x = tf.zeros([0, 5, 5, 2])
    f = tf.ones([3, 3, 2, 4])
    with tf.GradientTape() as tape:
        tape.watch(f)
        y = tf.nn.conv2d(x, f, 1, "SAME")
    np.testing.assert_array_equal(tape.gradient(y, f).numpy(), np.zeros((3, 3, 2, 4), np.float32))


# ------------------------------------------------------------------ errors

def test_bad_arguments_raise_clear_errors():
    x = tf.ones([1, 5, 5, 4])
    f = tf.ones([3, 3, 4, 8])
    with pytest.raises(ValueError, match="4-dimensional"):
        tf.nn.conv2d(tf.ones([5, 5, 4]), f, 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a multiple of input depth"):
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 8]), 1, "SAME")
    with pytest.raises(ValueError, match="not a multiple of the number of groups"):
        tf.nn.conv2d(x, tf.ones([3, 3, 2, 3]), 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Computed output size would be negative: -1 "
                       r"\[input_size: 1, effective_filter_size: 3, stride: 1\]"):
        tf.nn.conv2d(tf.ones([1, 1, 5, 4]), f, 1, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Computed output size would be negative: -1"):
        tf.nn.max_pool2d(tf.ones([1, 6, 6, 4]), 8, 1, "VALID")
    # short of the window by less than a stride: an empty output, as TensorFlow
    assert tf.nn.conv2d(tf.ones([1, 2, 5, 4]), f, 1, "VALID").shape == (1, 0, 3, 8)
    with pytest.raises(ValueError, match="strides must be positive"):
        tf.nn.conv2d(x, f, 0, "SAME")
    with pytest.raises(ValueError, match="strides must be positive"):
        tf.nn.max_pool2d(x, 2, [1, -1], "SAME")
    with pytest.raises(ValueError, match="dilations must be positive"):
        tf.nn.conv2d(x, f, 1, "SAME", dilations=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Value for attr 'padding'"):
        tf.nn.conv2d(x, f, 1, "same")
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.conv2d(x, f, 1, "SAME", data_format="HWNC")
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch and depth"):
        tf.nn.conv2d(x, f, [2, 1, 1, 1], "SAME")
    with pytest.raises(TypeError, match="int32"):
        tf.nn.conv2d(tf.ones([1, 5, 5, 4], dtype="int32"), tf.ones([3, 3, 4, 8], dtype="int32"), 1, "SAME")
    with pytest.raises((TypeError, ValueError), match="float16"):
        tf.nn.conv2d(x, tf.ones([3, 3, 4, 8], dtype="float16"), 1, "SAME")


def test_nan_data_propagates():
    x = np.ones((1, 4, 4, 1), np.float32)
    x[0, 1, 1, 0] = np.nan
    y = tf.nn.conv2d(tf.constant(x), tf.ones([2, 2, 1, 1]), 1, "VALID").numpy()
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[0, 1, 1, 0]) and not np.isnan(y[0, 2, 2, 0])
    assert np.isnan(tf.nn.avg_pool2d(tf.constant(x), 2, 2, "VALID").numpy()[0, 0, 0, 0])


# ------------------------------------------------------------------ normalization

def test_moments_and_batch_normalization_match_numpy():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3, 3, 5)) * 3 + 1
    m, v = tf.nn.moments(tf.constant(x), axes=[0, 1, 2])
    np.testing.assert_allclose(m.numpy(), x.mean((0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(v.numpy(), x.var((0, 1, 2)), rtol=1e-12)
    mk, vk = tf.nn.moments(tf.constant(x), axes=[0, 1, 2], keepdims=True)
    assert mk.shape == (1, 1, 1, 5) and vk.shape == (1, 1, 1, 5)
    scale, offset = rng.standard_normal(5), rng.standard_normal(5)
    y = tf.nn.batch_normalization(tf.constant(x), m, v, tf.constant(offset), tf.constant(scale), 1e-3)
    e = (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-3) * scale + offset
    np.testing.assert_allclose(y.numpy(), e, rtol=1e-10, atol=1e-10)
    h = tf.constant(x.astype(np.float16))
    mh, vh = tf.nn.moments(h, [0, 1, 2])
    assert mh.dtype == "float16" and vh.dtype == "float16"


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_batch_norm_training_and_inference(fmt):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    if fmt == "NCHW":
        x = x.transpose(0, 3, 1, 2).copy()
    axes = (0, 2, 3) if fmt == "NCHW" else (0, 1, 2)
    shape = (1, 2, 1, 1) if fmt == "NCHW" else (2,)
    scale, offset = np.array([1.5, 0.5], np.float32), np.array([0.1, -0.2], np.float32)
    y, m, v = tf.nn.fused_batch_norm(tf.constant(x.astype(np.float16)), scale, offset, epsilon=1e-3,
                                     data_format=fmt)
    assert y.dtype == "float16" and m.dtype == "float32" and v.dtype == "float32"
    x64 = x.astype(np.float16).astype(np.float64)
    mu, var = x64.mean(axes), x64.var(axes)
    n = x64.size / 2
    np.testing.assert_allclose(m.numpy(), mu, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), var * n / (n - 1), rtol=1e-5)
    e = (x64 - mu.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3) * scale.reshape(shape) + \
        offset.reshape(shape)
    assert_close(y, round_to(e, "float16"), "float16", "reduction")
    yi, _, _ = tf.nn.fused_batch_norm(tf.constant(x64.astype(np.float32)), scale, offset,
                                      mean=mu.astype(np.float32), variance=var.astype(np.float32),
                                      is_training=False, data_format=fmt)
    np.testing.assert_allclose(yi.numpy(), e, rtol=1e-5, atol=1e-5)


def test_bias_add_both_layouts_and_errors():
    x = tf.ones([2, 3, 4, 5])
    b = tf.constant(np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(tf.nn.bias_add(x, b).numpy()[0, 0, 0], 1 + np.arange(5))
    bc = tf.constant(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(tf.nn.bias_add(x, bc, data_format="NCHW").numpy()[0, :, 0, 0], 1 + np.arange(3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="as many biases"):
        tf.nn.bias_add(x, bc)
    with pytest.raises(ValueError, match="1-D"):
        tf.nn.bias_add(x, tf.ones([1, 5]))


def test_unsupported_device_slot_is_an_error_not_a_crash():
    """A backend without the conv/pool slots (a CUDA plugin built without cuDNN's headers) reports it."""
    if _core.backend_name(1) == "cuda":
        pytest.skip("a real GPU is registered; slot removal needs the emulated one")
    was_on = _core.device_count(1) > 0
    _core._emulate_gpu(False)
    _core._emulate_gpu(True, "conv,pool")
    try:
        with tf.device("GPU:0"):
            x = tf.ones([1, 4, 4, 1])
            f = tf.ones([2, 2, 1, 1])
        with pytest.raises(NotImplementedError, match="does not implement conv"):
            tf.nn.conv2d(x, f, 1, "VALID")
        with pytest.raises(NotImplementedError, match="does not implement pool"):
            tf.nn.max_pool2d(x, 2, 2, "VALID")
    finally:
        gc.collect()
        _core._emulate_gpu(False)
        if was_on:
            _core._emulate_gpu(True)


def test_concurrent_threads_share_the_primitive_cache():
    """Replicas run on threads: convolutions of several shapes from two threads at once give
    the single-threaded results (cached primitives, per-call scratchpads)."""
    import threading

    rng = np.random.default_rng(9)
    cases = [(tf.constant(rng.standard_normal((2, 9 + i, 8, 3)).astype(np.float32)),
              tf.constant(rng.standard_normal((3, 3, 3, 5)).astype(np.float32))) for i in range(4)]
    expected = [tf.nn.max_pool2d(tf.nn.conv2d(x, f, 1, "SAME"), 2, 2, "SAME").numpy() for x, f in cases]
    errors = []

    def work():
        try:
            for _ in range(5):
                for (x, f), e in zip(cases, expected):
                    got = tf.nn.max_pool2d(tf.nn.conv2d(x, f, 1, "SAME"), 2, 2, "SAME").numpy()
                    np.testing.assert_array_equal(got, e)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t_ in threads:
        t_.start()
    for t_ in threads:
        t_.join()
    assert not errors, errors[0]
