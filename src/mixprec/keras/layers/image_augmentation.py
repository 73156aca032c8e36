"""tf-keras 2.21's geometric augmentation layers: RandomRotation, RandomZoom,
RandomTranslation (per-image random transforms through mixprec._image_transform, i.e. the
core's ImageProjectiveTransformV3) and RandomHeight/RandomWidth (a random resize). Active only
when training; identity (cast to the compute dtype) otherwise. Random draws and argument checks
here; no pixel arithmetic."""

import math

from mixprec import _core
from mixprec._image_transform import (
    check_fill_mode_and_interpolation, get_rotation_matrix, get_translation_matrix,
    get_zoom_matrix, transform)
from mixprec.keras.layers.preprocessing import _RandomImageLayer

__all__ = ["RandomRotation", "RandomZoom", "RandomTranslation", "RandomHeight", "RandomWidth"]


def _tf():
    import mixprec

    return mixprec


def _bounds(factor):
    if isinstance(factor, (tuple, list)):
        return factor[0], factor[1]
    return -factor, factor


def _as_images(layer, inputs, cast=True):
    if isinstance(inputs, dict):
        raise ValueError("This layer can only process a tensor representing an image or a batch "
                         "of images. Received: type(inputs)=%s." % type(inputs))
    x = _tf().convert_to_tensor(inputs)
    if cast and x.dtype.name != layer.compute_dtype:
        x = _core.cast(x, layer.compute_dtype)
    return x


class _RandomTransform(_RandomImageLayer):
    """A random (n, 8) transform per image, applied with the layer's fill and interpolation."""

    def __init__(self, fill_mode, interpolation, seed, fill_value, **kwargs):
        super().__init__(seed, **kwargs)
        check_fill_mode_and_interpolation(fill_mode, interpolation)
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.interpolation = interpolation

    def _uniform(self, shape, lo, hi):
        return _tf().random.uniform(shape, lo, hi, seed=self.seed, dtype="float32")

    def call(self, inputs, training=True):
        x = _as_images(self, inputs)
        if not training:
            return x
        unbatched = x.shape.rank == 3
        if unbatched:
            x = _core.reshape(x, [1] + list(x.shape))
        n, h, w = x.shape[0], float(x.shape[-3]), float(x.shape[-2])
        out = transform(x, self._transforms(n, h, w), fill_mode=self.fill_mode,
                        fill_value=self.fill_value, interpolation=self.interpolation)
        return _core.reshape(out, list(out.shape)[1:]) if unbatched else out

    def _config(self, **extra):
        config = self._base_config()
        config.update(extra)
        config.update(fill_mode=self.fill_mode, fill_value=self.fill_value,
                      interpolation=self.interpolation, seed=self.seed)
        return config


class RandomRotation(_RandomTransform):
    """Rotates each image by a random angle in ``factor`` x 2 pi (counter-clockwise for a
    positive angle) in training."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        self.factor = factor
        self.lower, self.upper = _bounds(factor)
        if self.upper < self.lower:
            raise ValueError("`factor` argument cannot have a negative value. Received: "
                             "factor=%s" % (factor,))
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)

    def _transforms(self, n, h, w):
        angles = self._uniform([n], self.lower * 2.0 * math.pi, self.upper * 2.0 * math.pi)
        return get_rotation_matrix(angles, h, w)

    def get_config(self):
        return self._config(factor=self.factor)


class RandomZoom(_RandomTransform):
    """Zooms each image by a random factor (1 + a draw in ``height_factor``; a positive draw
    zooms out) in training; ``width_factor=None`` keeps the aspect ratio."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _bounds(height_factor)
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError("`height_factor` argument must have values between [-1, 1]. "
                             "Received: height_factor=%s" % (height_factor,))
        self.width_factor = width_factor
        if width_factor is not None:
            self.width_lower, self.width_upper = _bounds(width_factor)
            if self.width_lower < -1.0 or self.width_upper < -1.0:
                raise ValueError("`width_factor` argument must have values larger than -1. "
                                 "Received: width_factor=%s" % (width_factor,))
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)

    def _transforms(self, n, h, w):
        tf = _tf()
        hz = self._uniform([n, 1], 1.0 + self.height_lower, 1.0 + self.height_upper)
        wz = hz if self.width_factor is None else self._uniform(
            [n, 1], 1.0 + self.width_lower, 1.0 + self.width_upper)
        return get_zoom_matrix(tf.concat([wz, hz], axis=1), h, w)

    def get_config(self):
        return self._config(height_factor=self.height_factor, width_factor=self.width_factor)


