"""Argument normalisation and output-length arithmetic shared by the convolution, pooling
and padding layers, with tf-keras' rules and messages. Integers only; no tensors."""

from mixprec.keras import backend

__all__ = ["normalize_tuple", "normalize_padding", "normalize_data_format",
           "conv_output_length", "tf_data_format"]


def normalize_tuple(value, n, name, allow_zero=False):
    """An int or an iterable of ``n`` ints as a tuple of ``n`` ints (> 0, or >= 0)."""
    error_msg = "The `%s` argument must be a tuple of %d integers. Received: %s" % (
        name, n, value)
    if isinstance(value, int) and not isinstance(value, bool):
        value_tuple = (value,) * n
    else:
        try:
            value_tuple = tuple(value)
        except TypeError:
            raise ValueError(error_msg) from None
        if len(value_tuple) != n:
            raise ValueError(error_msg)
        for v in value_tuple:
            try:
                int(v)
            except (ValueError, TypeError):
                raise ValueError(error_msg + "including element %s of type %s"
                                 % (v, type(v))) from None
        value_tuple = tuple(int(v) for v in value_tuple)
    if allow_zero:
        bad = {v for v in value_tuple if v < 0}
        req = ">= 0"
    else:
        bad = {v for v in value_tuple if v <= 0}
        req = "> 0"
    if bad:
        raise ValueError(error_msg + " including %s that does not satisfy the requirement `%s`."
                         % (bad, req))
    return value_tuple


def normalize_padding(value):
    if isinstance(value, (list, tuple)):
        return value
    padding = str(value).lower()
    if padding not in ("valid", "same", "causal"):
        raise ValueError('The `padding` argument must be a list/tuple or one of "valid", "same" '
                         '(or "causal", only for `Conv1D). Received: %s' % (padding,))
    return padding


def normalize_data_format(value):
    if value is None:
        value = backend.image_data_format()
    data_format = str(value).lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         '"channels_last". Received: %s' % (value,))
    return data_format


def conv_output_length(input_length, filter_size, padding, stride, dilation=1):
    """tf-keras' length arithmetic: same/causal ceil(n / s); valid
    ceil((n - dilated_k + 1) / s); None stays None."""
    if input_length is None:
        return None
    dilated = filter_size + (filter_size - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        length = input_length
    elif padding == "valid":
        length = input_length - dilated + 1
    elif padding == "full":
        length = input_length + dilated - 1
    else:
        raise ValueError("Unknown padding %r" % (padding,))
    return (length + stride - 1) // stride


def tf_data_format(data_format, ndim):
    """'channels_last' -> 'NWC'/'NHWC'; 'channels_first' -> 'NCW'/'NCHW'."""
    spatial = {3: "W", 4: "HW", 5: "DHW"}[ndim]
    return ("N" + spatial + "C") if data_format == "channels_last" else ("NC" + spatial)
