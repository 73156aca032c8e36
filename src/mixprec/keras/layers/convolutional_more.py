"""Transposed and separable convolution layers: Conv1DTranspose, Conv2DTranspose (the
core's Conv2DBackpropInput op, whose backward is a convolution), SeparableConv1D,
SeparableConv2D (depthwise then 1x1) and DepthwiseConv1D, with tf-keras 2.21's arguments,
weights, configs and shape arithmetic. 1-D layers run the 2-D ops with height 1. Nothing is
convolved in this file."""

from mixprec import _core
from mixprec._shape import TensorShape
from mixprec import nn as _nn
from mixprec.keras import constraints, initializers, regularizers
from mixprec.keras.engine.input_spec import InputSpec
from mixprec.keras.layers.convolutional import Conv
from mixprec.keras.layers.reshaping import zero_pad
from mixprec.keras.utils import conv_utils

__all__ = ["Conv1DTranspose", "Conv2DTranspose", "SeparableConv1D", "SeparableConv2D",
           "DepthwiseConv1D", "Convolution1DTranspose", "Convolution2DTranspose",
           "SeparableConvolution1D", "SeparableConvolution2D", "deconv_output_length",
           "Conv3DTranspose", "Convolution3DTranspose"]


def deconv_output_length(input_length, filter_size, padding, output_padding=None, stride=0,
                         dilation=1):
    """tf-keras' transposed-convolution output length."""
    if input_length is None:
        return None
    filter_size = filter_size + (filter_size - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return input_length * stride + max(filter_size - stride, 0)
        if padding == "full":
            return input_length * stride - (stride + filter_size - 2)
        return input_length * stride
    pad = {"same": filter_size // 2, "valid": 0, "full": filter_size - 1}[padding]
    return (input_length - 1) * stride + filter_size - 2 * pad + output_padding


def _conv_kwargs(kwargs, names):
    return {k: kwargs.pop(k) for k in names if k in kwargs}


class _ConvTranspose(Conv):
    """The transpose of a convolution (the gradient of Conv with respect to its input):
    kernel (*kernel_size, filters, in_channels)."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1, **kwargs):
        super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, **kwargs)
        self.output_padding = output_padding
        if output_padding is not None:
            self.output_padding = conv_utils.normalize_tuple(output_padding, rank,
                                                             "output_padding", allow_zero=True)
            for stride, out_pad in zip(self.strides, self.output_padding):
                if out_pad >= stride:
                    raise ValueError("Strides must be greater than output padding. Received "
                                     "strides=%s, output_padding=%s."
                                     % (self.strides, self.output_padding))

    def _spatial_output_shape(self, spatial):
        pads = self.output_padding or (None,) * self.rank
        return [deconv_output_length(n, self.kernel_size[i], self.padding, pads[i],
                                     self.strides[i], self.dilation_rate[i])
                for i, n in enumerate(spatial)]

    def compute_output_shape(self, input_shape):
        shape = [None if d is None else int(d) for d in input_shape]
        if len(shape) != self.rank + 2:
            raise ValueError("Inputs should have rank %d. Received input_shape=%s."
                             % (self.rank + 2, tuple(input_shape)))
        if self.data_format == "channels_last":
            out = shape[:1] + self._spatial_output_shape(shape[1:-1]) + [self.filters]
        else:
            out = shape[:2] + self._spatial_output_shape(shape[2:])
            out[1] = self.filters
        return TensorShape(out)

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != self.rank + 2:
            raise ValueError("Inputs should have rank %d. Received input_shape=%s."
                             % (self.rank + 2, input_shape))
        axis = 1 if self.data_format == "channels_first" else -1
        if input_shape[axis] is None:
            raise ValueError("The channel dimension of the inputs to `%s` should be defined. "
                             "The input_shape received is %s, where axis %d (0-based) is the "
                             "channel dimension, which found to be `None`."
                             % (type(self).__name__, input_shape, axis))
        channels = int(input_shape[axis])
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})
        self.kernel = self.add_weight("kernel", self.kernel_size + (self.filters, channels),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.built = True

    def _transpose2d(self, x, kernel, strides, dilations, nchw):
        """x (N, H, W, C) or (N, C, H, W) -> the transposed convolution's output."""
        shape = list(x.shape)
        spatial = shape[2:] if nchw else shape[1:3]
        pads = self.output_padding or (None,) * self.rank
        if self.rank == 1:
            pads = (None,) + tuple(pads)
            ks = (1,) + self.kernel_size
        else:
            ks = self.kernel_size
        out = [deconv_output_length(spatial[i], ks[i], self.padding, pads[i], strides[i],
                                    dilations[i]) for i in range(2)]
        sizes = [shape[0], self.filters] + out if nchw else [shape[0]] + out + [self.filters]
        return _nn.conv2d_backprop_input(sizes, kernel, x, strides, self.padding.upper(),
                                         "NCHW" if nchw else "NHWC", dilations)

    def call(self, inputs):
        nchw = self.data_format == "channels_first"
        if self.rank == 3:
            from mixprec.keras.layers.conv3d import conv3d_transpose_as_2d

            shape = list(inputs.shape)
            spatial = shape[2:] if nchw else shape[1:4]
            pads = self.output_padding or (None,) * 3
            out = [deconv_output_length(spatial[i], self.kernel_size[i], self.padding, pads[i],
                                        self.strides[i], self.dilation_rate[i])
                   for i in range(3)]
            y = conv3d_transpose_as_2d(inputs, self.kernel, out, self.strides, self.padding,
                                       self.dilation_rate, nchw)
        elif self.rank == 1:
            x = _core.reshape(inputs, [inputs.shape[0], inputs.shape[1], 1, inputs.shape[2]]
                              if nchw else [inputs.shape[0], 1, inputs.shape[1],
                                            inputs.shape[2]])
            k = _core.reshape(self.kernel, [1] + list(self.kernel.shape))
            y = self._transpose2d(x, k, [1, self.strides[0]], [1, self.dilation_rate[0]],
                                  nchw)
            s = list(y.shape)
            y = _core.reshape(y, [s[0], s[1], s[3]] if nchw else [s[0], s[2], s[3]])
        else:
            if self.dilation_rate[0] != self.dilation_rate[1]:  # tf-keras' backend check
                raise ValueError("Expected the 2 dimensions of the `dilation_rate` argument to "
                                 "be equal to each other. Received: dilation_rate=%s"
                                 % (self.dilation_rate,))
            y = self._transpose2d(inputs, self.kernel, list(self.strides),
                                  list(self.dilation_rate), nchw)
        if self.use_bias:
            if self.rank == 1 and nchw:
                y = y + _core.reshape(self.bias, [1, self.filters, 1])
            else:
                y = _nn.bias_add(y, self.bias, data_format=conv_utils.tf_data_format(
                    self.data_format, self.rank + 2))
        return self.activation(y)

    def get_config(self):
        config = super().get_config()
        config["output_padding"] = self.output_padding
        return config


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution ("deconvolution"): kernel (kh, kw, filters, in_channels)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(2, filters, kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution: kernel (k, filters, in_channels)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, filters, kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)


class _SeparableConv(Conv):
    """A depthwise convolution (``depth_multiplier`` filters per input channel) followed by
    a 1x1 convolution to ``filters`` channels."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, depth_multiplier=1, activation=None,
                 use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.pointwise_constraint = constraints.get(pointwise_constraint)
        self.depthwise_kernel = None
        self.pointwise_kernel = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        axis = self._channel_axis()
        if input_shape[axis] is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found "
                             "`None`.")
        channels = int(input_shape[axis])
        self.compute_output_shape(input_shape)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint, trainable=True)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1,) * self.rank + (self.depth_multiplier * channels,
                                                    self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.built = True

    def _separable2d(self, x, dw, pw, strides, dilations, padding, fmt):
        y = _nn.depthwise_conv2d(x, dw, [1] + strides + [1] if fmt == "NHWC" else
                                 [1, 1] + strides, padding, data_format=fmt,
                                 dilations=dilations)
        return _nn.conv2d(y, pw, [1, 1], "VALID", data_format=fmt)

    def call(self, inputs):
        fmt = "NCHW" if self.data_format == "channels_first" else "NHWC"
        if self.rank == 2:
            y = self._separable2d(inputs, self.depthwise_kernel, self.pointwise_kernel,
                                  list(self.strides), list(self.dilation_rate),
                                  self.padding.upper(), fmt)
        else:
            padding = self.padding
            x = inputs
            nchw = fmt == "NCHW"
            if padding == "causal":
                left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
                pads = [(0, 0)] * 3
                pads[2 if nchw else 1] = (left, 0)
                x = zero_pad(x, pads)
                padding = "valid"
            x = _core.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]] if nchw else
                              [x.shape[0], 1, x.shape[1], x.shape[2]])
            dw = _core.reshape(self.depthwise_kernel, [1] + list(self.depthwise_kernel.shape))
            pw = _core.reshape(self.pointwise_kernel, [1] + list(self.pointwise_kernel.shape))
            y = self._separable2d(x, dw, pw, [1, self.strides[0]], [1, self.dilation_rate[0]],
                                  padding.upper(), fmt)
            s = list(y.shape)
            y = _core.reshape(y, [s[0], s[1], s[3]] if nchw else [s[0], s[2], s[3]])
        if self.use_bias:
            if self.rank == 1 and fmt == "NCHW":
                y = y + _core.reshape(self.bias, [1, self.filters, 1])
            else:
                y = _nn.bias_add(y, self.bias, data_format=conv_utils.tf_data_format(
                    self.data_format, self.rank + 2))
        return self.activation(y)

    def get_config(self):
        config = super().get_config()
        config.update(
            depth_multiplier=self.depth_multiplier,
            depthwise_initializer=initializers.serialize(self.depthwise_initializer),
            pointwise_initializer=initializers.serialize(self.pointwise_initializer),
            depthwise_regularizer=regularizers.serialize(self.depthwise_regularizer),
            pointwise_regularizer=regularizers.serialize(self.pointwise_regularizer),
            depthwise_constraint=constraints.serialize(self.depthwise_constraint),
            pointwise_constraint=constraints.serialize(self.pointwise_constraint))
        return config


class SeparableConv2D(_SeparableConv):
    """Depthwise (kh, kw, C, M) then pointwise (1, 1, C * M, filters) convolution."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, depthwise_initializer,
                         pointwise_initializer, bias_initializer, depthwise_regularizer,
                         pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs)


class SeparableConv1D(_SeparableConv):
    """Depthwise (k, C, M) then pointwise (1, C * M, filters) convolution; 'causal' pads
    on the left."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, depthwise_initializer,
                         pointwise_initializer, bias_initializer, depthwise_regularizer,
                         pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs)

    def _validate_init(self):
        saved, self.padding = self.padding, "valid" if self.padding == "causal" else self.padding
        try:
            super()._validate_init()
        finally:
            self.padding = saved


class DepthwiseConv1D(Conv):
    """Each input channel convolved with its own ``depth_multiplier`` filters over steps;
    kernel (k, in_channels, depth_multiplier)."""

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, None, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.depthwise_kernel = None

    def _out_channels(self, shape):
        c = shape[1] if self.data_format == "channels_first" else shape[-1]
        return None if c is None else c * self.depth_multiplier

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError("Inputs to `DepthwiseConv1D` should have rank 3. Received "
                             "input_shape=%s." % (input_shape,))
        axis = 1 if self.data_format == "channels_first" else 2
        if input_shape[axis] is None:
            raise ValueError("The channel dimension of the inputs to `DepthwiseConv1D` should "
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
        self.input_spec = InputSpec(ndim=3, axes={axis: channels})
        self.built = True

    def call(self, inputs):
        nchw = self.data_format == "channels_first"
        fmt = "NCHW" if nchw else "NHWC"
        x = _core.reshape(inputs, [inputs.shape[0], inputs.shape[1], 1, inputs.shape[2]]
                          if nchw else [inputs.shape[0], 1, inputs.shape[1], inputs.shape[2]])
        k = _core.reshape(self.depthwise_kernel, [1] + list(self.depthwise_kernel.shape))
        strides = [1, 1, 1, self.strides[0]] if nchw else [1, 1, self.strides[0], 1]
        y = _nn.depthwise_conv2d(x, k, strides, self.padding.upper(), data_format=fmt,
                                 dilations=[1, self.dilation_rate[0]])
        s = list(y.shape)
        y = _core.reshape(y, [s[0], s[1], s[3]] if nchw else [s[0], s[2], s[3]])
        if self.use_bias:
            if nchw:
                y = y + _core.reshape(self.bias, [1, -1, 1])
            else:
                y = _nn.bias_add(y, self.bias)
        return self.activation(y)

    def get_config(self):
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key)
        config["depth_multiplier"] = self.depth_multiplier
        config["depthwise_initializer"] = initializers.serialize(self.depthwise_initializer)
        config["depthwise_regularizer"] = regularizers.serialize(self.depthwise_regularizer)
        config["depthwise_constraint"] = constraints.serialize(self.depthwise_constraint)
        return config


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution: kernel (kd, kh, kw, filters, in_channels); the adjoint
    of Conv3D's folded 2-D convolution (keras/layers/conv3d.py)."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1, 1),
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(3, filters, kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)


    def get_config(self):
        config = super().get_config()
        config.pop("dilation_rate")  # tf-keras 2.21 leaves it out of Conv3DTranspose's config
        return config


Convolution1DTranspose = Conv1DTranspose
Convolution3DTranspose = Conv3DTranspose
Convolution2DTranspose = Conv2DTranspose
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