class RandomTranslation(_RandomTransform):
    """Shifts each image by random fractions of its height and width in training."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _bounds(height_factor)
        if self.height_upper < self.height_lower:
            raise ValueError("`height_factor` cannot have upper bound less than lower bound, "
                             "got %s" % (height_factor,))
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError("`height_factor` argument must have values between [-1, 1]. "
                             "Received: height_factor=%s" % (height_factor,))
        self.width_factor = width_factor
        self.width_lower, self.width_upper = _bounds(width_factor)
        if self.width_upper < self.width_lower:
            raise ValueError("`width_factor` cannot have upper bound less than lower bound, "
                             "got %s" % (width_factor,))
        if abs(self.width_lower) > 1.0 or abs(self.width_upper) > 1.0:
            raise ValueError("`width_factor` must have values between [-1, 1], got %s"
                             % (width_factor,))
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)

    def _transforms(self, n, h, w):
        tf = _tf()
        dy = self._uniform([n, 1], self.height_lower, self.height_upper) * h
        dx = self._uniform([n, 1], self.width_lower, self.width_upper) * w
        return get_translation_matrix(tf.concat([dx, dy], axis=1))

    def get_config(self):
        return self._config(height_factor=self.height_factor, width_factor=self.width_factor)


class _RandomResize(_RandomImageLayer):
    """Resizes the batch along one axis by 1 + a random draw in ``factor`` in training (the
    new size is read on the host: eager only, as the output shape depends on it)."""

    _axis = -3
    _name = "height"

    def __init__(self, factor, interpolation="bilinear", seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.factor = factor
        lo, hi = _bounds(factor)
        if hi < lo:
            raise ValueError("`factor` argument cannot have an upper bound less than the lower "
                             "bound. Received: factor=%s" % (factor,))
        if lo < -1.0 or hi < -1.0:
            raise ValueError("`factor` argument must have values larger than -1. Received: "
                             "factor=%s" % (factor,))
        self._lo, self._hi = lo, hi
        from mixprec.image import ResizeMethod

        methods = {v: v for k, v in vars(ResizeMethod).items() if not k.startswith("_")}
        if interpolation not in methods:
            raise NotImplementedError("Value not recognized for `interpolation`: %s. Supported "
                                      "values are: %s" % (interpolation, sorted(methods)))
        self.interpolation = interpolation

    def call(self, inputs, training=True):
        tf = _tf()
        x = _as_images(self, inputs, cast=False)
        if not training:
            return x if x.dtype.name == self.compute_dtype else _core.cast(x, self.compute_dtype)
        f = tf.random.uniform([], 1.0 + self._lo, 1.0 + self._hi, seed=self.seed,
                              dtype="float32")
        size = [x.shape[-3], x.shape[-2]]
        i = 0 if self._axis == -3 else 1
        size[i] = int(float(f.numpy()) * float(size[i]))  # tf.cast(float, int32) truncates
        out = tf.image.resize(x, size, method=self.interpolation)
        return _core.cast(out, self.compute_dtype) if out.dtype.name != self.compute_dtype \
            else out

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        shape[self._axis] = None
        return tuple(shape)

    def get_config(self):
        config = self._base_config()
        config.update(factor=self.factor, interpolation=self.interpolation, seed=self.seed)
        return config


class RandomHeight(_RandomResize):
    """Resizes the height of the batch by a random factor in training."""

    _axis = -3


class RandomWidth(_RandomResize):
    """Resizes the width of the batch by a random factor in training."""

    _axis = -2
