"""``tf.image``: resizing (bilinear and nearest with TensorFlow 2's half-pixel centres),
flips, rot90, transpose, crops and pads, colour conversions, brightness/contrast,
per-image standardization, dtype conversion and the random/stateless augmentations —
TensorFlow 2.21's semantics on (height, width, channels) images or (batch, ...) batches.
Compositions of core ops (gathers, slices, element-wise and reductions): differentiable
and traceable; no kernels here."""

import math as _math

import numpy as _np

from mixprec import _core

__all__ = ["resize", "ResizeMethod", "flip_left_right", "flip_up_down", "rot90", "transpose",
           "central_crop", "crop_to_bounding_box", "pad_to_bounding_box",
           "resize_with_crop_or_pad", "rgb_to_grayscale", "grayscale_to_rgb",
           "adjust_brightness", "adjust_contrast", "per_image_standardization",
           "convert_image_dtype", "random_flip_left_right", "random_flip_up_down",
           "random_brightness", "random_contrast", "random_crop",
           "stateless_random_flip_left_right", "stateless_random_flip_up_down",
           "stateless_random_brightness", "stateless_random_contrast", "image_gradients",
           "total_variation", "psnr"]


def _tf():
    import mixprec

    return mixprec


def _image(x, name="image"):
    x = _core.convert_to_tensor(x)
    if x.ndim not in (3, 4):
        raise ValueError("'%s' (shape %s) must have either 3 or 4 dimensions."
                         % (name, tuple(x.shape)))
    return x


def _batched(x):
    """(x as 4-D, whether it was 3-D)."""
    return (_core.reshape(x, [1] + list(x.shape)), True) if x.ndim == 3 else (x, False)


def _unbatched(x, was3):
    return _core.reshape(x, list(x.shape[1:])) if was3 else x


class ResizeMethod:
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _bilinear_axis(x, axis, out_size):
    """Linear interpolation along ``axis`` with half-pixel centres (TF2's resize)."""
    n = x.shape[axis]
    # float32 throughout, as TensorFlow's kernel (HalfPixelScaler)
    scale = _np.float32(n) / _np.float32(out_size)
    src = (_np.arange(out_size, dtype=_np.float32) + _np.float32(0.5)) * scale - \
        _np.float32(0.5)
    lo_f = _np.floor(src)
    lo = _np.maximum(lo_f, 0).astype(_np.int32)
    hi = _np.minimum(_np.ceil(src), n - 1).astype(_np.int32)
    frac = (src - lo_f).astype(_np.float32)
    a = _core.gather(x, _core.constant(lo.tolist(), "int32"), axis)
    b = _core.gather(x, _core.constant(hi.tolist(), "int32"), axis)
    shape = [1] * x.ndim
    shape[axis] = out_size
    w = _core.reshape(_core.constant(frac.tolist(), x.dtype.name), shape)
    return a + (b - a) * w


def _nearest_axis(x, axis, out_size):
    n = x.shape[axis]
    scale = _np.float32(n) / _np.float32(out_size)  # float32, as TensorFlow's kernel
    idx = _np.minimum(_np.floor((_np.arange(out_size, dtype=_np.float32) + _np.float32(0.5))
                                * scale), n - 1).astype(_np.int32)
    return _core.gather(x, _core.constant(idx.tolist(), "int32"), axis)


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Images resized to ``size`` = (new_height, new_width): float32 out (bilinear), the
    input's dtype for nearest."""
    images = _image(images, "images")
    if len(size) != 2:
        raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
    new_h, new_w = int(size[0]), int(size[1])
    if new_h <= 0 or new_w <= 0:
        raise ValueError("'size' must be a 1-D Tensor of 2 positive elements, got %s"
                         % (list(size),))
    x, was3 = _batched(images)
    if preserve_aspect_ratio:
        h, w = x.shape[1], x.shape[2]
        scale = min(new_h / h, new_w / w)
        new_h, new_w = max(int(round(h * scale)), 1), max(int(round(w * scale)), 1)
    method = getattr(method, "value", method)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        out = _nearest_axis(_nearest_axis(x, 1, new_h), 2, new_w)
    elif method == ResizeMethod.BILINEAR:
        if antialias and (new_h < x.shape[1] or new_w < x.shape[2]):
            raise NotImplementedError("tf.image.resize(antialias=True) when downsampling is "
                                      "not implemented by mixprec; resize without antialias")
        if not x.dtype.is_floating or x.dtype.name == "float64":
            x = _core.cast(x, "float32")
        elif x.dtype.name in ("float16", "bfloat16"):
            x = _core.cast(x, "float32")
        # along the width first, then the height: TensorFlow's order of the two lerps
        out = _bilinear_axis(_bilinear_axis(x, 2, new_w), 1, new_h)
    else:
        raise NotImplementedError("tf.image.resize(method=%r) is not implemented by mixprec: "
                                  "use 'bilinear' or 'nearest'" % (method,))
    return _unbatched(out, was3)


