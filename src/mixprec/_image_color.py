"""``tf.image`` colour spaces and colour adjustments (HSV, YIQ, YUV, hue, saturation,
gamma and their random forms), Sobel edges and SSIM, with TensorFlow 2.21's formulas (its
kernels' case analysis for hue and saturation; its Gaussian window and constants for
SSIM). Compositions of core ops on whole tensors, so they run on every backend and trace;
no per-pixel Python and no kernels here."""

import numpy as _np

from mixprec import _core

__all__ = ["rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "adjust_saturation", "adjust_gamma",
           "random_hue", "random_saturation", "stateless_random_hue",
           "stateless_random_saturation", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv",
           "yuv_to_rgb", "sobel_edges", "ssim"]


def _channels(x):
    """r, g, b of the last axis (each keeping a trailing axis of 1)."""
    return [x[..., i:i + 1] for i in range(3)]


def _sel(cond, a, b):
    return _core.where(cond, a, b)


def _zeros_like(x):
    return x * 0.0  # same shape and dtype (inputs here are finite colour values)


def _float_image(image):
    from mixprec.image import convert_image_dtype
    image = _core.convert_to_tensor(image)
    if image.shape[-1] != 3:
        raise ValueError("input must have 3 channels but input only has %d channels."
                         % image.shape[-1])
    return image, (image if image.dtype.is_floating else convert_image_dtype(image, "float32"))


def _back(out, image):
    from mixprec.image import convert_image_dtype
    return out if image.dtype.is_floating else convert_image_dtype(out, image.dtype,
                                                                  saturate=True)


