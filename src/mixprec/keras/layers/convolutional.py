"""Convolution layers: Conv1D, Conv2D (groups, dilation, channels_first/last) and
DepthwiseConv2D, with tf-keras' arguments, configs, shape arithmetic and errors. The
arithmetic is mixprec.nn's (oneDNN/cuDNN in the core); this file never convolves itself.
"""

from mixprec import _core
from mixprec._shape import TensorShape
from mixprec import nn as _nn
from mixprec.keras import activations, constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.layers.core import weight_configs
from mixprec.keras.layers.reshaping import zero_pad
from mixprec.keras.utils import conv_utils

__all__ = ["Conv", "Conv1D", "Conv2D", "DepthwiseConv2D", "Convolution1D", "Convolution2D"]


class Conv(Layer):
    """The N-d convolution layer (tf-keras' ``Conv`` base): ``activation(conv(x, kernel)
    + bias)``; kernel (*kernel_size, in_channels // groups, filters)."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 conv_op=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.rank = rank
        if isinstance(filters, float):
            filters = int(filters)
        if filters is not None and filters <= 0:
            raise ValueError("Invalid value for argument `filters`. Expected a strictly positive "
                             "value. Received filters=%s." % (filters,))
        self.filters = filters
        self.groups = groups or 1
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.dilation_rate = conv_utils.normalize_tuple(dilation_rate, rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=self.rank + 2)
        self.kernel = None
        self.bias = None
        self._validate_init()

    def _validate_init(self):
        if self.filters is not None and self.filters % self.groups != 0:
            raise ValueError("The number of filters must be evenly divisible by the number of "
                             "groups. Received: groups={}, filters={}".format(self.groups,
                                                                              self.filters))
        if not all(self.kernel_size):
            raise ValueError("The argument `kernel_size` cannot contain 0(s). Received: %s"
                             % (self.kernel_size,))
        if not all(self.strides):
            raise ValueError("The argument `strides` cannot contains 0(s). Received: %s"
                             % (self.strides,))
        if self.padding == "causal" and not isinstance(self, Conv1D):
            raise ValueError("Causal padding is only supported for `Conv1D` and "
                             "`SeparableConv1D`.")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > "
                             "1`. Received: strides=%s and dilation_rate=%s"
                             % (self.strides, self.dilation_rate))

    # ---------------------------------------------------------------- shapes

    def _channel_axis(self):
        return -1 - self.rank if self.data_format == "channels_first" else -1

    def _input_channel(self, input_shape):
        axis = self._channel_axis()
        if input_shape[axis] is None:
            raise ValueError("The channel dimension of the inputs should be defined. The "
                             "input_shape received is %s, where axis %d (0-based) is the channel "
                             "dimension, which found to be `None`."
                             % (tuple(input_shape), axis))
        return int(input_shape[axis])

    def _spatial_output_shape(self, spatial):
        return [conv_utils.conv_output_length(n, self.kernel_size[i], self.padding,
                                              self.strides[i], self.dilation_rate[i])
                for i, n in enumerate(spatial)]

    def compute_output_shape(self, input_shape):
        shape = [None if d is None else int(d) for d in input_shape]
        batch_rank = len(shape) - self.rank - 1
        if self.data_format == "channels_last":
            out = shape[:batch_rank] + self._spatial_output_shape(shape[batch_rank:-1]) + \
                [self._out_channels(shape)]
        else:
            out = shape[:batch_rank] + [self._out_channels(shape)] + \
                self._spatial_output_shape(shape[batch_rank + 1:])
        if any(d is not None and d <= 0 for d in out):
            raise ValueError(
                "One of the dimensions in the output is <= 0 due to downsampling in %s. "
                "Consider increasing the input size. Received input shape %s which would "
                "produce output shape with a zero or negative value in a dimension."
                % (self.name, list(input_shape)))
        return TensorShape(out)

    def _out_channels(self, shape):
        return self.filters

    # ---------------------------------------------------------------- weights

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        channels = self._input_channel(input_shape)
        if channels % self.groups != 0:
            raise ValueError("The number of input channels must be evenly divisible by the "
                             "number of groups. Received groups={}, but the input has {} channels "
                             "(full input shape is {}).".format(self.groups, channels,
                                                                 input_shape))
        self.compute_output_shape(input_shape)  # validates the output dimensions
        kernel_shape = self.kernel_size + (channels // self.groups, self.filters)
        self.kernel = self.add_weight("kernel", kernel_shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.input_spec = InputSpec(min_ndim=self.rank + 2,
                                    axes={self._channel_axis(): channels})
        self.built = True

    # ---------------------------------------------------------------- call

    def convolution_op(self, inputs, kernel):
        raise NotImplementedError

    def call(self, inputs):
        shape = list(inputs.shape)
        inner = self.rank + 2
        if len(shape) > inner:  # extra leading batch dimensions, as tf-keras accepts
            inputs = _core.reshape(inputs, [-1] + shape[len(shape) - inner + 1:])
        outputs = self._fused_conv2d(inputs)
        activated = outputs is not None
        if outputs is None:
            outputs = self.convolution_op(inputs, self.kernel)
        if self.use_bias and not activated:
            if self.rank == 1 and self.data_format == "channels_first":
                outputs = outputs + _core.reshape(self.bias, [1, self.filters, 1])
            else:
                outputs = _nn.bias_add(outputs, self.bias, data_format=conv_utils.tf_data_format(
                    self.data_format, self.rank + 2))
        if len(shape) > inner:
            outputs = _core.reshape(outputs, shape[:len(shape) - inner + 1] +
                                    list(outputs.shape[1:]))
        return outputs if activated else self.activation(outputs)

    def _fused_conv2d(self, inputs):
        """Conv2D + bias (+ ReLU) as one op (oneDNN post-ops), or None where the layer's
        chain does not fit it (then the ops run one by one, with the same values up to the
        16-bit rounding of the intermediate sums)."""
        relu = self.activation is activations.relu
        if (self.rank != 2 or not self.use_bias or inputs.ndim != 4 or
                not (relu or self.activation is activations.linear) or
                type(self).convolution_op is not Conv2D.convolution_op):
            return None
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        return _nn._conv2d_bias_act(inputs, self.kernel, self.bias, list(self.strides),
                                    self.padding.upper(), fmt, list(self.dilation_rate), relu)

    # ---------------------------------------------------------------- config

    def get_config(self):
        config = super().get_config()
        config.update(
            filters=self.filters, kernel_size=self.kernel_size, strides=self.strides,
            padding=self.padding, data_format=self.data_format,
            dilation_rate=self.dilation_rate, groups=self.groups,
            activation=activations.serialize(self.activation), use_bias=self.use_bias,
            kernel_initializer=initializers.serialize(self.kernel_initializer),
            bias_initializer=initializers.serialize(self.bias_initializer))
        config.update(weight_configs(self))
        return config


class Conv1D(Conv):
    """1-D convolution over (batch, steps, channels); ``padding='causal'`` pads on the left
    only."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)

    def convolution_op(self, inputs, kernel):
        padding = self.padding
        if padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            axis = 1 if self.data_format == "channels_last" else 2
            pads = [(0, 0)] * 3
            pads[axis] = (left, 0)
            inputs = zero_pad(inputs, pads)
            padding = "valid"
        return _nn.conv1d(inputs, kernel, stride=self.strides[0], padding=padding.upper(),
                          data_format="NWC" if self.data_format == "channels_last" else "NCW",
                          dilations=self.dilation_rate[0])


