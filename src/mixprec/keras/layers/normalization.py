"""BatchNormalization as tf-keras 2.21 (v2 behaviour): batch statistics when training,
moving statistics otherwise (and always when the layer is not trainable); gamma, beta and
the moving statistics float32 under 16-bit policies, math in float32. The moving variance
takes the unbiased batch variance where tf-keras takes its fused path (4-D/5-D input,
channel axis first or last) and the biased one elsewhere. Moments and normalisation are
mixprec.nn's; this file only chooses and bookkeeps."""

from mixprec import _core
from mixprec import nn as _nn
from mixprec._dtypes import as_dtype
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer, in_symbolic_call
from mixprec.keras.engine.input_spec import InputSpec

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
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError(
                "BatchNormalization: renorm, virtual_batch_size and adjustment are not "
                "supported by mixprec yet")
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
        self.renorm = False
        self.virtual_batch_size = None
        self.fused = fused
        self.synchronized = bool(synchronized)
        self.supports_masking = True
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

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
        # tf-keras' fused path (4-D/5-D input, one channel axis first or last) keeps the
        # unbiased batch variance in the moving variance (semantics.md)
        channel_axes = {4: ([1], [3]), 5: ([1], [4])}.get(ndims, ())
        can_fuse = self.axis in [list(a) for a in channel_axes]
        if self.fused and not can_fuse:
            if ndims not in (4, 5):
                raise ValueError("Batch normalization layers with `fused=True` only support 4D "
                                 "or 5D input tensors. Received tensor with shape: %s"
                                 % (input_shape,))
            raise ValueError("Unsupported axis. The batch normalization layer with `fused=True` "
                             "only supports axis=1 or axis=-1 for 4D and 5D input tensors, "
                             "Received: axis=%s" % (tuple(self.axis),))
        self._unbiased_moving_var = can_fuse if self.fused is None else bool(self.fused)
        if self.fused is None:
            self.fused = can_fuse
        axis_to_dim = {x: input_shape[x] for x in self.axis}
        for x, d in axis_to_dim.items():
            if d is None:
                raise ValueError("Input has undefined `axis` dimension. Received input with "
                                 "shape %s in axis %d" % (input_shape, x))
        self.input_spec = InputSpec(ndim=ndims, axes=axis_to_dim)
        if len(axis_to_dim) == 1:
            param_shape = (list(axis_to_dim.values())[0],)
        else:
            param_shape = tuple(axis_to_dim[i] if i in axis_to_dim else 1 for i in range(ndims))
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
        self.built = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _broadcast(self, v, ndims):
        # (C,) -> shape of rank ndims with C on the (single) axis, 1 elsewhere
        if v is None or len(self.axis) != 1 or self.axis[0] == ndims - 1:
            return v
        shape = [1] * ndims
        shape[self.axis[0]] = self._param_shape[0]
        return _core.reshape(v, shape)

    def call(self, inputs, training=None):
        if training is None:
            training = False  # tf-keras: the learning phase, 0 outside fit
        if not self.trainable:
            training = False  # v2 behaviour: a frozen layer always uses moving statistics
        training = bool(training)
        in_dtype = inputs.dtype.name
        x = inputs
        if in_dtype != "float32" and in_dtype in ("float16", "bfloat16"):
            x = _core.cast(x, "float32")  # all batch-norm math in float32
        ndims = x.ndim
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        gamma = self._broadcast(self.gamma, ndims)
        beta = self._broadcast(self.beta, ndims)
        if training:
            mean, variance = _nn.moments(x, reduction_axes, keepdims=False)
            if len(self.axis) != 1:
                mean = _core.reshape(mean, list(self._param_shape))
                variance = _core.reshape(variance, list(self._param_shape))
            if not in_symbolic_call():
                self._update_moving(x, mean, variance, reduction_axes)
            use_mean, use_var = self._broadcast(mean, ndims), self._broadcast(variance, ndims)
        else:
            use_mean = self._broadcast(self.moving_mean, ndims)
            use_var = self._broadcast(self.moving_variance, ndims)
        out = _nn.batch_normalization(x, use_mean, use_var, beta, gamma, self.epsilon)
        if out.dtype.name != in_dtype and in_dtype in ("float16", "bfloat16"):
            out = _core.cast(out, in_dtype)
        return out

    def _update_moving(self, x, mean, variance, reduction_axes):
        decay = 1.0 - self.momentum
        mean = _core.stop_gradient(mean)
        variance = _core.stop_gradient(variance)
        if self._unbiased_moving_var:
            n = 1
            for a in reduction_axes:
                n *= x.shape[a]
            variance = variance * (float(n) / max(n - 1, 1))
        for var, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
            var.assign_sub((var.value() - _core.cast(value, var.dtype)) * decay)

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
        if self.synchronized:
            config["synchronized"] = True
        return config
