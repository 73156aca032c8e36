"""``tf.image.extract_patches`` and ``tf.image.crop_and_resize``: patches and box crops
read by gathers (indices from shapes for patches; from the boxes, as tensors, for crops,
so a box given by the graph is read at every run), with TensorFlow's padding, sampling
coordinates and extrapolation. Compositions of core ops; no kernels here."""

import numpy as _np

from mixprec import _core

__all__ = ["extract_patches", "crop_and_resize"]


def _same_pad(size, k, stride, rate):
    eff = (k - 1) * rate + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total - total // 2


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """(batch, rows, cols, ksize_rows * ksize_cols * depth) patches (TensorFlow's order:
    patch row, patch column, depth)."""
    from mixprec import _array_ops
    x = _core.convert_to_tensor(images)
    if x.ndim != 4:
        raise ValueError("extract_patches needs a 4-D (batch, height, width, depth) input")
    for what, v in (("sizes", sizes), ("strides", strides), ("rates", rates)):
        if len(v) != 4 or v[0] != 1 or v[3] != 1:
            raise ValueError("%s must be [1, r, c, 1], got %s" % (what, list(v)))
    padding = padding.upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError("padding must be 'VALID' or 'SAME', got %r" % (padding,))
    _, h, w, d = x.shape
    (kr, kc), (sr, sc), (rr, rc) = sizes[1:3], strides[1:3], rates[1:3]
    if padding == "SAME":
        out_r, top, bottom = _same_pad(h, kr, sr, rr)
        out_c, left, right = _same_pad(w, kc, sc, rc)
        x = _array_ops.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]])
    else:
        out_r = max((h - ((kr - 1) * rr + 1)) // sr + 1, 0)
        out_c = max((w - ((kc - 1) * rc + 1)) // sc + 1, 0)
    rows = _np.arange(out_r)[:, None] * sr + _np.arange(kr)[None, :] * rr  # (out_r, kr)
    cols = _np.arange(out_c)[:, None] * sc + _np.arange(kc)[None, :] * rc  # (out_c, kc)
    t = _core.gather(x, _core.constant(rows.astype("int32"), "int32"), 1)  # b,out_r,kr,W,d
    t = _core.gather(t, _core.constant(cols.astype("int32"), "int32"), 3)  # b,out_r,kr,out_c,kc,d
    t = _core.transpose(t, [0, 1, 3, 2, 4, 5])
    return _core.reshape(t, [-1, out_r, out_c, kr * kc * d])


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear",
                    extrapolation_value=0.0, name=None):
    """One (crop_h, crop_w) float32 crop per box (normalised y1, x1, y2, x2) of image
    ``box_indices[i]``; samples outside the image take ``extrapolation_value``."""
    import mixprec as tf
    img = _core.convert_to_tensor(image)
    if img.ndim != 4:
        raise ValueError("image must be 4-D (batch, height, width, depth)")
    if method not in ("bilinear", "nearest"):
        raise ValueError("method must be 'bilinear' or 'nearest', got %r" % (method,))
    img = _core.cast(img, "float32")
    boxes = _core.cast(_core.convert_to_tensor(boxes), "float32")
    idx = _core.cast(_core.convert_to_tensor(box_indices), "int32")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError("boxes must be 2-D [num_boxes, 4], got shape %s" % (tuple(boxes.shape),))
    ch, cw = int(crop_size[0]), int(crop_size[1])
    if ch <= 0 or cw <= 0:
        raise ValueError("crop dimensions must be positive")
    _, h, w, d = img.shape
    nb = boxes.shape[0]

    def coords(lo, hi, n, size):
        """(num_boxes, n) sample positions in pixels, TensorFlow's formula."""
        if n > 1:
            steps = _core.constant(_np.arange(n, dtype=_np.float32), "float32")
            return lo[:, None] * (size - 1) + steps[None, :] * ((hi - lo) * (size - 1) /
                                                                (n - 1))[:, None]
        return tf.tile((0.5 * (lo + hi) * (size - 1))[:, None], [1, 1])

    ys = coords(boxes[:, 0], boxes[:, 2], ch, h)
    xs = coords(boxes[:, 1], boxes[:, 3], cw, w)
    valid = tf.logical_and(
        tf.logical_and(ys[:, :, None] >= 0.0, ys[:, :, None] <= h - 1.0),
        tf.logical_and(xs[:, None, :] >= 0.0, xs[:, None, :] <= w - 1.0))  # nb, ch, cw

    def clamp(v, top):
        return _core.minimum(_core.maximum(v, 0), top)

    b = tf.tile(idx[:, None, None], [1, ch, cw])

    def sample(yi, xi):  # yi (nb, ch) int, xi (nb, cw) int -> (nb, ch, cw, d)
        yy = tf.tile(clamp(yi, h - 1)[:, :, None], [1, 1, cw])
        xx = tf.tile(clamp(xi, w - 1)[:, None, :], [1, ch, 1])
        return tf.gather_nd(img, tf.stack([b, yy, xx], -1))

    if method == "nearest":
        ry = _core.cast(_round_half_away(ys), "int32")
        rx = _core.cast(_round_half_away(xs), "int32")
        out = sample(ry, rx)
    else:
        y0f, x0f = _core.floor(ys), _core.floor(xs)
        y0, x0 = _core.cast(y0f, "int32"), _core.cast(x0f, "int32")
        y1, x1 = _core.cast(tf.math.ceil(ys), "int32"), _core.cast(tf.math.ceil(xs), "int32")
        ly, lx = (ys - y0f)[:, :, None, None], (xs - x0f)[:, None, :, None]
        tl, tr = sample(y0, x0), sample(y0, x1)
        bl, br = sample(y1, x0), sample(y1, x1)
        top = tl + (tr - tl) * lx
        bottom = bl + (br - bl) * lx
        out = top + (bottom - top) * ly
    fill = _core.constant(float(extrapolation_value), "float32")
    return _core.where(tf.tile(valid[:, :, :, None], [1, 1, 1, d]), out,
                       out * 0.0 + fill) if nb else out


def _round_half_away(v):
    """std::round: halves away from zero."""
    import mixprec as tf
    return tf.sign(v) * _core.floor(_core.abs(v) + 0.5)