def _reverse(x, axis):
    return _tf().reverse(x, [axis])  # the core's ReverseV2


def flip_left_right(image):
    image = _image(image)
    return _reverse(image, image.ndim - 2)


def flip_up_down(image):
    image = _image(image)
    return _reverse(image, image.ndim - 3)


def transpose(image, name=None):
    image = _image(image)
    perm = [1, 0, 2] if image.ndim == 3 else [0, 2, 1, 3]
    return _core.transpose(image, perm)


def rot90(image, k=1, name=None):
    """Rotated counter-clockwise by 90 degrees ``k`` times."""
    image = _image(image)
    k = int(k) % 4
    for _ in range(k):
        image = flip_up_down(transpose(image))
    return image


def _hw(x):
    return (x.shape[0], x.shape[1]) if x.ndim == 3 else (x.shape[1], x.shape[2])


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    image = _image(image)
    h, w = _hw(image)
    if offset_height < 0 or offset_width < 0:
        raise ValueError("offset_height must be >= 0." if offset_height < 0
                         else "offset_width must be >= 0.")
    if target_height <= 0 or target_width <= 0:
        raise ValueError("target_width must be > 0." if target_width <= 0
                         else "target_height must be > 0.")
    if w < target_width + offset_width:
        raise ValueError("width must be >= target + offset.")
    if h < target_height + offset_height:
        raise ValueError("height must be >= target + offset.")
    if image.ndim == 3:
        return image[offset_height:offset_height + target_height,
                     offset_width:offset_width + target_width]
    return image[:, offset_height:offset_height + target_height,
                 offset_width:offset_width + target_width]


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    image = _image(image)
    h, w = _hw(image)
    after_h = target_height - offset_height - h
    after_w = target_width - offset_width - w
    if offset_height < 0 or offset_width < 0:
        raise ValueError("offset_height must be >= 0" if offset_height < 0
                         else "offset_width must be >= 0")
    if after_w < 0:
        raise ValueError("width must be <= target - offset")
    if after_h < 0:
        raise ValueError("height must be <= target - offset")
    pads = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
    if image.ndim == 4:
        pads = [[0, 0]] + pads
    return _tf().pad(image, pads)


