"""Projective image warps: ``transform`` (tf-keras' image_preprocessing.transform over the
core's ImageProjectiveTransformV3 op, csrc/ops_image.c) and the transform matrices of
rotations, zooms and translations that tf-keras' augmentation layers build. Argument checks
and small (n, 8) matrices from core ops only; the pixels are the C kernel's."""

from mixprec import _core

__all__ = ["transform", "get_rotation_matrix", "get_zoom_matrix", "get_translation_matrix"]

_FILL = {"reflect": 0, "wrap": 1, "constant": 2, "nearest": 3}
_INTERP = {"nearest": 0, "bilinear": 1}


def _tf():
    import mixprec

    return mixprec


def check_fill_mode_and_interpolation(fill_mode, interpolation):
    """tf-keras' check (NotImplementedError, its messages)."""
    if fill_mode not in _FILL:
        raise NotImplementedError("Unknown `fill_mode` %s. Only `reflect`, `wrap`, `constant` "
                                  "and `nearest` are supported." % (fill_mode,))
    if interpolation not in _INTERP:
        raise NotImplementedError("Unknown `interpolation` %s. Only `nearest` and `bilinear` "
                                  "are supported." % (interpolation,))


def transform(images, transforms, fill_mode="reflect", fill_value=0.0, interpolation="bilinear",
              output_shape=None, name=None):
    """Each image of ``images`` (n, h, w, c) warped by its row of ``transforms`` (n or 1, 8):
    row [a0, a1, a2, b0, b1, b2, c0, c1] maps the *output* point (x, y) to the input point
    ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1. Points outside the
    input follow ``fill_mode`` (reflect, wrap, constant with ``fill_value``, nearest).
    Integer images are computed in float32 and truncated back, as TensorFlow's kernel."""
    del name
    tf = _tf()
    fill_mode = str(fill_mode).lower()
    interpolation = str(interpolation).lower()
    check_fill_mode_and_interpolation(fill_mode, interpolation)
    images = tf.convert_to_tensor(images)
    transforms = tf.convert_to_tensor(transforms, dtype_hint=tf.float32)
    if transforms.dtype != tf.float32:
        raise TypeError("Tensor conversion requested dtype float32 for Tensor with dtype %s"
                        % transforms.dtype.name)
    if output_shape is None:
        output_shape = list(images.shape)[1:3]
    output_shape = [int(v) for v in (output_shape.numpy() if hasattr(output_shape, "numpy")
                                     else output_shape)]
    if len(output_shape) != 2:
        raise ValueError("output_shape must be a 1-D Tensor of 2 elements: new_height, "
                         "new_width, instead got output_shape=%s" % (output_shape,))
    dtype = images.dtype
    x = images if dtype.is_floating else _core.cast(images, "float32")
    out = _core.image_projective_transform(x, transforms, output_shape, _INTERP[interpolation],
                                           _FILL[fill_mode], float(fill_value))
    return out if dtype.is_floating else _core.cast(out, dtype)


def _col(v):
    return _tf().reshape(v, [-1, 1])


def get_rotation_matrix(angles, image_height, image_width, name=None):
    """(n, 8) transforms rotating each image by ``angles`` (radians, counter-clockwise)
    about its centre."""
    del name
    tf = _tf()
    angles = tf.cast(tf.convert_to_tensor(angles), tf.float32)
    h, w = tf.cast(image_height, tf.float32), tf.cast(image_width, tf.float32)
    cos, sin = tf.cos(angles), tf.sin(angles)
    x_off = (w - 1 - (cos * (w - 1) - sin * (h - 1))) / 2.0
    y_off = (h - 1 - (sin * (w - 1) + cos * (h - 1))) / 2.0
    n = angles.shape[0]
    return tf.concat([_col(cos), _col(-sin), _col(x_off), _col(sin), _col(cos), _col(y_off),
                      tf.zeros((n, 2), tf.float32)], axis=1)


def get_zoom_matrix(zooms, image_height, image_width, name=None):
    """(n, 8) transforms zooming by ``zooms`` (n, 2) = (x, y) factors about the centre
    (a factor above 1 zooms out)."""
    del name
    tf = _tf()
    zooms = tf.cast(tf.convert_to_tensor(zooms), tf.float32)
    h, w = tf.cast(image_height, tf.float32), tf.cast(image_width, tf.float32)
    n = zooms.shape[0]
    zx, zy = _col(zooms[:, 0]), _col(zooms[:, 1])
    x_off = (w - 1.0) / 2.0 * (1.0 - zx)
    y_off = (h - 1.0) / 2.0 * (1.0 - zy)
    z = tf.zeros((n, 1), tf.float32)
    return tf.concat([zx, z, x_off, z, zy, y_off, tf.zeros((n, 2), tf.float32)], axis=1)


def get_translation_matrix(translations, name=None):
    """(n, 8) transforms shifting each image by ``translations`` (n, 2) = (dx, dy) pixels."""
    del name
    tf = _tf()
    t = tf.cast(tf.convert_to_tensor(translations), tf.float32)
    n = t.shape[0]
    one, z = tf.ones((n, 1), tf.float32), tf.zeros((n, 1), tf.float32)
    return tf.concat([one, z, -_col(t[:, 0]), z, one, -_col(t[:, 1]),
                      tf.zeros((n, 2), tf.float32)], axis=1)