class Conv2D(Conv):
    """2-D convolution over (batch, rows, cols, channels) or channels_first."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(2, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)

    def convolution_op(self, inputs, kernel):
        return _nn.conv2d(inputs, kernel, strides=list(self.strides),
                          padding=self.padding.upper(),
                          data_format="NHWC" if self.data_format == "channels_last" else "NCHW",
                          dilations=list(self.dilation_rate))


class DepthwiseConv2D(Conv2D):
    """Each input channel convolved with its own ``depth_multiplier`` filters; kernel
    (kh, kw, in_channels, depth_multiplier), output channels in_channels * multiplier."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters=None, kernel_size=kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_kernel = None

    def _out_channels(self, shape):
        c = shape[1] if self.data_format == "channels_first" else shape[-1]
        return None if c is None else c * self.depth_multiplier

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 4:
            raise ValueError("Inputs to `DepthwiseConv2D` should have rank 4. Received "
                             "input_shape=%s." % (input_shape,))
        axis = 1 if self.data_format == "channels_first" else 3
        if input_shape[axis] is None:
            raise ValueError("The channel dimension of the inputs to `DepthwiseConv2D` should "
                             "be defined. The input_shape received is %s, where axis %d (0-based) "
                             "is the channel dimension, which found to be `None`."
                             % (input_shape, axis))
        channels = int(input_shape[axis])
        self.compute_output_shape(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (channels * self.depth_multiplier,),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.input_spec = InputSpec(ndim=4, axes={axis: channels})
        self.built = True

    def call(self, inputs):
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        strides = [1] + list(self.strides) + [1] if fmt == "NHWC" else \
            [1, 1] + list(self.strides)
        outputs = _nn.depthwise_conv2d(inputs, self.depthwise_kernel, strides=strides,
                                       padding=self.padding.upper(), data_format=fmt,
                                       dilations=list(self.dilation_rate))
        if self.use_bias:
            outputs = _nn.bias_add(outputs, self.bias, data_format=fmt)
        return self.activation(outputs)

    def get_config(self):
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key)
        config["depth_multiplier"] = self.depth_multiplier
        config["depthwise_initializer"] = initializers.serialize(self.depthwise_initializer)
        config["depthwise_regularizer"] = regularizers.serialize(self.depthwise_regularizer)
        config["depthwise_constraint"] = constraints.serialize(self.depthwise_constraint)
        return config


Convolution1D = Conv1D
Convolution2D = Conv2D