def central_crop(image, central_fraction):
    image = _image(image)
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    if central_fraction == 1.0:
        return image
    h, w = _hw(image)
    # TF: start = int((size - size * fraction) / 2) in float64, size_out = size - 2 * start
    top = int((h - h * central_fraction) / 2)
    left = int((w - w * central_fraction) / 2)
    return crop_to_bounding_box(image, top, left, h - 2 * top, w - 2 * left)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Centrally cropped and/or zero-padded to the target size."""
    image = _image(image)
    if target_height <= 0 or target_width <= 0:
        raise ValueError("target_height must be > 0." if target_height <= 0
                         else "target_width must be > 0.")
    h, w = _hw(image)
    off_crop_w = max((w - target_width) // 2, 0)
    off_pad_w = max((target_width - w) // 2, 0)
    off_crop_h = max((h - target_height) // 2, 0)
    off_pad_h = max((target_height - h) // 2, 0)
    cropped = crop_to_bounding_box(image, off_crop_h, off_crop_w, min(target_height, h),
                                   min(target_width, w))
    return pad_to_bounding_box(cropped, off_pad_h, off_pad_w, target_height, target_width)


def rgb_to_grayscale(images, name=None):
    images = _core.convert_to_tensor(images)
    flt = images if images.dtype.is_floating else convert_image_dtype(images, "float32")
    w = _core.constant([0.2989, 0.5870, 0.1140], flt.dtype.name)
    gray = _core.reduce_sum(flt * w, -1, True)
    return convert_image_dtype(gray, images.dtype) if not images.dtype.is_floating else gray


def grayscale_to_rgb(images, name=None):
    images = _core.convert_to_tensor(images)
    if images.shape[-1] != 1:
        raise ValueError("Last dimension of a grayscale image should be size 1.")
    return _core.concat([images, images, images], -1)


def adjust_brightness(image, delta):
    image = _core.convert_to_tensor(image)
    flt = image if image.dtype.is_floating else convert_image_dtype(image, "float32")
    out = flt + _core.cast(_core.convert_to_tensor(delta), flt.dtype)
    return out if image.dtype.is_floating else convert_image_dtype(out, image.dtype,
                                                                   saturate=True)


def adjust_contrast(images, contrast_factor):
    """(x - mean) * factor + mean, the mean per image and channel."""
    images = _core.convert_to_tensor(images)
    flt = images if images.dtype.is_floating else convert_image_dtype(images, "float32")
    axes = [flt.ndim - 3, flt.ndim - 2]
    mean = _core.reduce_mean(flt, axes, True)
    out = (flt - mean) * _core.cast(_core.convert_to_tensor(contrast_factor), flt.dtype) + mean
    return out if images.dtype.is_floating else convert_image_dtype(out, images.dtype,
                                                                    saturate=True)


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(N)) per image, in float32."""
    image = _image(image)
    if not image.dtype.is_floating:
        image = _core.cast(image, "float32")
    axes = [image.ndim - 3, image.ndim - 2, image.ndim - 1]
    n = image.shape[-1] * image.shape[-2] * image.shape[-3]
    mean = _core.reduce_mean(image, axes, True)
    var = _core.reduce_mean(_core.square(image - mean), axes, True)
    adjusted = _core.maximum(_core.sqrt(var), _core.fill([], 1.0 / _math.sqrt(n),
                                                          image.dtype))
    return (image - mean) / adjusted


