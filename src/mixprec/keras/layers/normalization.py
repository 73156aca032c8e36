"""BatchNormalization as tf-keras 2.21 (v2 behaviour): batch statistics when training,
moving statistics otherwise (and always when the layer is not trainable); gamma, beta and
the moving statistics float32 under 16-bit policies, math in float32. The moving variance
takes the unbiased batch variance where tf-keras takes its fused path (4-D/5-D input,
channel axis first or last) and the biased one elsewhere. renorm, virtual batches
(ghost batch norm), adjustment and synchronized moments follow tf-keras' non-fused path.
Moments and normalisation are mixprec.nn's, renorm and synchronized statistics
_batch_norm_stats'; this file only chooses and bookkeeps."""

import warnings

from mixprec import _core, _logging, _ops
from mixprec import nn as _nn
from mixprec._dtypes import as_dtype
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer, in_symbolic_call
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.layers import _batch_norm_stats as _stats

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    """``gamma * (x - mean) / sqrt(var + epsilon) + beta`` over ``axis``; moving statistics
    follow ``moving = momentum * moving + (1 - momentum) * batch`` in training."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, synchronized=False, **kwargs):
        super().__init__(name=name, trainable=trainable, **kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = axis
        else:
            raise TypeError("Expected an int or a list/tuple of ints for the argument 'axis', "
                            "but received: %r" % (axis,))
        if synchronized and fused:
            raise ValueError("`fused=True` is not supported when `synchronized=True`.")
        self.synchronized = bool(synchronized)
        if self.synchronized:
            fused = False
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.renorm = bool(renorm)
        self.virtual_batch_size = virtual_batch_size
        self.adjustment = adjustment
        if fused:
            self._raise_if_fused_cannot_be_used()
        elif fused is None and not self._fused_can_be_used():
            fused = False
        self.fused = fused
        self.supports_masking = True
        if self.renorm:
            renorm_clipping = dict(renorm_clipping or {})
            keys = ["rmax", "rmin", "dmax"]
            if set(renorm_clipping) - set(keys):
                raise ValueError("Received invalid keys for `renorm_clipping` argument: %s. "
                                 "Supported values: %s." % (renorm_clipping, keys))
            self.renorm_clipping = renorm_clipping
            self.renorm_momentum = renorm_momentum
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def _raise_if_fused_cannot_be_used(self):
        # tf-keras checks these at construction; the input rank only at build
        if self.renorm:
            raise ValueError("Passing both `fused=True` and `renorm=True` is not supported")
        axis = [self.axis] if isinstance(self.axis, int) else self.axis
        if len(axis) > 1 or axis[0] not in (-4, -3, -1, 1, 3, 4):
            raise ValueError("Passing `fused=True` is only supported when axis is 1 or 3 for "
                             "input rank = 4 or 1 or 4 for input rank = 5. Got axis %s"
                             % (axis,))
        if self.virtual_batch_size is not None:
            raise ValueError("Passing `fused=True` is not supported when `virtual_batch_size` "
                             "is specified.")
        if self.adjustment is not None:
            raise ValueError("Passing `fused=True` is not supported when `adjustment` is "
                             "specified.")
        if self._compute_dtype not in ("float16", "bfloat16", "float32", None):
            raise ValueError("Passing `fused=True` is only supported when the compute dtype "
                             "is float16, bfloat16, or float32. Got dtype: %s"
                             % (self._compute_dtype,))

    def _fused_can_be_used(self):
        try:
            self._raise_if_fused_cannot_be_used()
            return True
        except ValueError:
            return False

    @property
    def _param_dtype(self):
        # tf-keras raises 16-bit batch-norm parameters to float32
        dt = as_dtype(self.dtype) if self.dtype else None
        if dt is None or dt.name in ("float16", "bfloat16"):
            return "float32"
        return dt.name

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        ndims = len(input_shape)
        if not ndims:
            raise ValueError("Input has undefined rank. Received: input_shape=%s."
                             % (input_shape,))
        if isinstance(self.axis, int):
            self.axis = [self.axis]
        for i, x in enumerate(self.axis):
            if x < 0:
                self.axis[i] = ndims + x
        for x in self.axis:
            if x < 0 or x >= ndims:
                raise ValueError("Invalid value for `axis` argument. Expected 0 <= axis < "
                                 "inputs.rank (with inputs.rank=%d). Received: axis=%s"
                                 % (ndims, tuple(self.axis)))
        if len(self.axis) != len(set(self.axis)):
            raise ValueError("Duplicate axis: %s" % (self.axis,))
        if self.virtual_batch_size is not None:
            if self.virtual_batch_size <= 0:
                raise ValueError("`virtual_batch_size` must be a positive integer that divides "
                                 "the true batch size of the input tensor. Received: "
                                 "virtual_batch_size=%s" % (self.virtual_batch_size,))
            if 0 in self.axis:
                raise ValueError("When using `virtual_batch_size`, the batch dimension must be "
                                 "0 and thus axis cannot include 0. Received axis=%s"
                                 % (self.axis,))
            if self.adjustment is not None:
                raise ValueError("When using `virtual_batch_size`, adjustment cannot be "
                                 "specified")
        # tf-keras' fused path (4-D/5-D input, one channel axis first or last) keeps the
        # unbiased batch variance in the moving variance (semantics.md); fused=None becomes
        # True for such a rank, and a 5-D input with another axis quietly unfused
        if self.fused in (None, True):
            if self.fused is None:
                self.fused = ndims in (4, 5)
            elif ndims not in (4, 5):
                raise ValueError("Batch normalization layers with `fused=True` only support 4D "
                                 "or 5D input tensors. Received tensor with shape: %s"
                                 % (input_shape,))
        if self.fused:
            if self.axis not in ([1], [ndims - 1]):
                if ndims == 5:
                    self.fused = False
                else:
                    raise ValueError("Unsupported axis. The use of `fused=True` is only "
                                     "possible with `axis=1` or `axis=3` for 4D input tensors. "
                                     "Received: axis=%s" % (tuple(self.axis),))
        self.fused = bool(self.fused)
        self._unbiased_moving_var = self.fused
        axis_to_dim = {x: input_shape[x] for x in self.axis}
        for x, d in axis_to_dim.items():
            if d is None:
                raise ValueError("Input has undefined `axis` dimension. Received input with "
                                 "shape %s and axis=%s" % (input_shape, tuple(self.axis)))
        self.input_spec = InputSpec(ndim=ndims, axes=axis_to_dim)
        if len(axis_to_dim) == 1 and self.virtual_batch_size is None:
            param_shape = (list(axis_to_dim.values())[0],)
        else:
            param_shape = [axis_to_dim[i] if i in axis_to_dim else 1 for i in range(ndims)]
            if self.virtual_batch_size is not None:
                # (virtual batch, groups, ...): the axes move one to the right (and so does
                # the axis in get_config, as tf-keras')
                param_shape.insert(1, 1)
                self.axis = [x + 1 for x in self.axis]
            param_shape = tuple(param_shape)
        self._param_shape = param_shape
        dt = self._param_dtype
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape, dtype=dt,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, trainable=True,
                                         experimental_autocast=False)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, dtype=dt,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, trainable=True,
                                        experimental_autocast=False)
        self.moving_mean = self.add_weight("moving_mean", param_shape, dtype=dt,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False, experimental_autocast=False)
        self.moving_variance = self.add_weight("moving_variance", param_shape, dtype=dt,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False, experimental_autocast=False)
        if self.renorm:
            def stddev_init(shape, dtype=None, **kwargs):
                return _core.sqrt(_core.convert_to_tensor(
                    self.moving_variance_initializer(shape, dtype=dtype, **kwargs)))

            self.moving_stddev = self.add_weight("moving_stddev", param_shape, dtype=dt,
                                                 initializer=stddev_init, trainable=False,
                                                 experimental_autocast=False)
            self.renorm_mean = self.add_weight("renorm_mean", param_shape, dtype=dt,
                                               initializer=self.moving_mean_initializer,
                                               trainable=False, experimental_autocast=False)
            self.renorm_stddev = self.add_weight("renorm_stddev", param_shape, dtype=dt,
                                                 initializer=stddev_init, trainable=False,
                                                 experimental_autocast=False)
        self.built = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _broadcast(self, v, ndims):
        # (C,) -> shape of rank ndims with C on the (single) axis, 1 elsewhere
        if v is None or len(v.shape) == ndims or len(self.axis) != 1 or self.axis[0] == ndims - 1:
            return v
        shape = [1] * ndims
        shape[self.axis[0]] = self._param_shape[0]
        return _core.reshape(v, shape)

    def call(self, inputs, training=None, mask=None):
        if training is None:
            training = False  # tf-keras: the learning phase, 0 outside fit
        if not self.trainable:
            training = False  # v2 behaviour: a frozen layer always uses moving statistics
        training = bool(training)
        in_dtype = inputs.dtype.name
        x = inputs
        original_shape = None
        if self.virtual_batch_size is not None:
            # Ghost batch normalization: (B, ...) -> (virtual_batch_size, B / vbs, ...) in
            # training (each column a virtual batch), (B, 1, ...) otherwise
            original_shape = [-1] + list(x.shape[1:])
            lead = [self.virtual_batch_size, -1] if training else [-1, 1]
            x = _core.reshape(x, lead + list(x.shape[1:]))
        if in_dtype in ("float16", "bfloat16"):
            x = _core.cast(x, "float32")  # all batch-norm math in float32
        ndims = x.ndim
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        if self.virtual_batch_size is not None:
            del reduction_axes[1]  # each virtual batch has its own statistics
        scale = self._broadcast(self.gamma, ndims)
        offset = self._broadcast(self.beta, ndims)
        if training:
            if self.adjustment is not None:
                adj_scale, adj_bias = self.adjustment(_ops.shape(x))
                scale, offset = _compose(_core.convert_to_tensor(adj_scale),
                                         _core.convert_to_tensor(adj_bias), scale, offset)
            keep_dims = self.virtual_batch_size is not None or len(self.axis) > 1
            renorm_stats = _stats.renorm_snapshot(self) if self.renorm else None
            if mask is not None and self.fused:
                warnings.warn("Masking is not supported with `fused=True`. You should either "
                              "turn off fusing (`fused=False`) or you should not pass a `mask` "
                              "argument when calling the layer. For the moment `mask` will be "
                              "ignored for the normalization.")
                mask = None
            if mask is not None and self.virtual_batch_size is None:
                if self.synchronized:
                    raise NotImplementedError("mixprec: BatchNormalization(synchronized=True) "
                                              "with a mask is not supported")
                mean, variance = _stats.masked_moments(x, mask, reduction_axes, keep_dims)
            elif self.synchronized:
                mean, variance = _stats.sync_moments(x, reduction_axes, keep_dims)
            else:
                mean, variance = _nn.moments(x, reduction_axes, keepdims=keep_dims)
            if self.virtual_batch_size is not None:
                new_mean = _core.reduce_mean(mean, [1], keepdims=True)
                new_variance = _core.reduce_mean(variance, [1], keepdims=True)
            else:
                new_mean, new_variance = mean, variance
            # a replica with no rows keeps its moving statistics (tf-keras' zero-size input)
            update = not in_symbolic_call() and inputs.shape[0] != 0
            if self.renorm and update:
                r, d, new_mean, new_variance = _stats.renorm_correction(
                    self, renorm_stats, new_mean, new_variance)
                scale, offset = _compose(self._broadcast(r, ndims), self._broadcast(d, ndims),
                                         scale, offset)
            if update:
                self._update_moving(x, new_mean, new_variance, reduction_axes)
            use_mean, use_var = self._broadcast(mean, ndims), self._broadcast(variance, ndims)
        else:
            use_mean = self._broadcast(_stats.read(self.moving_mean), ndims)
            use_var = self._broadcast(_stats.read(self.moving_variance), ndims)
        out = _nn.batch_normalization(x, use_mean, use_var, offset, scale, self.epsilon)
        if out.dtype.name != in_dtype and in_dtype in ("float16", "bfloat16"):
            out = _core.cast(out, in_dtype)
        if original_shape is not None:
            out = _core.reshape(out, original_shape)
        return out

    def _update_moving(self, x, mean, variance, reduction_axes):
        mean = _core.stop_gradient(mean)
        variance = _core.stop_gradient(variance)
        if self._unbiased_moving_var:
            n = 1
            for a in reduction_axes:
                n *= x.shape[a]
            variance = variance * (float(n) / max(n - 1, 1))
        _stats.moving_average(self.moving_mean, mean, self.momentum)
        if self.renorm:
            # the moving variance follows the moving standard deviation (tf-keras)
            stddev = _stats.moving_average(self.moving_stddev,
                                           _core.sqrt(variance + self.epsilon), self.momentum)
            _stats.update(self.moving_variance,
                          lambda _: _core.relu(stddev * stddev - self.epsilon))
        else:
            _stats.moving_average(self.moving_variance, variance, self.momentum)

    def get_config(self):
        config = super().get_config()
        config.update(
            axis=self.axis, momentum=self.momentum, epsilon=self.epsilon, center=self.center,
            scale=self.scale, beta_initializer=initializers.serialize(self.beta_initializer),
            gamma_initializer=initializers.serialize(self.gamma_initializer),
            moving_mean_initializer=initializers.serialize(self.moving_mean_initializer),
            moving_variance_initializer=initializers.serialize(
                self.moving_variance_initializer),
            beta_regularizer=regularizers.serialize(self.beta_regularizer),
            gamma_regularizer=regularizers.serialize(self.gamma_regularizer),
            beta_constraint=constraints.serialize(self.beta_constraint),
            gamma_constraint=constraints.serialize(self.gamma_constraint))
        if self.renorm:
            config.update(renorm=True, renorm_clipping=self.renorm_clipping,
                          renorm_momentum=self.renorm_momentum)
        if self.virtual_batch_size is not None:
            config["virtual_batch_size"] = self.virtual_batch_size
        if self.adjustment is not None:
            _logging.get_logger().warning(
                "The `adjustment` function of this `BatchNormalization` layer cannot be "
                "serialized and has been omitted from the layer config. It will not be "
                "included when re-creating the layer from the saved config.")
        return config  # tf-keras 2.21 leaves `synchronized` out of the config


def _compose(scale, offset, then_scale, then_offset):
    """(scale, offset) followed by (then_scale, then_offset): x * s + o, then * ts + to."""
    if then_scale is not None:
        scale = scale * then_scale
        offset = offset * then_scale
    if then_offset is not None:
        offset = offset + then_offset
    return scale, offset
