"""``keras.layers.EinsumDense``: a dense layer written as an einsum equation between the
input and a kernel (plus a bias over chosen output axes), with tf-keras 2.21's equation
analysis (plain, left-elided '...' and right-elided forms), weight shapes, configs and
errors. The contraction is mixprec.einsum (core transposes and matmuls)."""

import re

from mixprec._einsum import einsum
from mixprec._shape import TensorShape
from mixprec.keras import activations, constraints, initializers, regularizers
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.keras_tensor import KerasTensor
from mixprec.keras.layers.core import weight_configs

__all__ = ["EinsumDense"]


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``; ``output_shape`` is the
    output's shape without the batch axis (None for a dimension taken from the input)."""

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.equation = equation
        if isinstance(output_shape, int):
            self.partial_output_shape = [output_shape]
        else:
            self.partial_output_shape = list(output_shape)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = None
        self.bias = None
        self.full_output_shape = None

    def build(self, input_shape):
        input_shape = TensorShape(list(input_shape))
        kernel_shape, bias_shape, full_output_shape = _analyze_einsum_string(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        self.full_output_shape = TensorShape(full_output_shape)
        self.kernel = self.add_weight("kernel", kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True)
        if bias_shape is not None:
            self.bias = self.add_weight("bias", bias_shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.built = True

    def compute_output_shape(self, _):
        return self.full_output_shape

    def _symbolic_outputs(self, args, kwargs):
        """As compute_output_shape, with the dimensions a None of ``output_shape`` shares
        with the input filled in from it (tf-keras' functional API runs the einsum on
        symbolic tensors, which knows them)."""
        out = super()._symbolic_outputs(args, kwargs)
        x = args[0]
        if not isinstance(out, KerasTensor) or not isinstance(x, KerasTensor):
            return out
        shape = list(out.shape)
        for i, axis in enumerate(_shared_input_axes(self.equation, len(x.shape))):
            if shape[i] is None and axis is not None:
                shape[i] = x.shape[axis]
        return KerasTensor(shape, out.dtype, name=self.name)

    def call(self, inputs):
        ret = einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            ret = ret + self.bias
        if self.activation is not None:
            ret = self.activation(ret)
        return ret

    def get_config(self):
        config = super().get_config()
        config.update(output_shape=self.partial_output_shape, equation=self.equation,
                      activation=activations.serialize(self.activation),
                      bias_axes=self.bias_axes,
                      kernel_initializer=initializers.serialize(self.kernel_initializer),
                      bias_initializer=initializers.serialize(self.bias_initializer))
        config.update(weight_configs(self))
        return config


def _shared_input_axes(equation, rank):
    """For each output axis, the input axis it repeats (None for a kernel axis)."""
    lhs, out = equation.replace(" ", "").split("->")
    x_spec = lhs.split(",")[0]
    if "..." in x_spec:
        before, after = x_spec.split("...")
        n_elided = rank - len(before) - len(after)
        x_axes = list(before) + ["."] * n_elided + list(after)
        o_before, o_after = out.split("...")
        out_axes = list(o_before) + ["."] * n_elided + list(o_after)
    else:
        x_axes, out_axes = list(x_spec), list(out)
    result, dots_seen = [], 0
    x_dots = [i for i, c in enumerate(x_axes) if c == "."]
    for c in out_axes:
        if c == ".":
            result.append(x_dots[dots_seen])
            dots_seen += 1
        else:
            result.append(x_axes.index(c) if c in x_axes else None)
    return result


def _analyze_einsum_string(equation, bias_axes, input_shape, output_shape):
    """(kernel shape, bias shape or None, full output shape) of an equation."""
    dot_replaced = re.sub(r"\.\.\.", "0", equation)
    split = re.match("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", dot_replaced)
    if split:
        return _analyze_split_string(split, bias_axes, input_shape, output_shape)
    split = re.match("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)", dot_replaced)
    if split:
        return _analyze_split_string(split, bias_axes, input_shape, output_shape,
                                     left_elided=True)
    split = re.match("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0", dot_replaced)
    if split:
        return _analyze_split_string(split, bias_axes, input_shape, output_shape)
    raise ValueError("Invalid einsum equation '%s'. Equations must be in the form "
                     "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]...." % (equation,))


def _analyze_split_string(split, bias_axes, input_shape, output_shape, left_elided=False):
    input_spec, weight_spec, output_spec = split.group(1), split.group(2), split.group(3)
    input_shape = list(input_shape.as_list())
    elided = len(input_shape) - len(input_spec)
    output_shape = [output_shape] if isinstance(output_shape, int) else list(output_shape)
    output_shape.insert(0, input_shape[0])
    if elided > 0 and left_elided:
        for i in range(1, elided):
            output_shape.insert(1, input_shape[i])
    elif elided > 0 and not left_elided:
        for i in range(len(input_shape) - elided, len(input_shape)):
            output_shape.append(input_shape[i])
    if left_elided:
        input_dim_map = {dim: (i + elided) - len(input_shape)
                         for i, dim in enumerate(input_spec)}
        output_dim_map = {dim: (i + elided) for i, dim in enumerate(output_spec)}
    else:
        input_dim_map = {dim: i for i, dim in enumerate(input_spec)}
        output_dim_map = {dim: i for i, dim in enumerate(output_spec)}
    for dim in input_spec:
        input_shape_at_dim = input_shape[input_dim_map[dim]]
        if dim in output_dim_map:
            output_shape_at_dim = output_shape[output_dim_map[dim]]
            if output_shape_at_dim is not None and output_shape_at_dim != input_shape_at_dim:
                raise ValueError(
                    "Input shape and output shape do not match at shared dimension '%s'. Input "
                    "shape is %s, and output shape is %s."
                    % (dim, input_shape_at_dim, output_shape[output_dim_map[dim]]))
    for dim in output_spec:
        if dim not in input_spec and dim not in weight_spec:
            raise ValueError("Dimension '%s' was specified in the output '%s' but has no "
                             "corresponding dim in the input spec '%s' or weight spec '%s'"
                             % (dim, output_spec, input_spec, output_spec))
    weight_shape = []
    for dim in weight_spec:
        if dim in input_dim_map:
            weight_shape.append(input_shape[input_dim_map[dim]])
        elif dim in output_dim_map:
            weight_shape.append(output_shape[output_dim_map[dim]])
        else:
            raise ValueError("Weight dimension '%s' did not have a match in either the input "
                             "spec '%s' or the output spec '%s'. For this layer, the weight must "
                             "be fully specified." % (dim, input_spec, output_spec))
    if bias_axes is not None:
        idx_map = {char: output_shape[output_dim_map[char]] for char in output_spec}
        for char in bias_axes:
            if char not in output_spec:
                raise ValueError("Bias dimension '%s' was requested, but is not part of the "
                                 "output spec '%s'" % (char, output_spec))
        first_bias_location = min(output_spec.find(char) for char in bias_axes)
        bias_output_spec = output_spec[first_bias_location:]
        bias_shape = [idx_map[char] if char in bias_axes else 1 for char in bias_output_spec]
        if not left_elided:
            for _ in range(elided):
                bias_shape.append(1)
    else:
        bias_shape = None
    return weight_shape, bias_shape, output_shape