_INT_MAX = {"uint8": 255, "int8": 127, "int16": 32767, "uint16": 65535, "int32": 2147483647,
            "int64": 9223372036854775807}


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Floats in [0, 1] ↔ integers over their full range (TF's scaling rules)."""
    from mixprec._dtypes import as_dtype

    image = _core.convert_to_tensor(image)
    dtype = as_dtype(dtype)
    src = image.dtype
    if src == dtype:
        return _core.identity(image)
    if src.is_floating and dtype.is_floating:
        return _core.cast(image, dtype)
    if src.is_floating:  # float -> int: scale by max + 0.5, then truncate
        top = _INT_MAX[dtype.name]
        scaled = image * (top + 0.5)
        if saturate:
            scaled = _core.minimum(_core.maximum(scaled, 0.0 if dtype.name.startswith("u")
                                                 else -top - 1.0), float(top))
        return _core.cast(scaled, dtype)
    if dtype.is_floating:  # int -> float: divide by max
        return _core.cast(image, dtype) * (1.0 / _INT_MAX[src.name])
    a, b = _INT_MAX[src.name], _INT_MAX[dtype.name]
    if a > b:
        return _core.cast(_core.floordiv(image, _core.fill([], (a + 1) // (b + 1), src)), dtype)
    return _core.cast(image, dtype) * _core.fill([], (b + 1) // (a + 1), dtype)


def _random_uniform(shape, lo, hi, seed):
    return _tf().random.uniform(shape, lo, hi, seed=seed)


def random_flip_left_right(image, seed=None):
    image = _image(image)
    return _random_flip(image, image.ndim - 2, seed)


def random_flip_up_down(image, seed=None):
    image = _image(image)
    return _random_flip(image, image.ndim - 3, seed)


def _random_flip(image, axis, seed, u=None):
    n = 1 if image.ndim == 3 else image.shape[0]
    if u is None:
        u = _random_uniform([n], 0.0, 1.0, seed)
    flipped = _reverse(image, axis)
    shape = [n] + [1] * (image.ndim - 1) if image.ndim == 4 else [1, 1, 1]
    cond = _core.reshape(_core.less(u, 0.5), shape)
    return _core.where(_core.broadcast_to(cond, list(image.shape)), flipped, image)


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _random_uniform([], -max_delta, max_delta, seed))


def random_contrast(image, lower, upper, seed=None):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_contrast(image, _random_uniform([], lower, upper, seed))


def random_crop(value, size, seed=None, name=None):
    """A random ``size`` slice of ``value`` (every dimension)."""
    value = _core.convert_to_tensor(value)
    size = [int(s) for s in size]
    if len(size) != value.ndim:
        raise ValueError("size must have the same rank as value")
    if any(s > d for s, d in zip(size, value.shape)):
        from mixprec import errors

        raise errors.InvalidArgumentError("Need value.shape >= size, got %s vs %s"
                                          % (list(value.shape), size))
    limits = [d - s + 1 for s, d in zip(size, value.shape)]
    u = _random_uniform([len(size)], 0.0, 1.0, seed).numpy()
    offs = [min(int(ui * lim), lim - 1) for ui, lim in zip(u, limits)]
    return value[tuple(slice(o, o + s) for o, s in zip(offs, size))]


def _stateless_u(shape, seed, lo=0.0, hi=1.0):
    return _tf().random.stateless_uniform(shape, seed=seed, minval=lo, maxval=hi)


def stateless_random_flip_left_right(image, seed):
    image = _image(image)
    n = 1 if image.ndim == 3 else image.shape[0]
    return _random_flip(image, image.ndim - 2, None, u=_stateless_u([n], seed))


def stateless_random_flip_up_down(image, seed):
    image = _image(image)
    n = 1 if image.ndim == 3 else image.shape[0]
    return _random_flip(image, image.ndim - 3, None, u=_stateless_u([n], seed))


def stateless_random_brightness(image, max_delta, seed):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _stateless_u([], seed, -max_delta, max_delta))


def stateless_random_contrast(image, lower, upper, seed):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_contrast(image, _stateless_u([], seed, lower, upper))


def image_gradients(image):
    """(dy, dx): forward differences along height and width, zero in the last row/column."""
    image = _core.convert_to_tensor(image)
    if image.ndim != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not %s."
                         % (list(image.shape),))
    b, h, w, d = image.shape
    dy = image[:, 1:] - image[:, :-1]
    dx = image[:, :, 1:] - image[:, :, :-1]
    dy = _core.concat([dy, _core.fill([b, 1, w, d], 0, image.dtype)], 1)
    dx = _core.concat([dx, _core.fill([b, h, 1, d], 0, image.dtype)], 2)
    return dy, dx


def total_variation(images, name=None):
    images = _image(images, "images")
    x, was3 = _batched(images)
    dv = _core.abs(x[:, 1:] - x[:, :-1])
    dh = _core.abs(x[:, :, 1:] - x[:, :, :-1])
    out = _core.reduce_sum(dv, [1, 2, 3]) + _core.reduce_sum(dh, [1, 2, 3])
    return out[0] if was3 else out


def psnr(a, b, max_val, name=None):
    a, b = _core.convert_to_tensor(a), _core.convert_to_tensor(b)
    a = a if a.dtype.is_floating else _core.cast(a, "float32")
    b = b if b.dtype.is_floating else _core.cast(b, "float32")
    mse = _core.reduce_mean(_core.squared_difference(a, b), [-3, -2, -1])
    mv = _core.cast(_core.convert_to_tensor(max_val), a.dtype)
    return 20.0 * _core.log(mv) / _math.log(10.0) - 10.0 / _math.log(10.0) * _core.log(mse)


from mixprec._image_color import *  # noqa: E402,F401,F403  (colour spaces, hue, SSIM, Sobel)
from mixprec._image_color import __all__ as _color_names  # noqa: E402

__all__ += list(_color_names)
from mixprec._image_sampling import crop_and_resize, extract_patches  # noqa: E402,F401

__all__ += ["crop_and_resize", "extract_patches"]
