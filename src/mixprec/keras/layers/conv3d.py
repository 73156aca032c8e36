"""``keras.layers.Conv3D`` (alias Convolution3D) as tf-keras 2.21, computed as ONE 2-D
convolution: the kernel-depth slices of the input (depth strides and dilation taken by
slicing, 'same' depth padding added as zeros) are folded into the channels and the kernel's
depth into its input channels, so each output is one float32-accumulated sum (16-bit
rounded once) and the backward is the 2-D convolution's. No element is touched here."""

from mixprec import _core
from mixprec import nn as _nn
from mixprec.keras.layers.convolutional import Conv
from mixprec.keras.layers.reshaping import zero_pad

__all__ = ["Conv3D", "Convolution3D", "conv3d_as_2d"]


def conv3d_as_2d(x, kernel, strides, padding, dilations, channels_first):
    """x (N, D, H, W, C) (or (N, C, D, H, W)), kernel (kd, kh, kw, C / groups, F) ->
    the 3-D convolution, 'valid' or 'same' padding."""
    if channels_first:
        x = _core.transpose(x, [0, 2, 3, 4, 1])
    n, d, h, w, c = x.shape
    kd, kh, kw, cg, f = kernel.shape
    sd, sh, sw = strides
    dd, dh, dw = dilations
    eff = (kd - 1) * dd + 1
    if padding == "same":
        out_d = -(-d // sd)
        total = max((out_d - 1) * sd + eff - d, 0)
        if total:
            x = zero_pad(x, [(0, 0), (total // 2, total - total // 2), (0, 0), (0, 0), (0, 0)])
    else:
        out_d = (d - eff + sd) // sd
    groups = c // cg
    parts = []
    for i in range(kd):  # one strided slice per kernel depth (kd of them, not per element)
        s = x[:, i * dd:i * dd + (out_d - 1) * sd + 1:sd]
        parts.append(_core.reshape(s, [n * out_d, h, w, 1, groups, cg]))
    stacked = parts[0] if kd == 1 else _core.concat(parts, 3)  # (N', H, W, kd, G, Cg)
    folded = _core.reshape(_core.transpose(stacked, [0, 1, 2, 4, 3, 5]),
                           [n * out_d, h, w, groups * kd * cg])
    k2 = _core.reshape(_core.transpose(kernel, [1, 2, 0, 3, 4]), [kh, kw, kd * cg, f])
    y = _nn.conv2d(folded, k2, [sh, sw], padding.upper(), data_format="NHWC",
                   dilations=[dh, dw])
    y = _core.reshape(y, [n, out_d] + list(y.shape[1:]))
    if channels_first:
        y = _core.transpose(y, [0, 4, 1, 2, 3])
    return y


class Conv3D(Conv):
    """3-D convolution over (batch, depth, rows, cols, channels) or channels_first; kernel
    (kd, kh, kw, in_channels // groups, filters)."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(3, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)

    def convolution_op(self, inputs, kernel):
        return conv3d_as_2d(inputs, kernel, self.strides, self.padding, self.dilation_rate,
                            self.data_format == "channels_first")


Convolution3D = Conv3D


def conv3d_transpose_as_2d(u, kernel, out_spatial, strides, padding, dilations,
                           channels_first):
    """The adjoint of ``conv3d_as_2d`` with respect to its input: u (N, Di, Hi, Wi, F)
    (or NCDHW), kernel (kd, kh, kw, C, F) -> (N, Do, Ho, Wo, C) for ``out_spatial`` =
    (Do, Ho, Wo). One Conv2DBackpropInput over the folded depth slices, whose kd slices
    are then interleaved at the depth stride and summed at their offsets."""
    if channels_first:
        u = _core.transpose(u, [0, 2, 3, 4, 1])
    n, di, hi, wi, f = u.shape
    kd, kh, kw, c, _ = kernel.shape
    do, ho, wo = out_spatial
    sd, sh, sw = strides
    dd, dh, dw = dilations
    eff = (kd - 1) * dd + 1
    if padding == "same":
        total = max((di - 1) * sd + eff - do, 0)
        before = total // 2
    else:
        before = 0
    k2 = _core.reshape(_core.transpose(kernel, [1, 2, 0, 3, 4]), [kh, kw, kd * c, f])
    g = _nn.conv2d_backprop_input([n * di, ho, wo, kd * c], k2,
                                  _core.reshape(u, [n * di, hi, wi, f]), [sh, sw],
                                  padding.upper(), data_format="NHWC", dilations=[dh, dw])
    g = _core.reshape(g, [n, di, ho, wo, kd, c])
    span = (di - 1) * sd + 1  # depth rows one slice covers
    length = max(before + do, (kd - 1) * dd + span)  # the padded depth, long enough
    out = None
    for i in range(kd):  # one depth slice per kernel offset, as the forward
        gi = g[:, :, :, :, i]  # (N, Di, Ho, Wo, C)
        if sd > 1:  # rows j*sd, zeros between them
            gi = _core.reshape(gi, [n, di, 1, ho, wo, c])
            gi = _core.concat([gi, _core.fill([n, di, sd - 1, ho, wo, c], 0, gi.dtype)], 2)
            gi = _core.reshape(gi, [n, di * sd, ho, wo, c])[:, :span]
        gi = zero_pad(gi, [(0, 0), (i * dd, length - i * dd - span), (0, 0), (0, 0), (0, 0)])
        out = gi if out is None else out + gi
    out = out[:, before:before + do]
    if channels_first:
        out = _core.transpose(out, [0, 4, 1, 2, 3])
    return out