def rgb_to_hsv(images, name=None):
    """Hue, saturation, value in [0, 1] (TensorFlow's RGBToHSV)."""
    images = _core.convert_to_tensor(images)
    r, g, b = _channels(images)
    v = _core.maximum(_core.maximum(r, g), b)
    rng = v - _core.minimum(_core.minimum(r, g), b)
    zero = _zeros_like(v)
    s = _sel(_core.greater(v, zero), rng / _sel(_core.greater(v, zero), v, v + 1), zero)
    norm = 1.0 / (6.0 * _sel(_core.greater(rng, zero), rng, rng + 1))
    h = _sel(_core.equal(r, v), norm * (g - b),
             _sel(_core.equal(g, v), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = _sel(_core.greater(rng, zero), h, zero)
    h = _sel(_core.less(h, zero), h + 1.0, h)
    return _core.concat([h, s, v], -1)


def _clip01(x):
    return _core.minimum(_core.maximum(x, 0.0), 1.0)


def hsv_to_rgb(images, name=None):
    """RGB from hue, saturation, value (TensorFlow's HSVToRGB)."""
    images = _core.convert_to_tensor(images)
    h, s, v = _channels(images)
    dh = h * 6.0
    dr = _clip01(_core.abs(dh - 3.0) - 1.0)
    dg = _clip01(2.0 - _core.abs(dh - 2.0))
    db = _clip01(2.0 - _core.abs(dh - 4.0))
    one_s = 1.0 - s
    return _core.concat([(one_s + s * dr) * v, (one_s + s * dg) * v, (one_s + s * db) * v], -1)


def _hv_range(r, g, b):
    """TensorFlow's AdjustHue decomposition: hue in [0, 6) by category, min and max."""
    lt_rg = _core.less(r, g)
    cases = [  # (condition, h_category, v_max, v_mid, v_min) in the kernel's order
        (_core.logical_and(lt_rg, _core.less(b, r)), 1, g, r, b),
        (_core.logical_and(lt_rg, _core.greater(b, g)), 3, b, g, r),
        (lt_rg, 2, g, b, r),
        (_core.greater(b, r), 4, b, r, g),
        (_core.less(b, g), 0, r, g, b),
        (None, 5, r, b, g),
    ]
    cat, vmax, vmid, vmin = None, None, None, None
    for cond, c, mx, md, mn in reversed(cases):
        cval = _zeros_like(r) + float(c)
        if cond is None:
            cat, vmax, vmid, vmin = cval, mx, md, mn
        else:
            cat, vmax = _sel(cond, cval, cat), _sel(cond, mx, vmax)
            vmid, vmin = _sel(cond, md, vmid), _sel(cond, mn, vmin)
    span = vmax - vmin
    flat = _core.equal(vmax, vmin)
    ratio = (vmid - vmin) / _sel(flat, span + 1.0, span)
    odd = _core.equal(_core.floormod(cat, 2.0), 1.0)
    h = cat + _sel(odd, 1.0 - ratio, ratio)
    return _sel(flat, _zeros_like(h), h), vmin, vmax


def _hv_range_to_rgb(h, vmin, vmax):
    cat = _core.floor(h)
    ratio = h - cat
    odd = _core.equal(_core.floormod(cat, 2.0), 1.0)
    ratio = _sel(odd, 1.0 - ratio, ratio)
    vmid = vmin + ratio * (vmax - vmin)
    # category -> (r, g, b) taken from (max, mid, min)
    table = {0: (vmax, vmid, vmin), 1: (vmid, vmax, vmin), 2: (vmin, vmax, vmid),
             3: (vmin, vmid, vmax), 4: (vmid, vmin, vmax), 5: (vmax, vmin, vmid)}
    r, g, b = table[5]
    for c in range(4, -1, -1):
        is_c = _core.equal(cat, float(c))
        tr, tg, tb = table[c]
        r, g, b = _sel(is_c, tr, r), _sel(is_c, tg, g), _sel(is_c, tb, b)
    return _core.concat([r, g, b], -1)


def adjust_hue(image, delta, name=None):
    """Hue rotated by ``delta`` (a fraction of the colour wheel, in [-1, 1])."""
    image, flt = _float_image(image)
    d = float(_np.asarray(delta.numpy() if hasattr(delta, "numpy") else delta))
    if not -1.0 <= d <= 1.0:
        from mixprec import errors
        raise errors.InvalidArgumentError(None, None, "delta must be in the interval [-1, 1]")
    r, g, b = _channels(flt)
    h, vmin, vmax = _hv_range(r, g, b)
    h = _core.floormod(h + d * 6.0, 6.0)
    return _back(_hv_range_to_rgb(h, vmin, vmax), image)


def _hsv_kernel(r, g, b):
    """AdjustSaturation's own rgb_to_hsv (TensorFlow's adjust_saturation_op)."""
    return _channels(rgb_to_hsv(_core.concat([r, g, b], -1)))


def _hsv_kernel_to_rgb(h, s, v):
    c = s * v
    m = v - c
    dh = h * 6.0
    cat = _core.floor(dh)
    fmodu = _core.floormod(dh, 2.0)
    x = c * (1.0 - _core.abs(fmodu - 1.0))
    zero = _zeros_like(c)
    table = {0: (c, x, zero), 1: (x, c, zero), 2: (zero, c, x), 3: (zero, x, c),
             4: (x, zero, c), 5: (c, zero, x)}
    r, g, b = c, zero, zero  # the kernel's default case
    for k in range(5, -1, -1):
        is_k = _core.equal(cat, float(k))
        tr, tg, tb = table[k]
        r, g, b = _sel(is_k, tr, r), _sel(is_k, tg, g), _sel(is_k, tb, b)
    return _core.concat([r + m, g + m, b + m], -1)


def adjust_saturation(image, saturation_factor, name=None):
    """Saturation scaled by ``saturation_factor`` and clipped to [0, 1]."""
    image, flt = _float_image(image)
    f = float(_np.asarray(saturation_factor.numpy() if hasattr(saturation_factor, "numpy")
                          else saturation_factor))
    h, s, v = _hsv_kernel(*_channels(flt))
    s = _clip01(s * f)
    return _back(_hsv_kernel_to_rgb(h, s, v), image)


def adjust_gamma(image, gamma=1, gain=1):
    """``gain * image ** gamma`` (integers through [0, 1] floats and back, saturating)."""
    image = _core.convert_to_tensor(image)
    g = float(_np.asarray(gamma.numpy() if hasattr(gamma, "numpy") else gamma))
    if g < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    from mixprec.image import convert_image_dtype
    flt = image if image.dtype.is_floating else convert_image_dtype(image, "float32")
    out = float(gain) * _core.pow(flt, _core.fill([], g, flt.dtype))
    return _back(out, image)


def _check_max_delta(max_delta, lo=0.0, hi=0.5):
    if max_delta > hi:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < lo:
        raise ValueError("max_delta must be non-negative.")


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta drawn from [-max_delta, max_delta]."""
    _check_max_delta(max_delta)
    from mixprec import random as _random
    delta = _random.uniform([], -max_delta, max_delta, seed=seed)
    return adjust_hue(image, delta)


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor drawn from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    from mixprec import random as _random
    return adjust_saturation(image, _random.uniform([], lower, upper, seed=seed))


def stateless_random_hue(image, max_delta, seed):
    _check_max_delta(max_delta)
    from mixprec import random as _random
    delta = _random.stateless_uniform([], seed, -max_delta, max_delta)
    return adjust_hue(image, delta)


def stateless_random_saturation(image, lower, upper, seed=None):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    from mixprec import random as _random
    return adjust_saturation(image, _random.stateless_uniform([], seed, lower, upper))


def _linear(images, kernel):
    images = _core.convert_to_tensor(images)
    k = _core.constant(_np.asarray(kernel, dtype=_np.float64), images.dtype.name)
    flat = _core.reshape(images, [-1, 3])
    return _core.reshape(_core.matmul(flat, k), list(images.shape))


_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def rgb_to_yiq(images):
    return _linear(images, _RGB_TO_YIQ)


def yiq_to_rgb(images):
    return _linear(images, _YIQ_TO_RGB)


def rgb_to_yuv(images):
    return _linear(images, _RGB_TO_YUV)


def yuv_to_rgb(images):
    return _linear(images, _YUV_TO_RGB)


def _depthwise(x, kernel2d, padding="VALID"):
    """Each channel filtered by one 2-D kernel (a depthwise convolution)."""
    from mixprec import nn
    c = x.shape[-1]
    k = _np.tile(_np.asarray(kernel2d, _np.float64)[:, :, None, None], (1, 1, c, 1))
    return nn.depthwise_conv2d(x, _core.constant(k, x.dtype.name), [1, 1, 1, 1], padding)


def sobel_edges(image):
    """(batch, h, w, d, 2): vertical then horizontal Sobel responses (reflect padding)."""
    from mixprec import _array_ops
    image = _core.convert_to_tensor(image)
    if image.ndim != 4:
        raise ValueError("sobel_edges needs a 4-D (batch, height, width, depth) image")
    padded = _array_ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    ky = [[-1, -2, -1], [0, 0, 0], [1, 2, 1]]
    kx = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]
    return _core.stack([_depthwise(padded, ky), _depthwise(padded, kx)], -1)


def _gauss(size, sigma):
    coords = _np.arange(size, dtype=_np.float32) - _np.float32(size - 1) / _np.float32(2.0)
    g = _np.square(coords) * (_np.float32(-0.5) / _np.float32(sigma) ** 2)
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = _np.exp(g - g.max())
    return (g / g.sum()).reshape(size, size)


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False):
    """Structural similarity per image (TensorFlow's Gaussian window, constants and
    dtype rules: integer images compared as [0, 1] floats)."""
    from mixprec.image import convert_image_dtype
    a = _core.convert_to_tensor(img1)
    b = _core.convert_to_tensor(img2)
    if a.dtype != b.dtype:
        raise TypeError("img1 and img2 must have the same dtype, got %s and %s"
                        % (a.dtype.name, b.dtype.name))
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError("img1 and img2 must have the same shape, got %s and %s"
                         % (tuple(a.shape), tuple(b.shape)))
    if a.shape[-3] < filter_size or a.shape[-2] < filter_size:
        from mixprec import errors
        raise errors.InvalidArgumentError(None, None, "images must be at least %dx%d for "
                                          "filter_size=%d" % (filter_size, filter_size,
                                                              filter_size))
    mv = float(_np.asarray(max_val.numpy() if hasattr(max_val, "numpy") else max_val))
    if not a.dtype.is_floating:
        from mixprec.image import _INT_MAX
        mv = mv / _INT_MAX[a.dtype.name]
        a, b = convert_image_dtype(a, "float32"), convert_image_dtype(b, "float32")
    lead = list(a.shape[:-3])
    shape4 = [-1] + list(a.shape[-3:])
    x, y = _core.reshape(a, shape4), _core.reshape(b, shape4)
    kern = _gauss(filter_size, filter_sigma)

    def reduce(t):
        return _depthwise(t, kern)
    c1, c2 = (k1 * mv) ** 2, (k2 * mv) ** 2
    mx, my = reduce(x), reduce(y)
    num0 = mx * my * 2.0
    den0 = _core.square(mx) + _core.square(my)
    lum = (num0 + c1) / (den0 + c1)
    num1 = reduce(x * y) * 2.0
    den1 = reduce(_core.square(x) + _core.square(y))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    smap = lum * cs
    if return_index_map:
        return _core.reshape(smap, lead + list(smap.shape[1:]))
    per_channel = _core.reduce_mean(smap, [1, 2])
    out = _core.reduce_mean(per_channel, [-1])
    return _core.reshape(out, lead)
